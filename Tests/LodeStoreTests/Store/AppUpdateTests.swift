import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Version 1 of the item, as the tests make it.
protocol OldItem: Persistable {
    static func make(id: Int, batch: Int, tag: String, payload: String) -> Self
}

/// A newer version of the item, as the tests make and change it.
protocol NewerItem: Persistable {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self
    static var batchPath: WritableKeyPath<Self, Int> { get }
    static var priorityPath: WritableKeyPath<Self, Int> { get }
    /// Whether the type stores `payload` itself.
    static var knowsPayload: Bool { get }
    /// The field `tag` is stored in.
    static var tagField: String { get }
}

extension NewerItem {
    static var knowsPayload: Bool { false }
    static var tagField: String { "tag" }
}

extension AppItemV1: OldItem {
    static func make(id: Int, batch: Int, tag: String, payload: String) -> Self {
        .init(id: id, batch: batch, tag: tag, payload: payload)
    }
}

extension GeneratedAppItemV1: OldItem {
    static func make(id: Int, batch: Int, tag: String, payload: String) -> Self {
        .init(id: id, batch: batch, tag: tag, payload: payload)
    }
}

extension AppItemDroppedAndAdded: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, tag: tag, priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
}

extension GeneratedAppItemDroppedAndAdded: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, tag: tag, priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
}

extension AppItemAddedIndexed: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, tag: tag, payload: "new \(id)", priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
    static var knowsPayload: Bool { true }
}

extension GeneratedAppItemAddedIndexed: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, tag: tag, payload: "new \(id)", priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
    static var knowsPayload: Bool { true }
}

extension AppItemRenamed: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, label: tag, priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
    static var tagField: String { "label" }
}

extension GeneratedAppItemRenamed: NewerItem {
    static func make(id: Int, batch: Int, tag: String, priority: Int) -> Self {
        .init(id: id, batch: batch, label: tag, priority: priority)
    }
    static var batchPath: WritableKeyPath<Self, Int> { \.batch }
    static var priorityPath: WritableKeyPath<Self, Int> { \.priority }
    static var tagField: String { "label" }
}

/// An app update on a store of its older version's objects: the newer type drops a field, adds one
/// with a default, adds an index or renames a field (with a migration), and rewrites old objects
/// every way a store rewrites them — a whole update, a field update of a field the record has and
/// of one it lacks, an upsert, a download's upsert with its own record. None throws where a read
/// succeeds; the fields the newer type does not know are kept, and the older version reads them back.
@Suite struct AppUpdateTests {
    let directory = TemporaryDirectory("app-update")

    /// Every object of `type` among `ids`, by key.
    func all<T: Persistable>(_ store: Store, _ type: T.Type, ids: Range<Int> = 0..<10) throws -> [T] {
        try store.read { tx in try ids.compactMap { try tx.object(T.self, key: $0) } }
    }

    /// The stored record of `id` as a map.
    func stored(_ store: Store, _ type: String, _ id: Int) throws -> [String: CBORValue] {
        try store.read { tx in
            let records = try tx.recordsDatabase(of: type)
            let record = try #require(try tx.lmdb.get(try KeyEncoder().encode(id), in: records))
            guard case .map(let entries) = try CBORValue(decoding: record) else { return [:] }
            return Dictionary(
                entries.compactMap { entry in
                    if case .text(let name) = entry.key { (name, entry.value) } else { nil }
                }, uniquingKeysWith: { a, _ in a })
        }
    }

