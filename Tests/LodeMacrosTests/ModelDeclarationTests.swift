import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// Declarations SwiftData users write: models nested in a namespace type, properties named with
/// keywords. They compile (this file and Models.swift are the proof) and store what they say.
@Suite struct ModelDeclarationTests {
    let directory = TemporaryDirectory("model-declarations")

    @Test func modelsNestedInNamespacesShareTheirStoredType() throws {
        let url = directory.url
        do {
            let store = try Store(at: url, types: [ShelfV1.Book.self])
            try store.write { tx in
                for id in 1...3 { try tx.insert(ShelfV1.Book(id: id, title: "book \(id)")) }
            }
            #expect(ShelfV1.Book.schema.typeName == "Book")
            store.close()
        }
        let store = try Store(at: url, types: [ShelfV2.Book.self])
        #expect(try store.objects(ShelfV2.Book.self).fetch().map(\.pages) == [0, 0, 0])
        try store.write { tx in
            try tx.update(ShelfV2.Book.self, key: 2, \.pages) { $0 = 120 }
            try tx.insert(ShelfV2.Book(id: 4, title: "four", pages: 50, subtitle: "a sequel"))
        }
        #expect(
            try store.objects(ShelfV2.Book.self).filter(#Predicate { $0.pages > 10 }).sorted(by: \.pages)
                .fetch().map(\.id) == [4, 2])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func propertiesNamedWithKeywordsAreFieldsOfThoseNames() throws {
        let store = try Store(at: directory.url, types: [Keywords.self])
        let object = Keywords(id: 1, default: true, self: 7, class: nil, for: ["a", "b"])
        try store.write { tx in
            try tx.insert(object)
            try tx.insert(Keywords(id: 2, default: false, self: 8))
        }
        #expect(try store.read { try $0.object(Keywords.self, key: 1) } == object)
        #expect(try store.objects(Keywords.self).filter(#Predicate { $0.default }).fetch() == [object])
        #expect(try store.objects(Keywords.self).values(of: \.`self`) == [7, 8])
        #expect(try store.objects(Keywords.self).values(of: \.`class`) == [nil, "none"])
        // The record's fields are the names without backticks, as Codable writes them.
        let record = try object.encodeRecord().bytes
        #expect(try CBORValue(decoding: record).mapKeys == ["id", "default", "self", "class", "for"])
        let second = Keywords(id: 2, default: false, self: 8)
        #expect(try second.encodeRecord().bytes == CBOREncoder().encode(second))
        #expect(try CBORDecoder().decode(Keywords.self, from: record) == object)
    }
}

extension ModelDeclarationTests {
    static func trip(_ n: Int, country: String = "NO", city: String = "Oslo", code: String? = nil) -> Trip {
        Trip(
            id: UUID(uuid: (UInt8(n), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)), name: "trip \(n % 3)",
            start: n, end: n + 2, country: country, city: city, code: code ?? "c\(n)")
    }

    /// Ids of a model's objects, for code that needs `Identifiable` (a list's rows).
    func identities<T: Identifiable>(_ items: [T]) -> [T.ID] { items.map(\.id) }

    @Test func swiftDataIndexesAndUniquenessConstraintsAreKept() throws {
        let store = try Store(at: directory.url, types: [Trip.self])
        #expect(
            Trip.schema.indexes.map(\.name) == ["name", "start+end", "code", "country+city+name"])
        #expect(Trip.schema.indexes.map(\.isUnique) == [false, false, true, true])
        try store.write { tx in for n in 0..<9 { try tx.insert(Self.trip(n, city: "city \(n)")) } }
        // A second object with the same three values of a three-field constraint is refused.
        #expect(throws: LodeError.self) {
            try store.write { tx in try tx.insert(Self.trip(9, city: "city 3", code: "other")) }
        }
        #expect(throws: LodeError.self) {
            try store.write { tx in try tx.insert(Self.trip(10, city: "elsewhere", code: "c4")) }
        }
        let named = store.objects(Trip.self).filter(#Predicate { $0.name == "trip 1" })
        #expect("\(try named.explain())".contains("name"))
        #expect(try named.fetch().map(\.start) == [1, 4, 7])
        let trips = try store.objects(Trip.self).fetch()
        #expect(identities(trips) == trips.map(\.id))
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }
}

