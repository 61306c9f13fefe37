import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// A model with every kind of field a walk reads differently: an integer key compared in place,
/// optional fields with and without defaults, a defaulted field, an enum, a nested value, a long
/// string and an array.
@Model
struct WalkedItem: Equatable {
    @PrimaryKey var id: Int
    var title: String
    var note: String?
    var rank: Int = 7
    var stage: Stage
    var address: Address?
    var weight: Double
    var tags: [String]
    var label: String? = "none"
}

/// A model whose key is a string: its key is checked through the schema, not in place.
@Model
struct NamedItem: Equatable {
    @PrimaryKey var name: String
    var count: Int
    var memo: String?
}

/// A model only the empty-store test uses (the others count their type's walks).
@Model
struct UnwalkedItem {
    @PrimaryKey var id: Int
    var title: String
}

/// The loops the model macro compiles for a model (`RecordWalking`: every record decoded, one field
/// of every record) give exactly what the store's generic path gives — the objects a write
/// transaction's walk decodes one by one through the schema, and each object read by its key — on
/// records in declared order, out of it, with fields the type does not know and without fields it
/// has defaults for.
struct ModelWalkTests {
    let directory = TemporaryDirectory("walks")

    /// How many compiled walks of `Model` ran so far.
    private func walksRun<Model>(_ model: Model.Type) -> Int {
        compiledWalksRun.withLock { $0[ObjectIdentifier(Model.self), default: 0] }
    }

    private func randomItem(_ id: Int, _ random: inout SeededGenerator) -> WalkedItem {
        let words = [
            "ash", "birch", "cedar", "a title long enough to be stored outside a small string", "é日本",
        ]
        return WalkedItem(
            id: id, title: words.randomElement(using: &random)! + " \(id)",
            note: Bool.random(using: &random) ? "note \(id)" : nil,
            rank: Int.random(in: -5...5, using: &random),
            stage: Stage.allCases.randomElement(using: &random)!,
            address: Bool.random(using: &random)
                ? Address(city: "c\(id)", zip: Bool.random(using: &random) ? id : nil) : nil,
            weight: Double(id) / 3, tags: (0..<Int.random(in: 0...3, using: &random)).map { "t\($0)" },
            label: Bool.random(using: &random) ? "l\(id)" : nil)
    }

    /// The record of `object` with its fields changed by `change`.
    private func edited(_ record: [UInt8], _ change: (inout [CBORValue.MapEntry]) -> Void) throws -> [UInt8] {
        guard case .map(var entries) = try CBORValue(decoding: record) else {
            Issue.record("not a map")
            return record
        }
        change(&entries)
        return CBORValue.map(entries).encoded
    }

    @Test func compiledWalksGiveWhatTheGenericPathGives() throws {
        let store = try Store(at: directory.url, types: [WalkedItem.self])
        var random = SeededGenerator(seed: 63)
        try store.write { tx in for id in 1...300 { try tx.insert(randomItem(id, &random)) } }
        // A third of the records rewritten as another writer or version would: fields shuffled,
        // unknown fields, fields with defaults (and an optional) left out.
        let environment = try LMDB.Environment.open(at: directory.url.path)
        let records = try environment.database(named: "WalkedItem", create: false)
        try environment.write { txn in
            for id in stride(from: 1, through: 300, by: 3) {
                let key = try KeyEncoder().encode(id)
                let record = try #require(try txn.get(key, in: records))
                let changed = try edited(record) { entries in
                    switch id % 4 {
                    case 0: entries.shuffle(using: &random)
                    case 1:
                        entries.insert(.init(key: .text("addedLater"), value: .array([.unsigned(1)])), at: 2)
                        entries.append(.init(key: .text("zz"), value: .map([])))
                    case 2:
                        entries.removeAll { [.text("rank"), .text("label"), .text("note")].contains($0.key) }
                    default:
                        entries.removeAll { $0.key == .text("rank") }
                        entries.shuffle(using: &random)
                        entries.insert(.init(key: .text("x"), value: .text("unknown")), at: 0)
                    }
                }
                try txn.put(changed, forKey: key, in: records)
            }
        }

        // The generic path: a write transaction's walk (no compiled loop there), and reads by key.
        let generic = try store.write { tx in try tx.objects(WalkedItem.self).fetch() }
        let byKey = try store.read { tx in
            try (1...300).map { try #require(try tx.object(WalkedItem.self, key: $0)) }
        }
        #expect(generic == byKey)
        #expect(generic.filter { $0.rank == 7 && $0.label == "none" && $0.note == nil }.count >= 25)

        let before = walksRun(WalkedItem.self)
        #expect(try store.objects(WalkedItem.self).fetch() == generic)
        func expectField<V: Decodable & Equatable>(_ keyPath: KeyPath<WalkedItem, V>) throws {
            #expect(
                try store.objects(WalkedItem.self).values(of: keyPath) == generic.map { $0[keyPath: keyPath] }
            )
        }
        try expectField(\.id)
        try expectField(\.title)
        try expectField(\.note)
        try expectField(\.rank)
        try expectField(\.stage)
        try expectField(\.address)
        try expectField(\.weight)
        try expectField(\.tags)
        try expectField(\.label)
        // Each of those reads took the loop compiled for the model.
        #expect(walksRun(WalkedItem.self) - before == 10)
    }

    @Test func aKeyThatIsNotAnIntegerIsCheckedAndAWrongOneRefused() throws {
        let store = try Store(at: directory.url, types: [NamedItem.self])
        let items = (0..<50).map { NamedItem(name: "item \($0)", count: $0, memo: $0 % 2 == 0 ? "m" : nil) }
        try store.write { tx in for item in items { try tx.insert(item) } }
        let before = walksRun(NamedItem.self)
        let sorted = items.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        #expect(try store.objects(NamedItem.self).fetch() == sorted)
        #expect(try store.objects(NamedItem.self).values(of: \.memo) == sorted.map(\.memo))
        #expect(walksRun(NamedItem.self) - before == 2)

        // One record whose key field is not the key it is stored under: the walk refuses it, naming it.
        let environment = try LMDB.Environment.open(at: directory.url.path)
        let records = try environment.database(named: "NamedItem", create: false)
        let other = try NamedItem(name: "someone else", count: 1, memo: nil).encodeRecord().bytes
        try environment.write { try $0.put(other, forKey: try KeyEncoder().encode("item 7"), in: records) }
        #expect {
            try store.objects(NamedItem.self).fetch()
        } throws: { error in
            "\(error)".contains("item 7") && "\(error)".contains("someone else")
        }
    }

    @Test func anEmptyStoreWalksToNothing() throws {
        let store = try Store(at: directory.url, types: [UnwalkedItem.self])
        #expect(try store.objects(UnwalkedItem.self).fetch().isEmpty)
        #expect(try store.objects(UnwalkedItem.self).values(of: \.title).isEmpty)
        try store.write { tx in try tx.insert(UnwalkedItem(id: 1, title: "one")) }
        #expect(try store.objects(UnwalkedItem.self).values(of: \.title) == ["one"])
    }
}
