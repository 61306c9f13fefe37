import Foundation
import ModelStorage
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

@Suite struct SyncTests {
    let tmp = TemporaryDirectory("sync")

    func store(
        _ name: String, _ types: [any Persistable.Type] = [SyncNote.self], encryption: StoreEncryption? = nil
    ) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name),
            configuration: StoreConfiguration(durability: .noSync, encryption: encryption), types: types)
    }

    /// With both stores plain, and with the first encrypted: the server gets the plain objects either
    /// way (the sync article says so), and the encrypted store's files show none of them.
    @Test(arguments: [false, true]) func twoStoresConvergeThroughTheServer(encrypted: Bool) throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a", encryption: encrypted ? .key(try StoreKey.random()) : nil)
        let b = try store("b")
        let syncA = try startedClient(a, server)
        let syncB = try startedClient(b, server)
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
        if encrypted {
            let directory = tmp.url.appendingPathComponent("a")
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let data = try Data(contentsOf: directory.appendingPathComponent(name))
                #expect(data.range(of: Data("changed on b".utf8)) == nil, "\(name)")
                #expect(data.range(of: Data("ann".utf8)) == nil, "\(name)")
            }
        }
    }

    @Test func aChangeMadeWithPsqlReachesTheStore() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let sync = try startedClient(a, server)
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
        let syncA = try startedClient(a, server, [.type(SyncHostile.self)])
        let syncB = try startedClient(b, server, [.type(SyncHostile.self)])
        defer {
            syncA.stop()
            syncB.stop()
        }
        let evil = "'); DELETE FROM lode.lode_clients; --"
        // COPY's text format's own characters (uploads go through COPY): tab, newline, backslash, \N, \.
        let copyKey = "a\tb\nc\\N\r\\."
        try a.write { tx in
            try tx.insert(SyncHostile(key: evil, value: "\"quoted\" \\ value"))
            try tx.insert(SyncHostile(key: copyKey, value: "\\.\n\t\\N\u{7F}é"))
        }
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
        #expect(try b.read { try $0.object(SyncHostile.self, key: copyKey) }?.value == "\\.\n\t\\N\u{7F}é")
        #expect(try psql(server, "SELECT count(*) FROM lode.lode_server") == "1\n")
        #expect(try psql(server, "SELECT count(*) FROM lode.lode_clients") == "2\n")
        #expect(
            try psql(
                server,
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'lode' AND tablename = 'Robert\"); DROP TABLE lode_server; --'"
            ) == "1\n")
    }
}

