import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// Partial sync of a large table: a client that keeps 1% of the rows downloads them through the
/// filter's index — the plan PostgreSQL makes says so — and only them; later changes still reach it,
/// including rows that leave its part.
@Suite struct SyncPartialTests {
    let tmp = TemporaryDirectory("sync-partial")

    @Test func aFirstPartialDownloadReadsItsRowsThroughTheFilterIndex() throws {
        let server = try syncServer(for: [SyncNote.self])
        try server.setUp(for: [SyncNote.self], filterIndexes: [.field("owner", of: SyncNote.self)])
        let rows = 20_000
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data)
            SELECT i::text, jsonb_build_object('id', i, 'title', 'note ' || i, 'owner', 'owner' || (i % 100),
                'rank', i, 'done', false)
            FROM generate_series(1, \(rows)) AS i;
            ANALYZE lode."Note";
            """)
        let filter = SyncFilter.field("owner", equals: "owner7")
        let types: [SyncedType] = [.type(SyncNote.self, filter: filter)]

        // The plan of a first download's cursor, planned as the download plans it: the filter
        // index, never a scan of the whole table (nor the version index, in order, which a cursor
        // planned for its first rows would choose).
        let connection = try PostgresConnection(connectionString: server.connectionString)
        defer { connection.close() }
        func cursorPlan(_ query: String, _ parameters: [String?]) throws -> String {
            try connection.execute("BEGIN")
            defer { _ = try? connection.execute("ROLLBACK") }
            try connection.execute(SyncEngine.cursorPlanning)
            let plan = try connection.execute("EXPLAIN " + SyncEngine.declareCursor(query), parameters)
            return (0..<plan.rowCount).compactMap { plan.text($0, 0) }.joined(separator: "\n")
        }
        let (query, parameters) = SyncEngine.downloadQuery(
            types: types, schema: "lode", after: 0, upTo: Int64.max, fresh: [true])
        let text = try cursorPlan(query, parameters)
        #expect(text.contains("lode_filter_"), "\(text)")
        #expect(!text.contains("Seq Scan"), "\(text)")
        // A later download reads by version, through the version index.
        let (later, laterParameters) = SyncEngine.downloadQuery(
            types: types, schema: "lode", after: 20_000, upTo: Int64.max, fresh: [false])
        let laterText = try cursorPlan(later, laterParameters)
        #expect(laterText.contains("lode_version_"), "\(laterText)")
        #expect(!laterText.contains("Seq Scan"), "\(laterText)")

        // The client gets its 1% and nothing else, and follows changes in and out of its part.
        let store = try Store(
            at: tmp.url.appendingPathComponent("partial"),
            configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
        let sync = try startedClient(store, server, types)
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try store.read { try $0.count(SyncNote.self) } == rows / 100)
        #expect(
            try store.read { tx in try tx.objects(SyncNote.self).fetch().allSatisfy { $0.owner == "owner7" } }
        )
        try psql(
            server,
            """
            UPDATE lode."Note" SET data = jsonb_set(data, '{owner}', '"owner7"') WHERE key = '1';
            UPDATE lode."Note" SET data = jsonb_set(data, '{owner}', '"owner8"') WHERE key = '7';
            """)
        try sync.synchronize()
        #expect(try store.read { try $0.object(SyncNote.self, key: 1) }?.owner == "owner7")
        #expect(try store.read { try $0.object(SyncNote.self, key: 7) } == nil)
        #expect(try store.read { try $0.count(SyncNote.self) } == rows / 100)
    }

    @Test func aFilterIndexNeedsATypeSetUpAndAPath() throws {
        let server = SyncServer(connectionString: try testCluster().makeDatabase())
        #expect(throws: SyncError.self) {
            try server.setUp(for: [SyncNote.self], filterIndexes: [.field("owner", of: SyncCounter.self)])
        }
        #expect(throws: SyncError.self) {
            try server.setUp(for: [SyncNote.self], filterIndexes: [.init(type: "Note", path: [])])
        }
    }

    @Test func fieldNamesInFiltersAreText() throws {
        // A field name with quotes and backslashes is a name, in the filter and in its index.
        let name = #"it's a \"name\" \ "#
        #expect(FilterSQL.fieldExpression([name]) == #"(data -> E'it\'s a \\"name\\" \\ ')"#)
        #expect(FilterSQL.fieldExpression(["a", "b"]) == #"(data #> E'{"a","b"}'::text[])"#)
        let server = try syncServer(for: [SyncNote.self])
        try server.setUp(for: [SyncNote.self], filterIndexes: [.init(type: "Note", path: [name])])
        try psql(
            server,
            #"INSERT INTO lode."Note" (key, data) VALUES ('1', '{"id": 1, "title": "t", "owner": "o", "rank": 1, "done": false}')"#
        )
        let store = try Store(
            at: tmp.url.appendingPathComponent("names"),
            configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
        let sync = try startedClient(store, server, [.type(SyncNote.self, filter: .isNull([name]))])
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try store.read { try $0.count(SyncNote.self) } == 1)
    }
}
