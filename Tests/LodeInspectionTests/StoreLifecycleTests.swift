import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// The same stored type seen by two versions of an app.
enum V1 {
    struct Item: Persistable, Equatable {
        var id: Int
        var name: String
        var size: Int
        static let schema = Schema<Item>(name: "Item", primaryKey: \.id, indexes: [.on(\.name)])
    }
}

enum V2 {
    /// Adds an index on `size`, drops the one on `name`.
    struct Item: Persistable, Equatable {
        var id: Int
        var name: String
        var size: Int
        static let schema = Schema<Item>(name: "Item", primaryKey: \.id, indexes: [.on(\.size)], version: 2)
    }

    /// `size` became a string: old records no longer decode.
    struct Renamed: Persistable {
        var id: Int
        var name: String
        var size: String
        static let schema = Schema<Renamed>(name: "Item", primaryKey: \.id)
    }

    /// Another primary key.
    struct ByName: Persistable {
        var id: Int
        var name: String
        var size: Int
        static let schema = Schema<ByName>(name: "Item", primaryKey: \.name)
    }

    /// A unique index the data violates.
    struct UniqueSize: Persistable {
        var id: Int
        var name: String
        var size: Int
        static let schema = Schema<UniqueSize>(name: "Item", primaryKey: \.id, indexes: [.unique(\.size)])
    }
}

@Suite struct StoreLifecycleTests {
    let tmp = TemporaryDirectory()

    func fill() throws {
        let store = try Store(at: tmp.url, types: [V1.Item.self])
        try store.write { tx in
            for i in 0..<20 { try tx.insert(V1.Item(id: i, name: "n\(i % 5)", size: i % 3)) }
        }
    }

    func databaseNames() throws -> [String] {
        let environment = try Environment.open(at: tmp.path)
        return try environment.read { txn in
            try txn.entries(in: environment.mainDatabase).map { String(decoding: $0.key, as: UTF8.self) }
        }
    }

    @Test func aChangedSchemaBuildsAndDropsIndexesOnOpen() throws {
        try fill()
        #expect(try databaseNames() == ["@catalog", "@changes", "@meta", "Item", "Item.name"])
        let store = try Store(at: tmp.url, types: [V2.Item.self])
        #expect(try databaseNames() == ["@catalog", "@changes", "@meta", "Item", "Item.size"])
        let two = store.objects(V2.Item.self).filter(#Predicate { $0.size == 2 })
        #expect(try two.explain().access == .indexLookup(index: "size", count: 1))
        #expect(try two.map(\.id) == [2, 5, 8, 11, 14, 17])
        let entry = try store.read { try $0.catalogEntry(named: "Item") }
        #expect(entry?.version == 2)
        #expect(entry?.indexes.map(\.name) == ["size"])
    }

    @Test func aUniqueIndexTheDataViolatesIsRefusedAndNothingChanges() throws {
        try fill()
        let error = lodeError { _ = try Store(at: tmp.url, types: [V2.UniqueSize.self]) }
        #expect(error == .uniqueViolation(type: "Item", index: "size", value: "0"))
        #expect(try databaseNames() == ["@catalog", "@changes", "@meta", "Item", "Item.name"])
    }

    @Test func anotherPrimaryKeyIsASchemaMismatch() throws {
        try fill()
        let store = try Store(at: tmp.url)
        let error = lodeError { _ = try store.read { try $0.count(V2.ByName.self) } }
        #expect(
            error
                == .schemaMismatch(
                    type: "Item", reason: "the store's primary key is \"id\", the type's is \"name\""))
    }

    @Test func aRecordThatNoLongerDecodesNamesTypeKeyAndField() throws {
        try fill()
        let store = try Store(at: tmp.url)
        let error = lodeError { _ = try store.read { try $0.object(V2.Renamed.self, key: 7) } }
        guard case .recordDoesNotDecode(let type, let key, let field, _) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(type == "Item")
        #expect(key == "7")
        #expect(field == "size")
        #expect(
            error?.description.contains("Item 7: the stored record does not decode at field \"size\"") == true
        )
        #expect(lodeError { _ = try store.objects(V2.Renamed.self).fetch() } != nil)
    }

    @Test func aReadOnlyStoreReadsAndRefusesWrites() throws {
        try fill()
        let dataFile = tmp.url.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: dataFile)
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        #expect(try store.objects(V1.Item.self).count == 20)
        #expect(
            lodeError { try store.write { try $0.insert(V1.Item(id: 99, name: "x", size: 0)) } }
                == .readOnly(path: tmp.path))
        #expect(try Data(contentsOf: dataFile) == before)
    }

    @Test func aClosedStoreSaysSo() throws {
        let store = try Store(at: tmp.url)
        store.close()
        #expect(lodeError { _ = try store.read { _ in 1 } } == .storeClosed(path: tmp.path))
        #expect(lodeError { try store.write { _ in } } == .storeClosed(path: tmp.path))
    }

    @Test func directoriesThatAreNotStoresAreRefused() throws {
        // An LMDB environment of another program.
        let other = tmp.url.appendingPathComponent("other")
        do {
            let environment = try Environment.open(
                at: other.path, options: EnvironmentOptions(createDirectory: true))
            let db = try environment.database(named: "stuff")
            try environment.write { try $0.put([1], forKey: [1], in: db) }
        }
        guard case .notAStore(let path, let reason) = lodeError({ _ = try Store(at: other) }) else {
            Issue.record("expected notAStore")
            return
        }
        #expect(path == other.path)
        #expect(reason.contains("@meta"))
        // A data file that is not LMDB at all, left untouched.
        let garbage = tmp.url.appendingPathComponent("garbage")
        try FileManager.default.createDirectory(at: garbage, withIntermediateDirectories: true)
        let junk = Data(repeating: 0x5a, count: 8192)
        try junk.write(to: garbage.appendingPathComponent("data.mdb"))
        guard case .storage(let lmdb) = lodeError({ _ = try Store(at: garbage) }) else {
            Issue.record("expected a storage error")
            return
        }
        #expect(lmdb.reason == .notAStoreFile)
        #expect(try Data(contentsOf: garbage.appendingPathComponent("data.mdb")) == junk)
        // A missing directory, read-only.
        let missing = tmp.url.appendingPathComponent("missing")
        guard
            case .storage(let missingError) = lodeError({
                _ = try Store(at: missing, configuration: StoreConfiguration(readOnly: true))
            })
        else {
            Issue.record("expected a storage error")
            return
        }
        #expect(missingError.reason == .pathNotFound)
    }

    @Test func anUnknownTypeReadsAsEmpty() throws {
        try fill()
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        #expect(try store.read { try $0.count(Counter.self) } == 0)
        #expect(try store.objects(Counter.self).isEmpty)
    }
}
