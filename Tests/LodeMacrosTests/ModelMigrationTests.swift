import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// Version 1 of an app's book, a model of the macro.
@Model(name: "Book", version: 1)
struct BookV1: Equatable {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var year: Int
    var shelf: Int
}

/// Version 2: `title` renamed `name` (and indexed), `shelf` removed, the index on `year` dropped,
/// `pages` added with a default.
@Model(name: "Book", version: 2)
struct BookV2: Equatable {
    @PrimaryKey var id: Int
    @Indexed var name: String
    var year: Int
    var pages: Int = 0
}

/// Schema evolution with models of the macro: a migration renames and removes fields, the schema
/// adds and drops indexes and a field with a default, and version 2's generated codec reads what
/// came of version 1's records.
@Suite struct ModelMigrationTests {
    let directory = TemporaryDirectory("model-migration")

    static let v2 = Migration("book v2") { context in
        try context.renameField("title", to: "name", in: "Book")
        try context.removeField("shelf", from: "Book")
    }

    @Test func aMigrationReshapesTheRecordsOfAModel() throws {
        let url = directory.url
        do {
            let store = try Store(at: url, types: [BookV1.self], migrations: [])
            try store.write { tx in
                for id in 1...20 {
                    try tx.insert(BookV1(id: id, title: "book \(id)", year: 1990 + id % 5, shelf: id % 3))
                }
            }
            store.close()
        }
        let store = try Store(at: url, types: [BookV2.self], migrations: [Self.v2])
        let books = try store.objects(BookV2.self).fetch()
        #expect(books == (1...20).map { BookV2(id: $0, name: "book \($0)", year: 1990 + $0 % 5, pages: 0) })
        // The index on the renamed field answers queries; the one on `year` is gone, and a query on
        // `year` walks the records, checking the field.
        let named = store.objects(BookV2.self).filter(#Predicate { $0.name == "book 7" })
        #expect(try named.fetch().map(\.id) == [7])
        #expect(try named.explain().access == .indexLookup(index: "name", count: 1))
        let ofYear = store.objects(BookV2.self).filter(#Predicate { $0.year == 1992 })
        #expect(try ofYear.fetch().map(\.id) == [2, 7, 12, 17])
        #expect(try ofYear.explain().access == .fullScan)
        let stored = try store.read { try $0.storedType(named: "Book") }
        #expect(stored.indexes.map(\.name) == ["name"])
        #expect(stored.fields == ["id", "name", "year"])
        #expect(stored.version == 2)
        #expect(try store.objects(BookV2.self).values(of: \.pages) == Array(repeating: 0, count: 20))
        // Written by version 2, read back through its generated codec with the new field.
        try store.write { tx in try tx.update(BookV2.self, key: 3, \.pages) { $0 = 120 } }
        #expect(try store.read { try $0.object(BookV2.self, key: 3) }?.pages == 120)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        store.close()

        // The records hold the new shape, as any CBOR reader sees it.
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Book", create: false)
        let bytes = try #require(try environment.read { try $0.get(try KeyEncoder().encode(3), in: records) })
        guard case .map(let entries) = try CBORValue(decoding: bytes) else {
            Issue.record("a record is a map")
            return
        }
        #expect(entries.map(\.key) == [.text("id"), .text("name"), .text("year"), .text("pages")])
    }
}
