import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// Version 1 of an app's note: a hand-written schema and `Codable`, as apps wrote before the macro.
struct NoteV1: Persistable, Equatable {
    var id: Int
    var text: String
    static let schema = Schema<NoteV1>(name: "Note", primaryKey: \.id)
}

/// Version 2: a model of the macro with a field with a default, an indexed one and an optional one.
@Model(name: "Note", version: 2)
struct Note: Equatable {
    @PrimaryKey var id: Int
    var text: String
    @Indexed var rank: Int = 0
    var color: String?
}

/// Generated models on real stores: two app versions on one store, the generated codec and
/// `Codable` reading each other's records, field readers over records of older versions.
@Suite struct ModelStoreTests {
    let directory = TemporaryDirectory("models")

    /// Expects each of `reads` to throw `recordDoesNotDecode` for the note stored under `key`, at
    /// `field`, with a reason `reason` accepts.
    func expectEveryRead(
        _ reads: [() throws -> Void], toRefuseNote key: String, field: String, _ reason: (String) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for read in reads {
            #expect(sourceLocation: sourceLocation) {
                try read()
            } throws: { error in
                guard case .recordDoesNotDecode(let type, let named, let at, let why)? = error as? LodeError
                else { return false }
                return type == "Note" && named == key && at == field && reason(why)
            }
        }
    }

    @Test func twoAppVersionsShareAStore() throws {
        let url = directory.url
        do {
            let store = try Store(at: url, types: [NoteV1.self])
            try store.write { tx in
                for id in 1...3 { try tx.insert(NoteV1(id: id, text: "note \(id)")) }
            }
            store.close()
        }
        do {
            // Version 2 reads version 1's records with the default and nil, and builds its index.
            let store = try Store(at: url, types: [Note.self])
            let notes = try store.objects(Note.self).fetch()
            #expect(notes == (1...3).map { Note(id: $0, text: "note \($0)", rank: 0, color: nil) })
            #expect(try store.objects(Note.self).values(of: \.rank) == [0, 0, 0])
            #expect(
                try store.objects(Note.self).values(of: \.text, \.color).map(\.0) == [
                    "note 1", "note 2", "note 3",
                ])
            try store.write { tx in
                try tx.insert(Note(id: 4, text: "four", rank: 5, color: "red"))
                try tx.update(Note.self, key: 2) { $0.rank = 7 }
            }
            let ranked = try store.objects(Note.self).filter(#Predicate { $0.rank >= 5 }).sorted(by: \.rank)
                .fetch()
            #expect(ranked.map(\.id) == [4, 2])
            #expect(try store.read { try $0.checkIntegrity() }.problems == [])
            store.close()
        }
        do {
            // Version 1 reads what version 2 wrote (the fields it does not know are skipped).
            let store = try Store(at: url, types: [NoteV1.self])
            let notes = try store.objects(NoteV1.self).fetch()
            #expect(notes.map(\.text) == ["note 1", "note 2", "note 3", "four"])
            store.close()
        }
    }

    @Test func aRecordWrittenByEitherCodecReadsThroughTheOther() throws {
        let url = directory.url
        do {
            let store = try Store(at: url, types: [Note.self])
            try store.write { tx in try tx.insert(Note(id: 1, text: "generated", rank: 3, color: "blue")) }
            store.close()
        }
        // The same fields through Codable: a hand-written type with version 2's shape.
        struct CodableNote: Persistable, Equatable {
            var id: Int
            var text: String
            var rank: Int
            var color: String?
            static let schema = Schema<CodableNote>(
                name: "Note", primaryKey: \.id, indexes: [.on(\.rank)], version: 2)
        }
        do {
            let store = try Store(at: url, types: [CodableNote.self])
            #expect(
                try store.read { try $0.object(CodableNote.self, key: 1) }
                    == CodableNote(id: 1, text: "generated", rank: 3, color: "blue"))
            try store.write { tx in try tx.insert(CodableNote(id: 2, text: "codable", rank: 1, color: nil)) }
            store.close()
        }
        let store = try Store(at: url, types: [Note.self])
        #expect(try store.read { try $0.object(Note.self, key: 2) } == Note(id: 2, text: "codable", rank: 1))
        // Byte for byte the same record either way.
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Note", create: false)
        let stored = try environment.read { try $0.get(try KeyEncoder().encode(2), in: records) }
        #expect(stored == (try Note(id: 2, text: "codable", rank: 1).encodeRecord().bytes))
    }

    @Test func aFieldReadAloneThatDoesNotDecodeNamesTheRecord() throws {
        let url = directory.url
        let store = try Store(at: url, types: [Note.self])
        try store.write { tx in for id in 1...3 { try tx.insert(Note(id: id, text: "n\(id)")) } }
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Note", create: false)
        let damaged = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(2)), .init(key: .text("text"), value: .text("n2")),
            .init(key: .text("rank"), value: .text("high")),
        ]).encoded
        try environment.write { try $0.put(damaged, forKey: try KeyEncoder().encode(2), in: records) }
        expectEveryRead(
            [
                { _ = try store.objects(Note.self).values(of: \.rank) },
                { _ = try store.objects(Note.self).fetch() },
            ],
            toRefuseNote: "2", field: "rank", { $0 == "expected Int, found text" })
        #expect(try store.objects(Note.self).values(of: \.text) == ["n1", "n2", "n3"])
    }
}

