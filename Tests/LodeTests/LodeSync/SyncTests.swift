import Foundation
import Lode
import LodeSync
import LodeTestSupport
import Testing

@Suite struct SyncTests {
    let tmp = TemporaryDirectory("sync")

    func store(_ name: String, _ types: [any Persistable.Type] = [SyncNote.self]) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: types)
    }

    @Test func twoStoresConvergeThroughTheServer() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let b = try store("b")
        let syncA = try SyncClient(
            store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        let syncB = try SyncClient(
            store: b, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        syncA.start()
        syncB.start()
        defer {
            syncA.stop()
            syncB.stop()
        }
        try a.write { tx in
            for id in 1...20 {
                try tx.insert(SyncNote(id: id, title: "n\(id)", owner: "ann", rank: id, done: false))
            }
        }
        try syncA.synchronize()
        try syncB.synchronize()
        #expect(try b.read { try $0.objects(SyncNote.self).fetch() }.count == 20)
        try b.write { tx in
            try tx.update(SyncNote.self, key: 3) { $0.title = "changed on b" }
            try tx.delete(SyncNote.self, key: 4)
        }
        try syncB.synchronize()
        try syncA.synchronize()
        #expect(try a.read { try $0.object(SyncNote.self, key: 3) }?.title == "changed on b")
        #expect(try a.read { try $0.object(SyncNote.self, key: 4) } == nil)
        #expect(
            try psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '3'") == "changed on b\n")
        #expect(try psql(server, "SELECT deleted FROM lode.\"Note\" WHERE key = '4'") == "t\n")
        #expect(syncA.status.pendingUploads == 0)
        #expect(syncA.status.lastError == nil)
    }

    @Test func aChangeMadeWithPsqlReachesTheStore() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let sync = try SyncClient(
            store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        sync.start()
        defer { sync.stop() }
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data) VALUES
              ('7', '{"id": 7, "title": "from SQL", "owner": "sql", "rank": 1, "done": false}'),
              ('8', '{"title": "no id in data", "owner": "sql", "rank": 2, "done": true}')
            """)
        try eventually("the rows arrive") { try a.read { try $0.objects(SyncNote.self).fetch().count } == 2 }
        #expect(try a.read { try $0.object(SyncNote.self, key: 8) }?.title == "no id in data")
        try psql(server, "DELETE FROM lode.\"Note\" WHERE key = '7'")
        try eventually("the delete arrives") { try a.read { try $0.object(SyncNote.self, key: 7) } == nil }
        #expect(try psql(server, "SELECT count(*) FROM lode.\"Note\" WHERE deleted") == "1\n")
    }

    @Test func setUpIsIdempotentAndTreatsAHostileTypeNameAsAName() throws {
        let server = try syncServer(for: [SyncHostile.self, SyncNote.self])
        try server.setUp(for: [SyncHostile.self, SyncNote.self])
        let a = try store("a", [SyncHostile.self])
        let b = try store("b", [SyncHostile.self])
        let syncA = try SyncClient(
            store: a, server: server, types: [.type(SyncHostile.self)], options: testSyncOptions)
        let syncB = try SyncClient(
            store: b, server: server, types: [.type(SyncHostile.self)], options: testSyncOptions)
        syncA.start()
        syncB.start()
        defer {
            syncA.stop()
            syncB.stop()
        }
        let evil = "'); DELETE FROM lode.lode_clients; --"
        try a.write { tx in try tx.insert(SyncHostile(key: evil, value: "\"quoted\" \\ value")) }
        try b.write { tx in
            try tx.insert(SyncHostile(key: "plain", value: "'; TRUNCATE lode.lode_clients; --"))
        }
        try syncA.synchronize()
        try syncB.synchronize()
        try syncA.synchronize()
        #expect(
            try a.read { try $0.object(SyncHostile.self, key: "plain") }?.value
                == "'; TRUNCATE lode.lode_clients; --")
        #expect(try b.read { try $0.object(SyncHostile.self, key: evil) }?.value == "\"quoted\" \\ value")
        #expect(try psql(server, "SELECT count(*) FROM lode.lode_clock") == "1\n")
        #expect(try psql(server, "SELECT count(*) FROM lode.lode_clients") == "2\n")
        #expect(
            try psql(
                server,
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'lode' AND tablename = 'Robert\"); DROP TABLE lode_clock; --'"
            ) == "1\n")
    }
}
