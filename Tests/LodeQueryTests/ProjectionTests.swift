import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// `values(of:)` reads fields straight from records: it must give exactly what `fetch()` and the key
/// path give, in the results' order, whatever the query, and fall back to whole objects where a
/// field cannot stand for its property.
@Suite struct ProjectionTests {
    struct Item: Persistable, Equatable {
        var id: Int
        var title: String
        var score: Int
        var price: Double
        var note: String?
        var added: Date
        var shouted: String { title.uppercased() }
        static let schema = Schema<Item>(primaryKey: \.id, indexes: [.on(\.score)])
    }

    /// Two properties whose coding keys are swapped: the field called "title" holds `name`.
    struct Swapped: Persistable, Equatable {
        var id: Int
        var title: String
        var name: String
        enum CodingKeys: String, CodingKey {
            case id
            case title = "name"
            case name = "title"
        }
        static let schema = Schema<Swapped>(primaryKey: \.id)
    }

    func makeStore(count: Int = 200) throws -> Store {
        let store = try Store.temporary(types: [Item.self, Swapped.self])
        var rng = SystemRandomNumberGenerator()
        try store.write { tx in
            for id in 0..<count {
                try tx.insert(
                    Item(
                        id: id, title: "item \(Int.random(in: 0..<50, using: &rng))", score: id % 17,
                        price: Double(id) * 1.25, note: id % 3 == 0 ? nil : "n\(id)",
                        added: Date(timeIntervalSince1970: Double(id) * 3600)))
                try tx.insert(Swapped(id: id, title: "title \(id)", name: "name \(id)"))
            }
        }
        return store
    }

    @Test func valuesAreWhatFetchGivesInEveryPlan() throws {
        let store = try makeStore()
        let queries: [Results<Item>] = [
            store.objects(Item.self),
            store.objects(Item.self).filter(#Predicate { $0.score >= 3 && $0.score < 9 }),
            store.objects(Item.self).filter(#Predicate { $0.score == 4 }).sorted(
                by: \.score, ascending: false),
            store.objects(Item.self).sorted(by: \.title).sorted(by: \.price, ascending: false),
            store.objects(Item.self).filter(#Predicate { $0.title.contains("1") }).limit(7).offset(2),
            store.objects(Item.self).sorted(by: \.id, ascending: false),
        ]
        for results in queries {
            let objects = try results.fetch()
            #expect(try results.values(of: \.title) == objects.map(\.title))
            #expect(try results.values(of: \.price) == objects.map(\.price))
            #expect(try results.values(of: \.note) == objects.map(\.note))
            #expect(try results.values(of: \.added) == objects.map(\.added))
            let pairs = try results.values(of: \.score, \.title)
            #expect(pairs.map(\.0) == objects.map(\.score) && pairs.map(\.1) == objects.map(\.title))
            #expect(try results.sum(of: \.score) == objects.reduce(0) { $0 + $1.score })
            #expect(try results.max(of: \.price) == objects.map(\.price).max())
            #expect(try results.min(of: \.title) == objects.map(\.title).min())
        }
    }

    @Test func aFieldThatCannotStandForItsPropertyFallsBackToTheObject() throws {
        let store = try makeStore(count: 20)
        // Renamed coding keys: the record's "title" is the `name` property.
        let swapped = try store.objects(Swapped.self).fetch()
        #expect(try store.objects(Swapped.self).values(of: \.title) == swapped.map(\.title))
        #expect(try store.objects(Swapped.self).values(of: \.name) == swapped.map(\.name))
        // A computed property has no field.
        let items = try store.objects(Item.self).fetch()
        #expect(try store.objects(Item.self).values(of: \.shouted) == items.map(\.shouted))
    }

    @Test func aWriteTransactionProjectsWhatItHasWritten() throws {
        let store = try makeStore(count: 10)
        try store.write { tx in
            try tx.update(Item.self, key: 3) { $0.title = "changed" }
            try tx.delete(Item.self, key: 4)
            let titles = try tx.objects(Item.self).values(of: \.title)
            #expect(titles == (try tx.objects(Item.self).fetch().map(\.title)))
            #expect(titles.contains("changed") && titles.count == 9)
        }
    }
}
