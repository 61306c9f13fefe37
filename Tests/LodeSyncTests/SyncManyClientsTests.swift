import Foundation
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// Many clients, each with a store and a connection of its own, write at once — new objects and the
/// same shared ones — while they all sync: nothing is lost, every write reaches every client, and at
/// the end every store equals the server, whose shared objects hold the last write in its order.
/// (`lode-bench --only sync` runs fifty for the figures.)
@Suite struct SyncManyClientsTests {
    let tmp = TemporaryDirectory("sync-many")

    @Test func manyWritingClientsConverge() throws {
        let server = try syncServer(for: [SyncNote.self])
        let count = 12
        let writes = 15
        let stores = try (0..<count).map { index in
            try Store(
                at: tmp.url.appendingPathComponent("client-\(index)"),
                configuration: StoreConfiguration(durability: .noSync), types: [SyncNote.self])
        }
        let clients = try stores.map { try startedClient($0, server) }
        defer { for client in clients { client.stop() } }
        // Every client writes its own objects and overwrites the ten shared ones, all at once.
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            var random = SeededGenerator(seed: UInt64(index + 1))
            do {
                for write in 0..<writes {
                    try stores[index].write { tx in
                        try tx.insert(
                            SyncNote(
                                id: 1000 * (index + 1) + write, title: "c\(index) w\(write)",
                                owner: "c\(index)",
                                rank: write, done: false))
                        try tx.upsert(
                            SyncNote(
                                id: Int.random(in: 0..<10, using: &random),
                                title: "shared by c\(index) w\(write)",
                                owner: "c\(index)", rank: write, done: true))
                    }
                    Thread.sleep(forTimeInterval: Double.random(in: 0...0.01, using: &random))
                }
            } catch {
                failures.withLock { $0.append("client \(index): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        // Two rounds for each client: its own writes up, then everyone's down.
        for client in clients { try client.synchronize(timeout: .seconds(60)) }
        for client in clients { try client.synchronize(timeout: .seconds(60)) }
        let rows = try psql(
            server, #"SELECT key || '=' || (data->>'title') FROM lode."Note" WHERE NOT deleted ORDER BY key"#)
        let onServer = Set(rows.split(separator: "\n").map(String.init))
        #expect(onServer.count == count * writes + 10)
        for (index, store) in stores.enumerated() {
            let local = try store.read { tx in
                Set(try tx.objects(SyncNote.self).fetch().map { "\($0.id)=\($0.title)" })
            }
            #expect(local == onServer, "client \(index) differs from the server")
            #expect(
                clients[index].status.lastError == nil,
                "\(String(describing: clients[index].status.lastError))")
        }
    }
}
