import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// Two versions of an app syncing one type during a rolling release — version 2 added `color` and an
/// indexed `rank` — editing the same objects in turn: no field is lost on either client or on the
/// server, and a migration that removes a field removes it; rows a client cannot read are reported,
/// skipped and read again once the app can.
@Suite struct SyncVersionsTests {
    let tmp = TemporaryDirectory("sync-versions")

    func store(_ name: String, _ type: any Persistable.Type, migrations: [Migration] = []) throws -> Store {
        try Store(
            at: tmp.url.appendingPathComponent(name), configuration: StoreConfiguration(durability: .noSync),
            types: [type], migrations: migrations)
    }

    /// The server row of note `id`, as JSON text.
    func row(_ server: SyncServer, _ id: Int) throws -> String {
        try psql(server, "SELECT data FROM lode.\"VersionedNote\" WHERE key = '\(id)'")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func twoVersionsEditingInTurnLoseNoField() throws {
        let server = try syncServer(for: [VersionedNoteV2.self])
        let newer = try store("v2", VersionedNoteV2.self)
        let older = try store("v1", VersionedNoteV1.self)
        var syncNewer = try startedClient(newer, server, [.type(VersionedNoteV2.self)])
        let syncOlder = try startedClient(older, server, [.type(VersionedNoteV1.self)])
        defer { syncOlder.stop() }
        try newer.write { tx in
            try tx.insert(VersionedNoteV2(id: 1, title: "one", color: "red", rank: 5))
            try tx.insert(VersionedNoteV2(id: 2, title: "two", color: "blue", rank: 7))
        }
        try syncNewer.synchronize()
        try syncOlder.synchronize()
        // The older version edits both, the one way and the other.
        try older.write { tx in
            try tx.update(VersionedNoteV1.self, key: 1) { $0.title = "one, by v1" }
            try tx.upsert(VersionedNoteV1(id: 2, title: "two, by v1"))
        }
        try syncOlder.synchronize()
        try syncNewer.synchronize()
        #expect(
            try newer.read { tx in try (1...2).map { try tx.object(VersionedNoteV2.self, key: $0) } } == [
                VersionedNoteV2(id: 1, title: "one, by v1", color: "red", rank: 5),
                VersionedNoteV2(id: 2, title: "two, by v1", color: "blue", rank: 7),
            ])
        #expect(try row(server, 1).contains(#""color": "red""#))
        #expect(try row(server, 2).contains(#""rank": 7"#))

        // The newer version changes a field the older does not know while the older edits the same
        // object offline: the older one's upload, which still carries the old color, leaves the
        // server's color alone.
        syncOlder.stop()
        try newer.write { tx in try tx.update(VersionedNoteV2.self, key: 1) { $0.color = "green" } }
        try syncNewer.synchronize()
        try older.write { tx in try tx.update(VersionedNoteV1.self, key: 1) { $0.title = "one, offline" } }
        let restarted = try startedClient(older, server, [.type(VersionedNoteV1.self)])
        defer { restarted.stop() }
        try restarted.synchronize()
        try syncNewer.synchronize()
        #expect(
            try newer.read { try $0.object(VersionedNoteV2.self, key: 1) }
                == VersionedNoteV2(id: 1, title: "one, offline", color: "green", rank: 5))
        // The older client keeps the field too, for its next upload.
        #expect(try older.read { try $0.object(VersionedNoteV1.self, key: 1) }?.title == "one, offline")
        #expect(try row(server, 1).contains(#""color": "green""#))

