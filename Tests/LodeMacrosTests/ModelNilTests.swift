import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// A model whose optional property starts with a value: nil is a value of its own, not "use the
/// default".
@Model
struct Paint: Equatable {
    var id: Int
    var color: String? = "blue"
    var coats: Int? = 2
    var finish: Stage? = .todo
    var owner: Address? = Address(city: "Oslo", zip: nil)
    var note: String?
}

/// The same fields through `Codable` with the defaults declared in the schema.
struct CodablePaint: Persistable, Equatable {
    var id: Int
    var color: String?
    var coats: Int?
    var finish: Stage?
    var owner: Address?
    var note: String?
    static let schema = Schema<CodablePaint>(
        name: "Paint", primaryKey: \.id,
        defaults: [
            .field(\.color, "blue"), .field(\.coats, 2), .field(\.finish, .todo),
            .field(\.owner, Address(city: "Oslo", zip: nil)),
        ])
}

/// An optional stored as nil reads back as nil through every read, with either codec: a record
/// lacking the field (an older version's) reads the default; one holding null reads nil.
@Suite struct ModelNilTests {
    let directory = TemporaryDirectory("model-nil")

    static let cleared = Paint(id: 1, color: nil, coats: nil, finish: nil, owner: nil, note: nil)
    static let painted = Paint(id: 2, color: "red", coats: 3, finish: .done, owner: nil, note: "x")

    /// Every read of the two stored paints: objects, a projection, conditions read from records.
    func expectReads(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(
            try store.read { try $0.object(Paint.self, key: 1) } == Self.cleared,
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).fetch() == [Self.cleared, Self.painted],
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).values(of: \.color) == [nil, "red"], sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).values(of: \.coats, \.finish).map {
                "\($0.0 as Any) \($0.1 as Any)"
            }
                == ["nil nil", "Optional(3) Optional(LodeMacrosTests.Stage.done)"],
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).filter(#Predicate { $0.color == nil }).fetch().map(\.id) == [1],
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).filter(#Predicate { $0.coats == nil }).fetch().map(\.id) == [1],
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(Paint.self).filter(#Predicate { $0.color != nil }).fetch().map(\.id) == [2],
            sourceLocation: sourceLocation)
        #expect(
            try store.objects(CodablePaint.self).fetch().map(\.color) == [nil, "red"],
            sourceLocation: sourceLocation)
    }

    @Test func aNilOptionalWithAnInitialValueReadsBackNilThroughEveryRead() throws {
        let store = try Store(at: directory.url, types: [Paint.self, CodablePaint.self])
        try store.write { tx in
            try tx.insert(Self.cleared)
            try tx.insert(Self.painted)
        }
        try expectReads(store)
        // Another decoder reads the same bytes the same way.
        let environment = try LMDB.Environment.open(at: directory.url.path)
        let records = try environment.database(named: "Paint", create: false)
        let stored = try #require(
            try environment.read { try $0.get(try KeyEncoder().encode(1), in: records) })
        #expect(try CBORDecoder().decode(Paint.self, from: stored) == Self.cleared)
        #expect(try CBORDecoder().decode(CodablePaint.self, from: stored).color == nil)
    }

    @Test func theCodablePathWritesTheSameRecord() throws {
        let store = try Store(at: directory.url, types: [Paint.self, CodablePaint.self])
        try store.write { tx in
            try tx.insert(CodablePaint(id: 1, color: nil, coats: nil, finish: nil, owner: nil, note: nil))
            try tx.insert(CodablePaint(id: 2, color: "red", coats: 3, finish: .done, owner: nil, note: "x"))
        }
        try expectReads(store)
        let environment = try LMDB.Environment.open(at: directory.url.path)
        let records = try environment.database(named: "Paint", create: false)
        for paint in [Self.cleared, Self.painted] {
            let stored = try environment.read { try $0.get(try KeyEncoder().encode(paint.id), in: records) }
            #expect(stored == (try paint.encodeRecord().bytes))
        }
    }

    @Test func updatesToNilAndBackKeepTheValue() throws {
        let store = try Store(at: directory.url, types: [Paint.self])
        try store.write { tx in
            try tx.insert(Paint(id: 1))
            try tx.insert(Self.painted)
        }
        // A field update to nil, a whole update to nil, and an upsert.
        try store.write { tx in
            try tx.update(Paint.self, key: 1, \.color) { $0 = nil }
            try tx.update(Paint.self, key: 1) { $0.coats = nil }
            try tx.update(Paint.self, key: 1, \.finish) { $0 = nil }
        }
        try store.write { tx in
            var paint = try #require(try tx.object(Paint.self, key: 1))
            paint.owner = nil
            try tx.upsert(paint)
        }
        try expectReads(store)
        // Back to values, in place.
        try store.write { tx in try tx.update(Paint.self, key: 1, \.color) { $0 = "green" } }
        #expect(try store.read { try $0.object(Paint.self, key: 1) }?.color == "green")
        try store.write { tx in try tx.update(Paint.self, key: 1, \.color) { $0 = nil } }
        #expect(try store.read { try $0.object(Paint.self, key: 1) }?.color == nil)
    }

    @Test func aRecordWithoutTheFieldStillReadsTheDefault() throws {
        let store = try Store(at: directory.url, types: [Paint.self])
        try store.write { tx in try tx.insert(Self.painted) }
        // A record an older version wrote, before the fields existed.
        let environment = try LMDB.Environment.open(at: directory.url.path)
        let records = try environment.database(named: "Paint", create: false)
        let old = CBORValue.map([.init(key: .text("id"), value: .unsigned(1))]).encoded
        try environment.write { try $0.put(old, forKey: try KeyEncoder().encode(1), in: records) }
        let expected = Paint(id: 1)
        #expect(try store.read { try $0.object(Paint.self, key: 1) } == expected)
        #expect(try store.objects(Paint.self).values(of: \.color) == ["blue", "red"])
        #expect(try store.objects(Paint.self).filter(#Predicate { $0.color == nil }).fetch() == [])
        #expect(try store.objects(Paint.self).filter(#Predicate { $0.coats == 2 }).fetch() == [expected])
    }
}
