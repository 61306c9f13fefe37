import Foundation
import Lode
import LodeMacros
import Testing

@testable import LodeTestSupport

// The *Changing your types* article's versioned schemas, as written.

enum ShopV1: VersionedSchema {
    static let versionIdentifier = SchemaVersion(1, 0, 0)
    static var models: [any Persistable.Type] { [Item.self] }
    @Model(name: "Item") struct Item {
        var id: Int
        var name: String
    }
}

enum ShopV2: VersionedSchema {
    static let versionIdentifier = SchemaVersion(2, 0, 0)
    static var models: [any Persistable.Type] { [Item.self] }
    @Model(name: "Item", version: 2) struct Item {
        var id: Int
        @Attribute(originalName: "name") var title: String
        var stock: Int = 0
    }
}

enum ShopPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ShopV1.self, ShopV2.self] }
    static let stages: [MigrationStage] = [.lightweight(fromVersion: ShopV1.self, toVersion: ShopV2.self)]
}

@Suite struct VersionedSchemaArticleTests {
    @Test func theArticlesPlanMovesAStoreOfVersionOne() throws {
        let directory = TemporaryDirectory("shop")
        let url = directory.url
        do {
            let old = try Store(at: url, schema: ShopV1.self)
            try old.write { tx in try tx.insert(ShopV1.Item(id: 1, name: "lamp")) }
            old.close()
        }
        let store = try Store(at: url, schema: ShopV2.self, migrationPlan: ShopPlan.self)
        #expect(try store.objects(ShopV2.Item.self).fetch().map { "\($0.title) \($0.stock)" } == ["lamp 0"])
    }
}