extension ModelStoreTests {
    /// A model's record whose key field is not the key it is stored under is refused by every read
    /// that decodes it, in a walk (decoded in place among the others) as by key, and the objects
    /// around it still read.
    @Test func aModelRecordWhosePrimaryKeyFieldIsNotItsKeyDoesNotRead() throws {
        let url = directory.url
        let store = try Store(at: url, types: [Note.self])
        let long = String(repeating: "a note longer than a short string's inline bytes ", count: 3)
        try store.write { tx in for id in 1...3 { try tx.insert(Note(id: id, text: "\(id) \(long)")) } }
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Note", create: false)
        let six = try Note(id: 6, text: "six \(long)", rank: 6).encodeRecord().bytes
        try environment.write { try $0.put(six, forKey: try KeyEncoder().encode(2), in: records) }
        expectEveryRead(
            [
                { _ = try store.objects(Note.self).fetch() },
                { _ = try store.read { try $0.object(Note.self, key: 2) } },
                { _ = try store.objects(Note.self).filter(#Predicate { $0.rank >= 0 }).fetch() },
                { _ = try store.objects(Note.self).sorted(by: \.text).limit(3).fetch() },
            ], toRefuseNote: "2", field: "id", { $0.contains("the record's id is 6") })
        for id in [1, 3] {
            #expect(
                try store.read { try $0.object(Note.self, key: id) } == Note(id: id, text: "\(id) \(long)"))
        }
        #expect(try store.objects(Note.self).filter(#Predicate { $0.id > 2 }).fetch().map(\.id) == [3])
    }

    @Test func aFinalClassIsAModelToo() throws {
        let store = try Store(at: directory.url, types: [ReminderObject.self])
        let reminder = ReminderObject(id: 1, text: "call")
        reminder.isExpanded = true
        try store.write { tx in try tx.insert(reminder) }
        try store.write { tx in try tx.update(ReminderObject.self, key: 1, \.snoozed) { $0 += 2 } }
        let read = try #require(try store.read { try $0.object(ReminderObject.self, key: 1) })
        #expect(read.text == "call" && read.snoozed == 2 && !read.isExpanded)
        #expect(try CBORDecoder().decode(ReminderObject.self, from: read.encodeRecord().bytes).snoozed == 2)
        #expect(try CBORValue(decoding: read.encodeRecord().bytes).mapKeys == ["id", "text", "snoozed"])
    }
}