extension SyncTests {
    @Test func liveResultsSeeServerChangesAsExactChanges() throws {
        let server = try syncServer(for: [SyncNote.self])
        let b = try store("b")
        let sync = try startedClient(b, server)
        defer { sync.stop() }
        let recorder = LiveRecorder(b.objects(SyncNote.self).sorted(by: \.rank))
        defer { recorder.cancel() }
        var rng = SeededGenerator(seed: 0x5e1c)
        for round in 0..<40 {
            var statements: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let id = Int.random(in: 0..<25, using: &rng)
                let rank = Int.random(in: 0..<50, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    statements.append("DELETE FROM lode.\"Note\" WHERE key = '\(id)'")
                case 1:
                    statements.append(
                        "UPDATE lode.\"Note\" SET data = jsonb_set(data, '{rank}', '\(rank)') "
                            + "WHERE key = '\(id)' AND NOT deleted")
                default:
                    statements.append(
                        """
                        INSERT INTO lode."Note" (key, data) VALUES ('\(id)',
                          '{"id": \(id), "title": "r\(round)", "owner": "sql", "rank": \(rank), "done": false}')
                        ON CONFLICT (key) DO UPDATE SET data = excluded.data, deleted = false
                        """)
                }
            }
            try psql(server, "BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
            let expected = try psql(
                server,
                "SELECT coalesce(string_agg(key || ':' || (data->>'rank'), ',' ORDER BY (data->>'rank')::int, key::int), '') "
                    + "FROM lode.\"Note\" WHERE NOT deleted")
            try eventually("round \(round) reaches the live result") {
                let shown = recorder.rows.sorted { ($0.rank, $0.id) < ($1.rank, $1.id) }
                    .map { "\($0.id):\($0.rank)" }.joined(separator: ",")
                return shown + "\n" == expected
            }
        }
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(3))")
        #expect(recorder.rows == (try b.objects(SyncNote.self).sorted(by: \.rank).fetch()))
        #expect(recorder.updates > 10)
    }

    @Test func partialSyncKeepsOnlyTheRowsOfItsFilter() throws {
        let server = try syncServer(for: [SyncNote.self])
        let a = try store("a")
        let annOnly = SyncedType.type(SyncNote.self, filter: .field("owner", equals: "ann"))
        var sync = try SyncClient(store: a, server: server, types: [annOnly], options: testSyncOptions)
        sync.start()
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data) VALUES
              ('1', '{"id": 1, "title": "a1", "owner": "ann", "rank": 1, "done": false}'),
              ('2', '{"id": 2, "title": "b2", "owner": "bob", "rank": 2, "done": false}'),
              ('3', '{"id": 3, "title": "a3", "owner": "ann", "rank": 3, "done": false}')
            """)
        try sync.synchronize()
        func ids() throws -> [Int] { try a.read { try $0.objects(SyncNote.self).fetch().map(\.id) }.sorted() }
        #expect(try ids() == [1, 3])
        try psql(
            server, "UPDATE lode.\"Note\" SET data = jsonb_set(data, '{owner}', '\"bob\"') WHERE key = '1'")
        try psql(
            server, "UPDATE lode.\"Note\" SET data = jsonb_set(data, '{owner}', '\"ann\"') WHERE key = '2'")
        try sync.synchronize()
        #expect(try ids() == [2, 3])
        // A local object outside the filter goes up, and then leaves the store.
        try a.write { tx in
            try tx.insert(SyncNote(id: 9, title: "for bob", owner: "bob", rank: 9, done: false))
        }
        try sync.synchronize()
        try sync.synchronize()
        #expect(try ids() == [2, 3])
        #expect(try psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '9'") == "for bob\n")
        sync.stop()
        // A new filter: the rows of the old one leave, the new one's arrive.
        let bobOnly = SyncedType.type(SyncNote.self, filter: .field("owner", equals: "bob"))
        sync = try SyncClient(store: a, server: server, types: [bobOnly], options: testSyncOptions)
        sync.start()
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try ids() == [1, 9])
        #expect(sync.status.lastError == nil)
    }

    @Test func aMergeFunctionSettlesARaceWithTheServer() throws {
        let server = try syncServer(for: [SyncCounter.self])
        let a = try store("a", [SyncCounter.self])
        let b = try store("b", [SyncCounter.self])
        let union: @Sendable (SyncCounter, SyncCounter) -> SyncCounter = { local, server in
            var merged = server
            merged.count = max(local.count, server.count)
            merged.labels = Array(Set(local.labels).union(server.labels)).sorted()
            return merged
        }
        let types: [SyncedType] = [.type(SyncCounter.self, merge: union)]
        var syncA = try SyncClient(store: a, server: server, types: types, options: testSyncOptions)
        let syncB = try SyncClient(store: b, server: server, types: types, options: testSyncOptions)
        syncA.start()
        syncB.start()
        defer { syncB.stop() }
        let id = UUID()
        try a.write { tx in try tx.insert(SyncCounter(id: id, count: 1, labels: [])) }
        try syncA.synchronize()
        try syncB.synchronize()
        // A changes the counter while offline; B changes it on the server meanwhile.
        syncA.stop()
        try a.write { tx in try tx.update(SyncCounter.self, key: id) { $0.labels = ["from a"] } }
        try b.write { tx in
            try tx.update(SyncCounter.self, key: id) {
                $0.labels = ["from b"]
                $0.count = 5
            }
        }
        try syncB.synchronize()
        syncA = try SyncClient(store: a, server: server, types: types, options: testSyncOptions)
        syncA.start()
        defer { syncA.stop() }
        try syncA.synchronize()
        try syncB.synchronize()
        let expected = SyncCounter(id: id, count: 5, labels: ["from a", "from b"])
        #expect(try a.read { try $0.object(SyncCounter.self, key: id) } == expected)
        #expect(try b.read { try $0.object(SyncCounter.self, key: id) } == expected)
    }
}

extension SyncTests {
    @Test func theOutboxOutlivesTheChangeLogRetention() throws {
        let server = try syncServer(for: [SyncNote.self])
        // Entries older than no time at all may be pruned — but not those the upload cursor retains.
        let a = try Store(
            at: tmp.url.appendingPathComponent("a"),
            configuration: StoreConfiguration(durability: .noSync, changeLogRetention: .seconds(0)),
            types: [SyncNote.self])
        var sync = try SyncClient(
            store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        sync.start()
        try a.write { tx in try tx.insert(SyncNote(id: 0, title: "first", owner: "a", rank: 0, done: false)) }
        try sync.synchronize()
        sync.stop()
        let cursor = try a.read { tx in try tx.commits(after: 0).commits.last?.version ?? 0 }
        for id in 1...200 {
            try a.write { tx in
                try tx.insert(SyncNote(id: id, title: "offline", owner: "a", rank: id, done: false))
            }
        }
        // Pruning ran (every 64th version) and kept everything after the cursor.
        let history = try a.read { try $0.commits(after: cursor) }
        #expect(history.isComplete)
        #expect(history.commits.count >= 200)
        sync = try SyncClient(
            store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
        sync.start()
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try psql(server, "SELECT count(*) FROM lode.\"Note\"") == "201\n")
        // Once uploaded, the entries are no longer retained: the next prune removes them. (The client
        // is stopped first: a prune runs in a commit that writes a log entry whose version is a
        // multiple of 64, and while the client runs its own commits — uploads, cursors — take versions
        // between these writes and may take every multiple of 64 in the range: then no prune ran.)
        sync.stop()
        for id in 201...330 {
            try a.write { tx in
                try tx.upsert(SyncNote(id: id % 7, title: "again", owner: "a", rank: id, done: false))
            }
        }
        #expect(try a.read { try $0.commits(after: cursor) }.isComplete == false)
    }

    @Test func lodeDumpReadsAndChecksASyncedStore() throws {
        let server = try syncServer(for: [SyncNote.self])
        let path = tmp.url.appendingPathComponent("dumped").path
        do {
            let a = try Store(atPath: path, types: [SyncNote.self])
            let sync = try SyncClient(
                store: a, server: server, types: [.type(SyncNote.self)], options: testSyncOptions)
            sync.start()
            try a.write { tx in try tx.insert(SyncNote(id: 1, title: "one", owner: "a", rank: 1, done: false))
            }
            try sync.synchronize()
            // The first round uploaded the object; this one, begun after, downloads up to its version.
            try sync.synchronize()
            sync.stop()
            a.close()
        }
        let version = try psql(server, "SELECT version FROM lode.\"Note\" WHERE key = '1'")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let summary = try shell("\(builtTool("lode-dump")) \(path)")
        #expect(summary.status == 0, "\(summary.err)")
        #expect(summary.out.contains("Note: 1 objects"))
        let check = try shell("\(builtTool("lode-dump")) check \(path)")
        #expect(check.status == 0, "\(check.out) \(check.err)")
        // `lode-sync status` reads any synced store, read-only, whatever its types.
        let status = try shell("\(builtTool("lode-sync")) status \(path)")
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("server version downloaded: \(version)"), "\(status.out)")
        #expect(status.out.contains("Note: 1 object(s) known on the server"), "\(status.out)")
        #expect(!status.out.contains("Demo"))
        let never = try shell("\(builtTool("lode-sync")) status \(tmp.path)/missing")
        #expect(never.status == 1)
        let malformed = try shell("\(builtTool("lode-sync")) run")
        #expect(malformed.status == 2)
        #expect(
            malformed.err.contains("run needs a STORE") || malformed.err.contains("no server"),
            "\(malformed.err)")
    }
}
