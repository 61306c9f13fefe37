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

/// What a user of a client sees: their own writes never flicker, links arrive with their objects,
/// status as a sequence, the command-line runner stopping cleanly.
@Suite struct SyncBehaviourTests {
    let tmp = TemporaryDirectory("sync-behaviour")

    func store(_ name: String, _ types: [any Persistable.Type] = [SyncNote.self]) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: types)
    }

    @Test func aLocalWriteNotYetUploadedNeverVanishesAndWins() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let b = try store("b")
        var syncA = try startedClient(a, server)
        let syncB = try startedClient(b, server)
        defer { syncB.stop() }
        try a.write { tx in try tx.insert(SyncNote(id: 1, title: "first", owner: "a", rank: 1, done: false)) }
        try syncA.synchronize()
        try syncB.synchronize()
        // A edits offline while B's edit of the same object reaches the server.
        syncA.stop()
        try a.write { tx in try tx.update(SyncNote.self, key: 1) { $0.title = "mine, offline" } }
        try b.write { tx in try tx.update(SyncNote.self, key: 1) { $0.title = "theirs" } }
        try syncB.synchronize()
        let recorder = LiveRecorder(a.objects(SyncNote.self))
        defer { recorder.cancel() }
        let seen = Mutex<Set<String>>([])
        let token = a.objects(SyncNote.self).observe { change in
            if case .update(let results, _) = change, let titles = try? results.fetch().map(\.title) {
                seen.withLock { $0.formUnion(titles) }
            }
        }
        defer { token.cancel() }
        syncA = try startedClient(a, server)
        defer { syncA.stop() }
        try syncA.synchronize()
        try syncB.synchronize()
        // A never showed B's title: its own write stayed, went up after B's, and won everywhere.
        #expect(!seen.withLock { $0 }.contains("theirs"))
        #expect(try a.read { try $0.object(SyncNote.self, key: 1) }?.title == "mine, offline")
        #expect(try b.read { try $0.object(SyncNote.self, key: 1) }?.title == "mine, offline")
        #expect(recorder.failures.isEmpty, "\(recorder.failures)")
    }

    @Test func linkedObjectsSyncWithTheirLinksAndDeleteRules() throws {
        let types: [any Persistable.Type] = [SyncProject.self, SyncTask.self]
        let synced: [SyncedType] = [.type(SyncProject.self), .type(SyncTask.self)]
        let server = try syncServer(for: types)
        let a = try store("a", types)
        let b = try store("b", types)
        let syncA = try startedClient(a, server, synced)
        let syncB = try startedClient(b, server, synced)
        defer {
            syncA.stop()
            syncB.stop()
        }
        try a.write { tx in
            let garden = SyncProject(id: 1, name: "Garden")
            try tx.insert(garden)
            try tx.insert(SyncProject(id: 2, name: "House"))
            for id in 1...4 { try tx.insert(SyncTask(id: id, title: "dig \(id)", project: Link(garden))) }
            try tx.insert(SyncTask(id: 5, title: "paint", project: Link(key: 2)))
        }
        try syncA.synchronize()
        try syncB.synchronize()
        #expect(
            try b.read { tx in
                try tx.count(SyncTask.self, linkingTo: Link<SyncProject>(key: 1), via: \SyncTask.project)
            } == 4)
        #expect(
            try b.read { tx in try tx.resolve(try tx.object(SyncTask.self, key: 5)!.project!) }.name
                == "House")
        // On the server the link is the project's key.
        #expect(try psql(server, "SELECT data->'project' FROM lode.\"Task\" WHERE key = '5'") == "2\n")
        // Deleting the project on A cascades there; the deletions reach B, which is left consistent.
        try a.write { tx in _ = try tx.delete(SyncProject.self, key: 1) }
        try syncA.synchronize()
        try syncB.synchronize()
        #expect(try b.read { try $0.objects(SyncTask.self).fetch().map(\.id) } == [5])
        #expect(try b.read { try $0.checkIntegrity() }.problems.isEmpty)
        #expect(try psql(server, "SELECT count(*) FROM lode.\"Task\" WHERE deleted") == "4\n")
    }

    @Test func statusArrivesAsASequenceWithTheFirstDownloadsProgress() async throws {
        let server = try syncServer(for: [SyncNote.self])
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data)
            SELECT i::text, jsonb_build_object('id', i, 'title', 'n' || i, 'owner', 'sql', 'rank', i, 'done', false)
            FROM generate_series(1, 3000) AS i
            """)
        #expect(!"\(server)".contains("host="), "the description shows the connection string")
        let a = try store("a")
        var options = testSyncOptions
        options.downloadChunkSize = 500
        let sync = try SyncClient(store: a, server: server, types: [.type(SyncNote.self)], options: options)
        let updates = sync.statusUpdates  // subscribed before the client starts
        // On an executor of its own: a collector starved by the pool would see the stream drop older
        // statuses (it keeps the newest 64) and miss the download's progress.
        let collected = _Concurrency.Task(executorPreference: DedicatedExecutor("status")) {
            var statuses: [SyncStatus] = []
            for await status in updates {
                statuses.append(status)
                if status.lastServerVersion > 0 && status.download == nil && status.isConnected { break }
            }
            return statuses
        }
        sync.start()
        defer { sync.stop() }
        // The deadline bounds a hang, not the speed: 3,000 rows under ThreadSanitizer, beside the other
        // suites on two cores, took longer than the default 30 seconds (CI, 2026-12-07).
        try await sync.synchronize(timeout: .seconds(240))
        let statuses = await collected.value
        #expect(statuses.first?.isConnected == false)
        #expect(statuses.contains { $0.isConnected })
        let progress = statuses.compactMap(\.download)
        #expect(progress.contains { $0.total == 3000 && $0.applied > 0 && $0.applied < 3000 }, "\(progress)")
        let stored = try await a.read { try $0.objects(SyncNote.self).fetch().count }
        #expect(stored == 3000)
    }

    @Test func theCommandLineRunnerStopsCleanlyOnCtrlC() throws {
        let server = SyncServer(connectionString: try testCluster().makeDatabase())
        let tool = builtTool("lode-sync")
        let environment = "LODE_SYNC_SERVER='\(server.connectionString)'"
        let setup = try shell("\(environment) \(tool) setup")
        #expect(setup.status == 0, "\(setup.err)")
        #expect(setup.out == "set up 2 type(s) in schema lode\n")
        let indexed = try shell("\(environment) \(tool) setup --index DemoTask.status")
        #expect(indexed.out == "set up 2 type(s) in schema lode with 1 filter index(es)\n", "\(indexed.err)")
        let wrong = try shell("\(environment) \(tool) setup --index Nothing.status")
        #expect(wrong.status == 2 && wrong.err.contains("does not name a synced type"), "\(wrong.err)")
        let path = tmp.url.appendingPathComponent("demo").path
        let output = tmp.url.appendingPathComponent("run.out").path
        // Interrupted a second after it started: it stops the client, closes the store, exits 0.
        let run = try shell(
            "\(environment) \(tool) run \(path) > \(output) 2>&1 & pid=$!; sleep 2; kill -INT $pid; wait $pid"
        )
        let printed = try String(contentsOfFile: output, encoding: .utf8)
        #expect(run.status == 0, "\(printed)")
        #expect(printed.contains("connected · pending uploads 0"), "\(printed)")
        #expect(printed.hasSuffix("stopping\n"), "\(printed)")
        #expect(!printed.contains(server.connectionString))
        let once = try shell("\(environment) \(tool) run \(path) --once")
        #expect(once.status == 0, "\(once.err)")
        let unreachable = try shell(
            "LODE_SYNC_SERVER='host=/nonexistent port=1' \(tool) run \(path) --once --timeout 2")
        #expect(unreachable.status == 1)
        #expect(unreachable.err.contains("could not connect"), "\(unreachable.err)")
    }
}
