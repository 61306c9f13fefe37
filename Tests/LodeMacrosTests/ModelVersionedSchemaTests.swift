import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// The first version of a library app's models, as SwiftData's versioned schemas declare them.
enum LibraryV1: VersionedSchema {
    static let versionIdentifier = SchemaVersion(1, 0, 0)
    static var models: [any Persistable.Type] { [Book.self, Shelf.self] }

    @Model(name: "Book")
    struct Book: Equatable {
        var id: Int
        var name: String
        var blurb: String
        @Indexed var year: Int
    }

    @Model(name: "Shelf")
    struct Shelf {
        var id: Int
        var label: String
    }
}

/// Version 2: `name` became `title`, `blurb` and shelves are gone, `pages` is new.
enum LibraryV2: VersionedSchema {
    static let versionIdentifier = SchemaVersion(2, 0, 0)
    static var models: [any Persistable.Type] { [Book.self] }

    @Model(name: "Book", version: 2)
    struct Book: Equatable {
        var id: Int
        @Attribute(originalName: "name") var title: String
        @Indexed var year: Int
        var pages: Int = 0
    }
}

/// Version 3: `year` was text in some records (a custom stage mends it) and `decade` is computed.
enum LibraryV3: VersionedSchema {
    static let versionIdentifier = SchemaVersion(3, 0, 0)
    static var models: [any Persistable.Type] { [Book.self] }

    @Model(name: "Book", version: 3)
    struct Book: Equatable {
        var id: Int
        var title: String
        @Indexed var year: Int
        var pages: Int = 0
        @Indexed var decade: Int = 0
    }
}

/// The plan to version 2.
enum LibraryPlanV2: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [LibraryV1.self, LibraryV2.self] }
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: LibraryV1.self, toVersion: LibraryV2.self)
    ]
}

/// The plan to version 3.
enum LibraryPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [LibraryV1.self, LibraryV2.self, LibraryV3.self] }
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: LibraryV1.self, toVersion: LibraryV2.self),
        .custom(
            fromVersion: LibraryV2.self, toVersion: LibraryV3.self,
            willMigrate: { context in
                // Records in version 2's shape: a year stored as text becomes a number.
                try context.updateRecords(of: "Book") { record in
                    if case .text(let text)? = record["year"] {
                        record["year"] = .unsigned(UInt64(text) ?? 0)
                    }
                    return .keep
                }
            },
            didMigrate: { context in
                try context.migrate(LibraryV3.Book.self) { $0.decade = $0.year / 10 * 10 }
            }),
    ]
}

/// A plan whose stages skip a version.
enum BrokenPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [LibraryV1.self, LibraryV2.self, LibraryV3.self] }
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: LibraryV1.self, toVersion: LibraryV3.self),
        .lightweight(fromVersion: LibraryV2.self, toVersion: LibraryV3.self),
    ]
}

/// Versioned schemas and a migration plan, as SwiftData users write them, on real stores: each
/// stage runs once, in order, as a named migration of the store's list.
@Suite struct ModelVersionedSchemaTests {
    let directory = TemporaryDirectory("versioned-schemas")

    @Test func aStoreMovesThroughThePlansStages() throws {
        let url = directory.url.appendingPathComponent("library")
        do {
            let store = try Store(at: url, schema: LibraryV1.self)
            try store.write { tx in
                try tx.insert(LibraryV1.Book(id: 1, name: "Dune", blurb: "sand", year: 1965))
                try tx.insert(LibraryV1.Book(id: 2, name: "Solaris", blurb: "sea", year: 1961))
                try tx.insert(LibraryV1.Shelf(id: 1, label: "sf"))
            }
            store.close()
        }
        do {
            let store = try Store(at: url, schema: LibraryV2.self, migrationPlan: LibraryPlanV2.self)
            #expect(
                try store.objects(LibraryV2.Book.self).sorted(by: \.year).fetch() == [
                    .init(id: 2, title: "Solaris", year: 1961), .init(id: 1, title: "Dune", year: 1965),
                ])
            #expect(try store.read { try $0.schemaHistory() }.migrations == ["1.0.0 → 2.0.0"])
            #expect(try store.read { try $0.catalogEntry(named: "Shelf") } == nil)
            #expect(try store.read { try $0.catalogEntry(named: "Book") }?.fields == ["id", "title", "year"])
            // A record an outside writer left with the year as text, for the next stage to mend.
            try store.write { tx in
                try tx.insert(LibraryV2.Book(id: 3, title: "Ubik", year: 0))
                let records = try tx.lmdbWrite.database(named: "Book", create: false)
                let text = CBORValue.map([
                    .init(key: .text("id"), value: .unsigned(3)),
                    .init(key: .text("title"), value: .text("Ubik")),
                    .init(key: .text("year"), value: .text("1969")),
                ]).encoded
                try tx.lmdbWrite.put(text, forKey: try KeyEncoder().encode(3), in: records)
            }
            store.close()
        }
        let store = try Store(at: url, schema: LibraryV3.self, migrationPlan: LibraryPlan.self)
        #expect(
            try store.objects(LibraryV3.Book.self).fetch().map { "\($0.title) \($0.year) \($0.decade)" } == [
                "Dune 1965 1960", "Solaris 1961 1960", "Ubik 1969 1960",
            ])
        #expect(try store.objects(LibraryV3.Book.self).filter(#Predicate { $0.decade == 1960 }).count == 3)
        #expect(try store.read { try $0.schemaHistory() }.migrations == ["1.0.0 → 2.0.0", "2.0.0 → 3.0.0"])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func aNewStoreOpensWithTheLatestVersion() throws {
        let store = try Store(
            at: directory.url.appendingPathComponent("new"), schema: LibraryV3.self,
            migrationPlan: LibraryPlan.self)
        try store.write { tx in
            try tx.insert(LibraryV3.Book(id: 1, title: "Kindred", year: 1979, decade: 1970))
        }
        #expect(try store.objects(LibraryV3.Book.self).count == 1)
        #expect(try store.read { try $0.schemaHistory() }.migrations.count == 2)
    }

    @Test func aPlanThatIsNotAChainIsRefused() throws {
        let url = directory.url.appendingPathComponent("refused")
        #expect {
            try Store(at: url, schema: LibraryV2.self, migrationPlan: LibraryPlan.self)
        } throws: { error in
            "\(error)".contains("its last schema must be LibraryV2")
        }
        #expect {
            try Store(at: url, schema: LibraryV3.self, migrationPlan: BrokenPlan.self)
        } throws: { error in
            "\(error)".contains("stage 1 goes from LibraryV1 to LibraryV3, not from LibraryV1 to LibraryV2")
        }
    }
}
