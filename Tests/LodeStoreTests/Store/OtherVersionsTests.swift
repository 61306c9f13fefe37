import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Two versions of an app on one store, one after the other: version 2 of a type adds `color` and
/// an indexed `rank`; version 1 rewrites objects. No field version 1 does not know is lost, a field
/// a version knows and clears stays cleared, and version 2's index is kept and kept right.
@Suite struct OtherVersionsTests {
    let directory = TemporaryDirectory("other-versions")

    /// The top-level field names of the stored record of `id`.
    func storedFields(_ store: Store, type: String, id: Int) throws -> [String] {
        try store.read { tx in
            let records = try tx.recordsDatabase(of: type)
            guard let record = try tx.lmdb.get(try KeyEncoder().encode(id), in: records) else { return [] }
            return try record.withUnsafeBytes { try RecordNames.read($0)?.1 } ?? []
        }
    }

    /// The primary keys the index `name` of `type` lists under `rank`.
    func indexed(_ store: Store, type: String, index name: String, rank: Int) throws -> [[UInt8]] {
        try store.read { tx in
            let database = try tx.openDatabase("\(type).\(name)", kind: .duplicates)
            var keys: [[UInt8]] = []
            let key = IndexKeyLimit.stored(try KeyEncoder().encode(rank))
            try key.withUnsafeBytes { key in
                try tx.lmdb.forEachValue(forKey: key, in: database) { keys.append(Array($0)) }
            }
            return keys
        }
    }

    @Test func anOlderVersionKeepsTheFieldsAndIndexesOfANewerOne() throws {
        let url = directory.url.appendingPathComponent("codable")
        do {
            let v2 = try Store(at: url, types: [VersionedNoteV2.self])
            try v2.write { tx in
                try tx.insert(VersionedNoteV2(id: 1, title: "one", color: "red", rank: 5))
                try tx.insert(VersionedNoteV2(id: 2, title: "two", color: "blue", rank: 7))
                try tx.insert(VersionedNoteV2(id: 3, title: "three", color: "green", rank: 7))
            }
        }
        do {
            let v1 = try Store(at: url, types: [VersionedNoteV1.self])
            try v1.write { tx in
                try tx.update(VersionedNoteV1.self, key: 1) { $0.title = "one, edited by v1" }
                try tx.upsert(VersionedNoteV1(id: 2, title: "two, upserted by v1"))
                try tx.insert(VersionedNoteV1(id: 4, title: "four, new in v1"))
                #expect(try tx.delete(VersionedNoteV1.self, key: 3))
            }
            #expect(
                try v1.read { try $0.object(VersionedNoteV1.self, key: 2) }?.title == "two, upserted by v1")
            // Version 2's index stays, kept by version 1: a new object has the default rank.
            #expect(
                try indexed(v1, type: "VersionedNote", index: "rank", rank: 7) == [try KeyEncoder().encode(2)]
            )
            #expect(
                try indexed(v1, type: "VersionedNote", index: "rank", rank: 0) == [try KeyEncoder().encode(4)]
            )
            #expect(try v1.read { try $0.checkIntegrity() }.problems == [])
            #expect(try v1.read { try $0.catalogEntry(named: "VersionedNote") }?.version == 2)
        }
        let v2 = try Store(at: url, types: [VersionedNoteV2.self])
        let notes = try v2.read { tx in try (1...4).map { try tx.object(VersionedNoteV2.self, key: $0) } }
        #expect(
            notes == [
                VersionedNoteV2(id: 1, title: "one, edited by v1", color: "red", rank: 5),
                VersionedNoteV2(id: 2, title: "two, upserted by v1", color: "blue", rank: 7), nil,
                VersionedNoteV2(id: 4, title: "four, new in v1", color: nil, rank: 0),
            ])
        #expect(
            try indexed(v2, type: "VersionedNote", index: "rank", rank: 5) == [try KeyEncoder().encode(1)])
        #expect(try v2.read { try $0.checkIntegrity() }.problems == [])

        // A field version 2 clears stays cleared when version 1 writes the object again.
        try v2.write { tx in try tx.update(VersionedNoteV2.self, key: 1) { $0.color = nil } }
        #expect(try storedFields(v2, type: "VersionedNote", id: 1) == ["id", "title", "rank"])
    }

    @Test func aClearedFieldIsNotBroughtBack() throws {
        let url = directory.url.appendingPathComponent("cleared")
        do {
            let v2 = try Store(at: url, types: [VersionedNoteV2.self])
            try v2.write { tx in try tx.insert(VersionedNoteV2(id: 1, title: "one", color: "red", rank: 5)) }
            // Version 2 knows `color`: clearing it in an update removes it (not carried over).
            try v2.write { tx in try tx.update(VersionedNoteV2.self, key: 1) { $0.color = nil } }
            #expect(try v2.read { try $0.object(VersionedNoteV2.self, key: 1) }?.color == nil)
            try v2.write { tx in try tx.upsert(VersionedNoteV2(id: 1, title: "one", color: "red", rank: 5)) }
            try v2.write { tx in try tx.upsert(VersionedNoteV2(id: 1, title: "one", color: nil, rank: 5)) }
            #expect(try v2.read { try $0.object(VersionedNoteV2.self, key: 1) }?.color == nil)
        }
    }

    @Test func generatedModelsKeepTheFieldsOfANewerVersion() throws {
        let url = directory.url.appendingPathComponent("generated")
        do {
            let v2 = try Store(at: url, types: [GeneratedNoteV2.self])
            try v2.write { tx in
                try tx.insert(GeneratedNoteV2(id: 1, title: "one", color: "red", rank: 5))
                try tx.insert(GeneratedNoteV2(id: 2, title: "two", color: "blue", rank: 7))
            }
        }
        do {
            let v1 = try Store(at: url, types: [GeneratedNoteV1.self])
            try v1.write { tx in
                try tx.update(GeneratedNoteV1.self, key: 1, \.title) { $0 += ", edited" }
                try tx.upsert(GeneratedNoteV1(id: 2, title: "two, upserted"))
            }
            #expect(try v1.read { try $0.checkIntegrity() }.problems == [])
        }
        let v2 = try Store(at: url, types: [GeneratedNoteV2.self])
        let notes = try v2.read { tx in try (1...2).map { try tx.object(GeneratedNoteV2.self, key: $0) } }
        #expect(
            notes == [
                GeneratedNoteV2(id: 1, title: "one, edited", color: "red", rank: 5),
                GeneratedNoteV2(id: 2, title: "two, upserted", color: "blue", rank: 7),
            ])
        try v2.write { tx in try tx.update(GeneratedNoteV2.self, key: 2) { $0.color = nil } }
        #expect(try storedFields(v2, type: "GeneratedNote", id: 2) == ["id", "title", "rank"])
    }

    @Test func openingWithAnOlderVersionKeepsTheIndexesOfANewerOne() throws {
        let url = directory.url.appendingPathComponent("same-version")
        do {
            let v2 = try Store(at: url, types: [VersionedNoteV2.self])
            try v2.write { tx in try tx.insert(VersionedNoteV2(id: 1, title: "one", color: "red", rank: 5)) }
        }
        do {
            _ = try Store(at: url, types: [VersionedNoteV1.self])
        }
        let entry = try Store(at: url).read { try $0.catalogEntry(named: "VersionedNote") }
        #expect(entry?.indexes.map(\.name) == ["rank"])
    }
}