    func rewrite<Old: OldItem, New: NewerItem>(
        from old: Old.Type, to new: New.Type, migrations: [Migration] = [], reopensAsOld: Bool = true
    ) throws {
        let url = directory.url.appendingPathComponent("\(New.self)")
        let name = Old.schema.typeName
        let oldRecord: [UInt8]
        do {
            let store = try Store(at: url, types: [Old.self])
            try store.write { tx in
                for id in 0..<6 {
                    try tx.insert(Old.make(id: id, batch: id % 2, tag: "t\(id)", payload: "payload \(id)"))
                }
            }
            oldRecord = try store.read {
                try $0.lmdb.get(try KeyEncoder().encode(4), in: $0.recordsDatabase(of: name))
            }!
            store.close()
        }
        let store = try Store(at: url, types: [New.self], migrations: migrations)
        // Reads succeed, with the default…
        let read = try all(store, New.self)
        #expect(read.map { $0[keyPath: New.priorityPath] } == [0, 0, 0, 0, 0, 0])
        // …and so does every rewrite.
        try store.write { tx in
            try tx.update(New.self, key: 0) { $0[keyPath: New.batchPath] = 30 }
            try tx.update(New.self, key: 1, New.batchPath) { $0 += 10 }
            try tx.update(New.self, key: 2, New.priorityPath) { $0 = 9 }
            try tx.upsert(New.make(id: 3, batch: 33, tag: "t3", priority: 3))
            // A download: the object with the record another client (version 1) wrote.
            _ = try tx.upsert(
                New.make(id: 4, batch: 44, tag: "t4", priority: 4),
                arrivingAs: oldRecord.withUnsafeBytes { $0 })
            try tx.insert(New.make(id: 6, batch: 6, tag: "t6", priority: 6))
        }
        #expect(
            try all(store, New.self).map { [$0[keyPath: New.batchPath], $0[keyPath: New.priorityPath]] }
                == [
                    [30, 0], [11, 0], [0, 9], [33, 3], [44, 4], [1, 0], [6, 6],
                ])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        // The payload version 1 wrote is kept where the newer type does not store it.
        for id in 0..<6 {
            let fields = try stored(store, name, id)
            if New.knowsPayload {
                #expect(
                    fields["payload"] == .text([3, 4].contains(id) ? "new \(id)" : "payload \(id)"), "\(id)")
            } else {
                #expect(fields["payload"] == .text("payload \(id)"), "\(New.self) \(id): \(fields)")
            }
            #expect(fields[New.tagField] == .text("t\(id)"))
        }
        // The object the newer version inserted lacks `payload` where it does not know it: version 1
        // would refuse the store (its records must decode). Without it, version 1 opens it.
        if !New.knowsPayload { try store.write { tx in _ = try tx.delete(New.self, key: 6) } }
        store.close()
        guard reopensAsOld else { return }
        let older = try Store(at: url, types: [Old.self])
        // The objects version 1 wrote read back with their payloads.
        let objects = try all(older, Old.self, ids: 0..<6)
        #expect(objects.count == 6)
        for id in 0..<6 {
            let payload = New.knowsPayload && [3, 4].contains(id) ? "new \(id)" : "payload \(id)"
            #expect(try stored(older, name, id)["payload"] == .text(payload))
        }
        #expect(try older.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func aNewerCodableTypeRewritesOlderObjects() throws {
        try rewrite(from: AppItemV1.self, to: AppItemDroppedAndAdded.self)
        try rewrite(from: AppItemV1.self, to: AppItemAddedIndexed.self)
        try rewrite(
            from: AppItemV1.self, to: AppItemRenamed.self,
            migrations: [Migration("tag is label") { try $0.renameField("tag", to: "label", in: "AppItem") }],
            reopensAsOld: false)
    }

    @Test func aNewerGeneratedTypeRewritesOlderObjects() throws {
        try rewrite(from: GeneratedAppItemV1.self, to: GeneratedAppItemDroppedAndAdded.self)
        try rewrite(from: GeneratedAppItemV1.self, to: GeneratedAppItemAddedIndexed.self)
        try rewrite(
            from: GeneratedAppItemV1.self, to: GeneratedAppItemRenamed.self,
            migrations: [
                Migration("tag is label") { try $0.renameField("tag", to: "label", in: "GeneratedAppItem") }
            ],
            reopensAsOld: false)
    }

    /// A record a rewrite cannot read is refused in the form reads give: the type, the key, the field.
    @Test func aRecordThatDoesNotDecodeIsNamedByARewrite() throws {
        let url = directory.url.appendingPathComponent("broken")
        do {
            let store = try Store(at: url, types: [AppItemV1.self])
            try store.write { tx in try tx.insert(AppItemV1(id: 1, batch: 1, tag: "t", payload: "p")) }
            store.close()
        }
        let store = try Store(at: url, types: [AppItemDroppedAndAdded.self])
        let broken = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(1)), .init(key: .text("batch"), value: .text("one")),
            .init(key: .text("tag"), value: .text("t")), .init(key: .text("payload"), value: .text("p")),
        ]).encoded
        try store.write { tx in
            try tx.lmdbWrite.put(
                broken, forKey: try KeyEncoder().encode(1), in: try tx.recordsDatabase(of: "AppItem"))
        }
        #expect {
            try store.write { tx in
                try tx.upsert(AppItemDroppedAndAdded(id: 1, batch: 2, tag: "t", priority: 1))
            }
        } throws: { error in
            guard case .recordDoesNotDecode(let type, let key, let field, _)? = error as? LodeError else {
                return false
            }
            return type == "AppItem" && key == "1" && field == "batch"
        }
    }
}