        // The newer version clears the color: gone everywhere, not brought back by the older one.
        try newer.write { tx in try tx.update(VersionedNoteV2.self, key: 1) { $0.color = nil } }
        try syncNewer.synchronize()
        try restarted.synchronize()
        try older.write { tx in try tx.update(VersionedNoteV1.self, key: 1) { $0.title = "one, again" } }
        try restarted.synchronize()
        try syncNewer.synchronize()
        #expect(
            try newer.read { try $0.object(VersionedNoteV2.self, key: 1) }
                == VersionedNoteV2(id: 1, title: "one, again", color: nil, rank: 5))
        #expect(try !row(server, 1).contains("color"))
        syncNewer.stop()

        // Version 3 removes `color` with a migration: the field leaves its store and, with the
        // records the migration rewrote, the server.
        let migration = Migration("remove color") { context in
            try context.removeField("color", from: "VersionedNote")
        }
        let v3 = try store("v2", VersionedNoteV3.self, migrations: [migration])
        syncNewer = try startedClient(v3, server, [.type(VersionedNoteV3.self)])
        defer { syncNewer.stop() }
        try syncNewer.synchronize()
        #expect(try !row(server, 2).contains("color"))
        #expect(try row(server, 2).contains(#""rank": 7"#))
        try v3.write { tx in try tx.update(VersionedNoteV3.self, key: 2) { $0.rank = 8 } }
        try syncNewer.synchronize()
        #expect(try !row(server, 2).contains("color"))
        #expect(try row(server, 2).contains(#""rank": 8"#))
    }

    @Test func aRowTheTypeCannotReadIsReportedSkippedAndReadAgainLater() throws {
        let server = try syncServer(for: [VersionedNoteV2.self])
        try psql(
            server,
            """
            INSERT INTO lode."VersionedNote" (key, data) VALUES
              ('1', '{"id": 1, "title": "fine", "rank": 1}'),
              ('2', '{"id": 2, "title": 17, "rank": 2}'),
              ('3', '{"id": 3, "title": "three", "rank": "high"}'),
              ('4', '{"id": 4, "title": "four", "rank": 4}'),
              ('6', '[6, "not an object"]'),
              ('7', '{"id": 7, "title": "seven", "rank": 1e400}'),
              ('8', jsonb_build_object('id', 8, 'title', repeat('long ', 600000), 'rank', 8))
            """)
        let client = try store("reader", VersionedNoteV2.self)
        var sync = try startedClient(client, server, [.type(VersionedNoteV2.self)])
        try sync.synchronize()
        // The rows it can read are in; the others are reported with their key and field.
        // A huge value is a value (3 MB of title): it is in.
        #expect(try client.read { try $0.count(VersionedNoteV2.self) } == 3)
        #expect(try client.read { try $0.object(VersionedNoteV2.self, key: 8) }?.title.count == 3_000_000)
        // Reported while they stay skipped, whatever rounds run after.
        try client.write { tx in try tx.insert(VersionedNoteV2(id: 5, title: "five", rank: 5)) }
        try sync.synchronize()
        #expect(sync.status.skippedRows == 4)
        let error = sync.status.lastError
        guard case .rowDoesNotDecode(let type, let key, let reason)? = error else {
            Issue.record("expected a row that does not decode, got \(String(describing: error))")
            sync.stop()
            return
        }
        // The last one skipped: key 7, whose rank (10^400) is no Int.
        #expect(type == "VersionedNote" && key == "7" && reason.contains("rank"), "\(reason)")
        sync.stop()
        client.close()

        // The app is updated (its type reads what the server has now): the skipped rows come in.
        try psql(
            server,
            #"UPDATE lode."VersionedNote" SET data = jsonb_set(data, '{title}', '"two"') WHERE key = '2'"#)
        let lenient = try store("reader", LenientNote.self)
        sync = try startedClient(lenient, server, [.type(LenientNote.self)])
        defer { sync.stop() }
        try sync.synchronize()
        #expect(try lenient.read { try $0.object(LenientNote.self, key: 3) }?.rank == "high")
        #expect(try lenient.read { try $0.count(LenientNote.self) } == 6)
        // Rows this version cannot read either stay skipped and reported: not an object, 10^400.
        #expect(sync.status.skippedRows == 2)
        guard case .rowDoesNotDecode(_, let lastKey, _)? = sync.status.lastError else {
            Issue.record(
                "expected a row that does not decode, got \(String(describing: sync.status.lastError))")
            return
        }
        #expect(["6", "7"].contains(lastKey))
    }
}

/// Version 3 of the note: `color` removed by a migration.
struct VersionedNoteV3: Persistable, Equatable {
    var id: Int
    var title: String
    var rank: Int
    static let schema = Schema<VersionedNoteV3>(
        name: "VersionedNote", primaryKey: \.id, indexes: [.on(\.rank)], version: 3)
}

/// A later app whose note takes any text for its rank.
struct LenientNote: Persistable, Equatable {
    var id: Int
    var title: String
    var rank: String
    static let schema = Schema<LenientNote>(name: "VersionedNote", primaryKey: \.id, version: 4)

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        if let number = try? container.decode(Int.self, forKey: .rank) {
            rank = String(number)
        } else {
            rank = try container.decode(String.self, forKey: .rank)
        }
    }
}