extension ModelDeclarationTests {
    func renamesWithoutAMigration<V2: Persistable & Equatable>(
        _ type: V2.Type, _ make: (Int, String, String) -> V2, folder: String
    ) throws {
        let url = directory.url.appendingPathComponent(folder)
        do {
            let store = try Store(at: url, types: [ContactV1.self])
            try store.write { tx in
                for id in 1...3 { try tx.insert(ContactV1(id: id, name: "name \(id)", email: "\(id)@x")) }
            }
            store.close()
        }
        // A record that holds both names (a version that knew both wrote it): the newer one wins.
        let both = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(4)), .init(key: .text("name"), value: .text("old four")),
            .init(key: .text("email"), value: .text("4@x")),
            .init(key: .text("fullName"), value: .text("new four")),
        ]).encoded
        do {
            let environment = try LMDB.Environment.open(at: url.path)
            let records = try environment.database(named: "Contact", create: false)
            try environment.write { try $0.put(both, forKey: try KeyEncoder().encode(4), in: records) }
        }
        do {
            // The newer version opens with no migration: the field is renamed in every record.
            let store = try Store(at: url, types: [V2.self])
            let objects = try store.read { tx in try (1...4).map { try tx.object(V2.self, key: $0) } }
            #expect(
                objects == [
                    make(1, "name 1", "1@x"), make(2, "name 2", "2@x"), make(3, "name 3", "3@x"),
                    make(4, "new four", "4@x"),
                ])
            #expect(
                try store.read { try $0.catalogEntry(named: "Contact") }?.fields == [
                    "email", "fullName", "id",
                ])
            #expect(try store.read { try $0.checkIntegrity() }.problems == [])
            #expect(try store.read { try $0.schemaHistory() }.migrations == [])
            // The unique index `.unique` asked for holds.
            #expect(throws: LodeError.self) {
                try store.write { tx in try tx.insert(make(9, "nine", "1@x")) }
            }
            store.close()
        }
        // Opening again finds nothing to rename.
        let store = try Store(at: url, types: [V2.self])
        #expect(try store.read { try $0.object(V2.self, key: 4) } == make(4, "new four", "4@x"))
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func anAttributesOriginalNameRenamesTheFieldAtOpen() throws {
        try renamesWithoutAMigration(
            ContactV2.self, { ContactV2(id: $0, fullName: $1, email: $2) }, folder: "generated")
        try renamesWithoutAMigration(
            CodableContactV2.self, { CodableContactV2(id: $0, fullName: $1, email: $2) }, folder: "codable")
    }
}

/// A contact whose primary key claims an earlier name: refused (a key is changed by a migration).
struct ContactRenamedKey: Persistable {
    var code: Int
    var name: String
    var email: String
    static let schema = Schema<ContactRenamedKey>(
        name: "Contact", primaryKey: \.code, version: 2, originalNames: ["code": "id"])
}

extension ModelDeclarationTests {
    @Test func aPrimaryKeyIsNotRenamedByItsOriginalName() throws {
        let url = directory.url.appendingPathComponent("key")
        do {
            let store = try Store(at: url, types: [ContactV1.self])
            try store.write { tx in try tx.insert(ContactV1(id: 1, name: "one", email: "1@x")) }
            store.close()
        }
        #expect {
            try Store(at: url, types: [ContactRenamedKey.self])
        } throws: { error in
            guard case .schemaMismatch(let type, let reason)? = error as? LodeError else { return false }
            return type == "Contact" && reason.contains("primary key code cannot be renamed from id")
        }
    }
}
