import Foundation
import Testing

@testable import LodeQuery
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestSupport

/// A client's life as an app lives it: stopped in the background and started again, offline with
/// writes waiting, its state read by `lode-sync status`, its command line asked for help.
@Suite struct SyncLifecycleTests {
    let tmp = TemporaryDirectory("sync-lifecycle")

    func store(_ name: String) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
    }

    func note(_ id: Int) -> SyncNote {
        SyncNote(id: id, title: "n\(id)", owner: "ann", rank: id, done: false)
    }

    /// `start()` after `stop()` on the same client never synced again: the status stayed disconnected,
    /// `synchronize` timed out and later writes never reached the server.
    @Test func aStoppedClientStartsAgainAndSendsWhatWasWrittenMeanwhile() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let sync = try startedClient(a, server)
        defer { sync.stop() }
        try a.write { try $0.insert(note(1)) }
        try sync.synchronize()
        for id in 2...4 {
            sync.stop()
            #expect(!sync.status.isConnected)
            try a.write { try $0.insert(note(id)) }
            sync.start()
            sync.start()  // a second start while it runs changes nothing
            try sync.synchronize()
            #expect(sync.status.isConnected, "round \(id)")
            #expect(sync.status.pendingUploads == 0, "round \(id)")
            #expect(try psql(server, "SELECT count(*) FROM lode.\"Note\"") == "\(id)\n", "round \(id)")
        }
        // What the server changes comes down after a restart too, and the status stream follows the
        // new run.
        sync.stop()
        try psql(
            server,
            #"INSERT INTO lode."Note" (key, data) VALUES ('9', '{"id": 9, "title": "from SQL", "owner": "sql", "rank": 9, "done": false}')"#
        )
        sync.start()
        try eventually("the server's row arrives") {
            try a.read { try $0.object(SyncNote.self, key: 9) } != nil
        }
        #expect(sync.status.lastError == nil)
    }

    /// `pendingUploads` stayed 0 while writes waited for a server that was down: it counts them
    /// from the store while the server cannot be reached.
    @Test func writesMadeWhileTheServerIsDownAreCountedAsPending() throws {
        // A server nobody listens on: a Unix socket directory with no socket.
        let server = SyncServer(
            connectionString: "host=\(tmp.path) port=1 dbname=none user=none connect_timeout=1")
        let a = try store("offline")
        let sync = try startedClient(a, server)
        defer { sync.stop() }
        try eventually("the first attempt fails") { sync.status.lastError != nil }
        for id in 1...500 { try a.write { try $0.insert(note(id)) } }
        try eventually(timeout: .seconds(30), "all 500 are counted") { sync.status.pendingUploads == 500 }
        try a.write { tx in
            try tx.delete(SyncNote.self, key: 1)  // never uploaded: nothing to send for it
            try tx.update(SyncNote.self, key: 2) { $0.title = "edited offline" }  // still one object
        }
        try eventually(timeout: .seconds(30), "the count follows") { sync.status.pendingUploads == 499 }
        #expect(!sync.status.isConnected)
        // The command-line status says the same from the store alone.
        sync.stop()
        let status = try shell(
            "\(builtTool("lode-sync")) status \(tmp.url.appendingPathComponent("offline").path)")
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("objects waiting to upload: 499"), "\(status.out)")
    }

    /// After a `synchronize()` that returned, `lode-sync status` said "local version uploaded: 2331 of
    /// 2334": it now says what waits, in objects.
    @Test func statusSaysHowManyObjectsWaitNotVersions() throws {
        let server = try syncServer(for: [SyncNote.self])
        let path = tmp.url.appendingPathComponent("synced")
        let a = try store("synced")
        let sync = try startedClient(a, server)
        try a.write { tx in for id in 1...30 { try tx.insert(note(id)) } }
        try sync.synchronize()
        sync.stop()
        let synced = try shell("\(builtTool("lode-sync")) status \(path.path)")
        #expect(synced.status == 0, "\(synced.err)")
        #expect(synced.out.contains("objects waiting to upload: 0"), "\(synced.out)")
        #expect(!synced.out.contains("version uploaded"), "\(synced.out)")
        try a.write { tx in
            try tx.update(SyncNote.self, key: 3) { $0.rank = 300 }
            try tx.update(SyncNote.self, key: 3) { $0.rank = 301 }
            try tx.delete(SyncNote.self, key: 4)
            try tx.insert(note(31))
        }
        // An edit undone before the next sync leaves nothing to send for its object.
        try a.write { tx in try tx.update(SyncNote.self, key: 5) { $0.rank = 500 } }
        try a.write { tx in try tx.update(SyncNote.self, key: 5) { $0.rank = 5 } }
        let waiting = try shell("\(builtTool("lode-sync")) status \(path.path)")
        #expect(waiting.out.contains("objects waiting to upload: 3"), "\(waiting.out)")
    }

    /// `--help` and `-h` print the usage and succeed, as every tool does; a malformed command line
    /// still fails with 2.
    @Test func helpIsASuccessForEveryTool() throws {
        for tool in ["lode-sync", "lode-dump", "lode-demo"] {
            for flag in ["--help", "-h"] {
                let result = try shell("\(builtTool(tool)) \(flag)")
                #expect(result.status == 0, "\(tool) \(flag): \(result.err)")
                #expect(result.out.hasPrefix("usage: \(tool)"), "\(tool) \(flag): \(result.out)")
                #expect(result.err.isEmpty, "\(tool) \(flag): \(result.err)")
            }
        }
        let wrong = try shell("\(builtTool("lode-sync")) frobnicate")
        #expect(wrong.status == 2)
        #expect(wrong.err.contains("unknown command \"frobnicate\""), "\(wrong.err)")
    }
}

/// The test servers' own hygiene: a PostgreSQL started for a test holds no descriptor of the test
/// process. One did (every pipe open at the moment `pg_ctl` ran, inherited by the server for its
/// life), and a test reading another tool's output to its end waited for ever: a CI run stalled.
@Suite struct TestServerDescriptorTests {
    @Test func aTestServerHoldsNoPipeOfTheTests() throws {
        let pipe = Pipe()
        defer {
            try? pipe.fileHandleForReading.close()
            try? pipe.fileHandleForWriting.close()
        }
        let cluster = try PostgresTestCluster()
        let pidFile = cluster.directory.appendingPathComponent("data/postmaster.pid")
        let pid = try String(contentsOf: pidFile, encoding: .utf8).split(separator: "\n").first.map(
            String.init)
        let server = try #require(pid)
        let mine = Set(
            [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor].compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
            })
        #expect(mine.count == 1, "\(mine)")
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server)/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(server)/fd/\($0)")
        }
        #expect(held.filter { mine.contains($0) }.isEmpty, "the server holds \(mine)")
    }
}
