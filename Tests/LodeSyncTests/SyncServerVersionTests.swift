import Foundation
import Synchronization
import Testing

@testable import LodeStore
@testable import LodeSync
@testable import LodeTestSupport

/// The server's versions come from transaction ids, not a clock row: a transaction that began
/// before another and commits after it must still be downloaded, an object's versions only grow, and
/// a server whose versions are above its transaction ids (the clock-row format, a dump restored into
/// a new cluster) is brought above them by the setup.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SyncServerVersionTests {
    let tmp = TemporaryDirectory()

    /// A store of notes named `name` in the test's directory.
    func makeStore(_ name: String) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
    }

    /// A transaction holding an id from before a committed row keeps that row back until it ends;
    /// its own rows, at lower versions, arrive then too: no commit is skipped.
    @Test func aTransactionBegunEarlierAndCommittedLaterIsNotSkipped() throws {
        let server = try syncServer(for: [SyncNote.self])
        let store = try makeStore("a")
        let sync = try startedClient(store, server)
        defer { sync.stop() }
        try sync.synchronize()

        let older = try PostgresConnection(connectionString: server.connectionString)
        defer { older.close() }
        try older.execute("BEGIN")
        try older.execute(
            "INSERT INTO lode.\"Note\" (key, data) VALUES ('1', '{\"id\":1,\"title\":\"older\",\"owner\":\"x\",\"rank\":1,\"done\":false}')"
        )
        // A later transaction commits first.
        try psql(
            server,
            "INSERT INTO lode.\"Note\" (key, data) VALUES ('2', '{\"id\":2,\"title\":\"newer\",\"owner\":\"x\",\"rank\":2,\"done\":false}')"
        )
        // The client waits for the older transaction: its sync does not end, and the newer row is
        // not applied before the older one can be (its cursor would pass the older row's version).
        let finished = Atomic<Bool>(false)
        let waiter = Thread {
            _ = try? sync.synchronize(timeout: .seconds(60))
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        waiter.start()
        Thread.sleep(forTimeInterval: 0.5)
        let endedEarly = finished.load(ordering: .sequentiallyConsistent)
        #expect(!endedEarly)
        #expect(try store.read { try $0.object(SyncNote.self, key: 2) } == nil)
        try older.execute("COMMIT")
        try eventually("the sync ends") { finished.load(ordering: .sequentiallyConsistent) }
        #expect(
            try store.read { try $0.objects(SyncNote.self).fetch().map(\.title).sorted() } == [
                "newer", "older",
            ])
        // The older transaction's row has the lower version, the newer's the higher.
        #expect(
            try psql(server, "SELECT string_agg(key, ',' ORDER BY version) FROM lode.\"Note\"") == "1,2\n")
    }

    /// An older transaction overwriting a row a newer one wrote gives it its own, lower version: the
    /// row's last write all the same. The client that uploaded the newer value (and holds its exact
    /// version) downloads the overwrite; another client, which never saw the newer value (it was above
    /// the horizon while the older transaction ran), downloads it too.
    @Test func anOlderTransactionsOverwriteReachesEveryClient() throws {
        let server = try syncServer(for: [SyncNote.self])
        let store = try makeStore("a")
        let other = try makeStore("b")
        let sync = try startedClient(store, server)
        let otherSync = try startedClient(other, server)
        defer {
            sync.stop()
            otherSync.stop()
        }
        let older = try PostgresConnection(connectionString: server.connectionString)
        defer { older.close() }
        try older.execute("BEGIN")
        // The older transaction takes its id before the client's upload takes one.
        try older.execute("SELECT pg_current_xact_id()")
        try store.write { tx in
            try tx.insert(SyncNote(id: 7, title: "from the client", owner: "a", rank: 1, done: false))
        }
        try eventually("the client's upload reaches the server") {
            try psql(server, "SELECT count(*) FROM lode.\"Note\"") == "1\n"
        }
        let uploaded = try psql(server, "SELECT version FROM lode.\"Note\" WHERE key = '7'")
        // The other client does not see the row while the older transaction runs.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try other.read { try $0.object(SyncNote.self, key: 7) } == nil)
        try older.execute(
            "UPDATE lode.\"Note\" SET data = jsonb_set(data, '{title}', '\"from an older transaction\"') WHERE key = '7'"
        )
        try older.execute("COMMIT")
        let overwritten = try psql(server, "SELECT version FROM lode.\"Note\" WHERE key = '7'")
        #expect(
            Int64(overwritten.trimmingCharacters(in: .whitespacesAndNewlines))!
                < Int64(uploaded.trimmingCharacters(in: .whitespacesAndNewlines))!)
        try sync.synchronize()
        try otherSync.synchronize()
        #expect(try store.read { try $0.object(SyncNote.self, key: 7) }?.title == "from an older transaction")
        #expect(try other.read { try $0.object(SyncNote.self, key: 7) }?.title == "from an older transaction")
        // The rows of one transaction share its version.
        try psql(
            server,
            "BEGIN; UPDATE lode.\"Note\" SET data = data WHERE key = '7'; "
                + "INSERT INTO lode.\"Note\" (key, data) VALUES ('8', '{\"id\":8,\"title\":\"t\",\"owner\":\"x\",\"rank\":8,\"done\":false}'); "
                + "UPDATE lode.\"Note\" SET data = data WHERE key = '7'; COMMIT")
        #expect(try psql(server, "SELECT count(DISTINCT version) FROM lode.\"Note\"") == "1\n")
    }

    /// A schema whose rows carry versions above the transaction ids (the clock-row format, or a dump
    /// restored into a new cluster): a client says to run the setup, and the setup bases the versions
    /// above them, so new writes reach clients whose cursors are there.
    @Test func versionsAboveTheTransactionIdsAreRebasedBySetUp() throws {
        let server = try syncServer(for: [SyncNote.self])
        let store = try makeStore("a")
        let high: Int64 = 5_000_000_000
        try psql(
            server,
            """
            ALTER TABLE lode."Note" DISABLE TRIGGER lode_stamp;
            INSERT INTO lode."Note" (key, data, version)
              VALUES ('1', '{"id":1,"title":"restored","owner":"x","rank":1,"done":false}', \(high));
            ALTER TABLE lode."Note" ENABLE TRIGGER lode_stamp;
            DROP TABLE lode.lode_server;
            CREATE TABLE lode.lode_clock (id integer PRIMARY KEY, version bigint NOT NULL);
            INSERT INTO lode.lode_clock VALUES (1, \(high));
            """)
        // A client that does not set the server up is told what to do.
        var options = testSyncOptions
        options.setsUpServer = false
        let refused = try SyncClient(
            store: store, server: server, types: [.type(SyncNote.self)], options: options)
        refused.start()
        try eventually("the client reports the old format") {
            refused.status.lastError?.description.contains("format 1") ?? false
        }
        refused.stop()
        try server.setUp(for: [SyncNote.self])
        #expect(try psql(server, "SELECT count(*) FROM pg_tables WHERE tablename = 'lode_clock'") == "0\n")
        let sync = try startedClient(store, server)
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try store.read { try $0.object(SyncNote.self, key: 1) }?.title == "restored")
        try psql(
            server,
            "INSERT INTO lode.\"Note\" (key, data) VALUES ('2', '{\"id\":2,\"title\":\"new\",\"owner\":\"x\",\"rank\":2,\"done\":false}')"
        )
        #expect(
            Int64(
                try psql(server, "SELECT version FROM lode.\"Note\" WHERE key = '2'").trimmingCharacters(
                    in: .whitespacesAndNewlines))! > high)
        try sync.synchronize()
        #expect(try store.read { try $0.object(SyncNote.self, key: 2) }?.title == "new")
        // The setup of an older Lode puts back a clock row and its stamp: this client says so
        // rather than read versions of another kind, and this version's setup undoes it.
        try psql(
            server,
            """
            CREATE TABLE lode.lode_clock (id integer PRIMARY KEY, version bigint NOT NULL);
            INSERT INTO lode.lode_clock VALUES (1, 0);
            CREATE OR REPLACE FUNCTION lode.lode_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE lode.lode_clock SET version = version + 1 WHERE id = 1 RETURNING version INTO NEW.version;
                RETURN NEW;
            END $$;
            """)
        sync.stop()
        let stale = try startedClient(store, server)
        try eventually("the client reports triggers of an older format") {
            stale.status.lastError?.description.contains("older one") ?? false
        }
        stale.stop()
        try server.setUp(for: [SyncNote.self])
        let again = try startedClient(store, server)
        defer { again.stop() }
        try psql(
            server,
            "INSERT INTO lode.\"Note\" (key, data) VALUES ('3', '{\"id\":3,\"title\":\"after\",\"owner\":\"x\",\"rank\":3,\"done\":false}')"
        )
        try again.synchronize()
        #expect(try store.read { try $0.object(SyncNote.self, key: 3) }?.title == "after")
        // Setting up again keeps the base.
        let base = try psql(server, "SELECT version_base FROM lode.lode_server")
        try server.setUp(for: [SyncNote.self])
        #expect(try psql(server, "SELECT version_base FROM lode.lode_server") == base)
    }

    /// New objects go up by COPY, in one version; a batch of "new" objects one of whose keys the
    /// server has (another client made it, or deleted it) goes the general way instead: nothing is
    /// half-copied, the rest arrive, and the existing key takes this client's object.
    @Test func newObjectsWhoseKeyTheServerHasGoUpTheGeneralWay() throws {
        let server = try syncServer(for: [SyncNote.self])
        let store = try makeStore("a")
        try store.write { tx in
            for id in 1...3 {
                try tx.insert(SyncNote(id: id, title: "new \(id)", owner: "a", rank: id, done: false))
            }
        }
        do {
            let sync = try startedClient(store, server)
            try sync.synchronize()
            sync.stop()
        }
        #expect(try psql(server, "SELECT count(DISTINCT version) FROM lode.\"Note\"") == "1\n")
        // Offline, the client makes three more; meanwhile the server gets one of those keys from
        // elsewhere, and a tombstone for another.
        try store.write { tx in
            for id in 4...6 {
                try tx.insert(SyncNote(id: id, title: "offline \(id)", owner: "a", rank: id, done: false))
            }
        }
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data) VALUES
              ('5', '{"id":5,"title":"from elsewhere","owner":"b","rank":5,"done":false}'),
              ('6', '{"id":6,"title":"deleted elsewhere","owner":"b","rank":6,"done":false}');
            DELETE FROM lode."Note" WHERE key = '6';
            """)
        let sync = try startedClient(store, server)
        defer { sync.stop() }
        try sync.synchronize()
        try sync.synchronize()
        #expect(
            try psql(
                server,
                "SELECT string_agg(key || ':' || (data->>'title') || ':' || deleted, ',' ORDER BY key) FROM lode.\"Note\""
            )
                == "1:new 1:false,2:new 2:false,3:new 3:false,4:offline 4:false,5:offline 5:false,6:offline 6:false\n"
        )
        #expect(try store.read { try $0.count(SyncNote.self) } == 6)
        #expect(sync.status.pendingUploads == 0)
        #expect(sync.status.lastError == nil)
    }

    /// A backlog larger than a batch goes up in several; an object a batch uploaded that changes
    /// before the last batch (below where the batches have got to) goes up again, and one deleted
    /// goes as a deletion.
    @Test func aBacklogOfSeveralBatchesMissesNoChangeMadeMeanwhile() throws {
        let server = try syncServer(for: [SyncNote.self])
        let store = try makeStore("a")
        try store.write { tx in
            for id in 1...60 {
                try tx.insert(SyncNote(id: id, title: "first \(id)", owner: "a", rank: id, done: false))
            }
        }
        var options = testSyncOptions
        options.uploadBatchSize = 7
        let sync = try SyncClient(
            store: store, server: server, types: [.type(SyncNote.self)], options: options)
        // After the server commits the second batch, the app changes an object the first uploaded
        // and deletes another (the engine's thread waits for this write: the next batch sees it).
        sync.engine.hooks.onServerCommit { batch in
            guard batch == 2 else { return }
            try store.write { tx in
                try tx.update(SyncNote.self, key: 3) { $0.title = "changed meanwhile" }
                _ = try tx.delete(SyncNote.self, key: 5)
            }
        }
        sync.start()
        defer { sync.stop() }
        try sync.synchronize()
        try sync.synchronize()
        #expect(try psql(server, "SELECT count(*) FROM lode.\"Note\" WHERE NOT deleted") == "59\n")
        #expect(
            try psql(server, "SELECT data->>'title' FROM lode.\"Note\" WHERE key = '3'")
                == "changed meanwhile\n")
        #expect(try psql(server, "SELECT deleted FROM lode.\"Note\" WHERE key = '5'") == "t\n")
        #expect(
            try psql(server, "SELECT count(*) FROM lode.lode_clients WHERE batch >= 9") == "1\n",
            "sixty objects in batches of seven, and the change")
        #expect(sync.status.pendingUploads == 0)
    }
}
