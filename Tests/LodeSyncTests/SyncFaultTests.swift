import Foundation
import ModelStorage
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// Faults between a client and its server: a lost answer, a server that is down or restarts.
@Suite struct SyncFaultTests {
    let tmp = TemporaryDirectory("sync-faults")

    func store(_ name: String) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
    }

    @Test func aBatchWhoseAnswerWasLostIsNotAppliedTwice() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let b = try store("b")
        let syncA = try SyncClient(
            store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        let syncB = try SyncClient(
            store: b, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        // The first answer to A's batch is lost; B writes the same object after A's batch committed.
        let lost = Mutex(false)
        let bWrote = DispatchSemaphore(value: 0)
        syncA.engine.hooks.onServerCommit { _ in
            guard
                lost.withLock({ lost in
                    defer { lost = true }
                    return !lost
                })
            else { return }
            try b.write { tx in
                try tx.upsert(SyncNote(id: 1, title: "b, after a", owner: "b", rank: 2, done: false))
            }
            syncB.syncNow()
            bWrote.wait()
            throw SyncError.connectionLost("the answer was lost (test)")
        }
        syncB.start()
        defer { syncB.stop() }
        let bUploaded = Mutex(false)
        let watcher = Thread {
            while !bUploaded.withLock({ $0 }) {
                if (try? psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '1'"))
                    == "b, after a\n"
                {
                    bUploaded.withLock { $0 = true }
                    bWrote.signal()
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        watcher.start()
        try a.write { tx in try tx.insert(SyncNote(id: 1, title: "a", owner: "a", rank: 1, done: false)) }
        syncA.start()
        defer { syncA.stop() }
        try syncA.synchronize()
        try syncB.synchronize()
        try syncA.synchronize()
        // A sent its batch again; the server recognized it, so B's later write stands everywhere.
        #expect(lost.withLock { $0 })
        #expect(
            try psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '1'") == "b, after a\n")
        #expect(try a.read { try $0.object(SyncNote.self, key: 1) }?.title == "b, after a")
        #expect(
            try psql(server, "SELECT batch FROM lode.lode_clients WHERE client_id = '\(syncA.clientID)'")
                == "1\n")
    }

    @Test func writesMadeWhileTheServerIsDownGoUpWhenItReturns() throws {
        let cluster = try PostgresTestCluster()
        let server = SyncServer(connectionString: try cluster.makeDatabase())
        try server.setUp(for: [SyncNote.self])
        let a = try store("a")
        let b = try store("b")
        let syncA = try startedClient(a, server)
        let syncB = try startedClient(b, server)
        defer {
            syncA.stop()
            syncB.stop()
        }
        try a.write { tx in try tx.insert(SyncNote(id: 1, title: "before", owner: "a", rank: 1, done: false))
        }
        try syncA.synchronize()
        try cluster.stop()
        for id in 2...30 {
            try a.write { tx in
                try tx.insert(SyncNote(id: id, title: "offline", owner: "a", rank: id, done: false))
            }
        }
        try eventually("A notices the server is gone") {
            !syncA.status.isConnected && syncA.status.lastError != nil
        }
        #expect(syncA.status.lastError?.isConnectionError == true)
        #expect(throws: SyncError.self) { try syncA.synchronize(timeout: .milliseconds(300)) }
        try cluster.start()
        try syncA.synchronize()
        try syncB.synchronize()
        #expect(try b.read { try $0.objects(SyncNote.self).fetch().count } == 30)
        #expect(syncA.status.isConnected)
        #expect(syncA.status.pendingUploads == 0)
        #expect(
            try cluster.psql(
                "SELECT count(*) FROM lode.\"Note\"",
                database: PostgresTestCluster.database(of: server.connectionString)) == "30\n")
    }
}

extension SyncFaultTests {
    @Test func aStoreRestoredFromAnOlderCopyStillUploadsItsNewWrites() throws {
        let server = try syncServer(for: [SyncNote.self])
        let live = tmp.url.appendingPathComponent("live")
        let backup = tmp.url.appendingPathComponent("backup")
        do {
            let store = try Store(
                at: live, configuration: StoreConfiguration(durability: .noSync), types: [SyncNote.self])
            let sync = try startedClient(store, server)
            try store.write { tx in
                try tx.insert(SyncNote(id: 1, title: "one", owner: "a", rank: 1, done: false))
            }
            try sync.synchronize()
            sync.stop()
            store.close()
            try FileManager.default.copyItem(at: live, to: backup)
        }
        do {
            let store = try Store(
                at: live, configuration: StoreConfiguration(durability: .noSync), types: [SyncNote.self])
            let sync = try startedClient(store, server)
            for id in 2...3 {
                try store.write { tx in
                    try tx.insert(SyncNote(id: id, title: "later", owner: "a", rank: id, done: false))
                }
                try sync.synchronize()
            }
            sync.stop()
            store.close()
        }
        // The backup's sync state is behind the server's record of this client: its next batch number
        // was used already. Its new write must still reach the server.
        let restored = try Store(
            at: backup, configuration: StoreConfiguration(durability: .noSync), types: [SyncNote.self])
        let sync = try startedClient(restored, server)
        defer { sync.stop() }
        try restored.write { tx in
            try tx.insert(SyncNote(id: 9, title: "after the restore", owner: "a", rank: 9, done: false))
        }
        try sync.synchronize()
        try sync.synchronize()
        #expect(
            try psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '9'")
                == "after the restore\n")
        #expect(
            try restored.read { try $0.objects(SyncNote.self).fetch().map(\.id).sorted() } == [1, 2, 3, 9])
    }
}
