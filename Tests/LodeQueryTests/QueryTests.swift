import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// The property test's type. Its schema is chosen when a store registers it: one store gets every
/// index, the other none, so the same queries run through the planner's index paths and through
/// plain scans.
struct Item: Persistable, Equatable, CustomStringConvertible {
    var id: Int
    var a: Int
    var b: String
    var c: Double
    var d: Status
    var e: Date
    var flag: Bool
    var opt: Int?

    nonisolated(unsafe) static var useIndexes = true
    static let registration = NSLock()
    static let indexed = Schema<Item>(
        primaryKey: \.id,
        indexes: [.on(\.a), .on(\.b), .on(\.c), .on(\.d), .on(\.e), .on(\.d, \.a), .on(\.opt), .on(\.flag)])
    static let plain = Schema<Item>(primaryKey: \.id)
    static var schema: Schema<Item> { useIndexes ? indexed : plain }

    var description: String { "#\(id)(a: \(a), b: \(b), c: \(c), d: \(d), opt: \(String(describing: opt)))" }
}

struct QueryCase {
    let name: String
    let predicate: Predicate<Item>?
    let matches: (Item) -> Bool
}

@Suite struct QueryTests {
    let tmp = TemporaryDirectory()

    // MARK: Plans

    func todoStore() throws -> Store {
        let store = try Store(at: tmp.url, types: [Todo.self])
        try store.write { tx in
            for i in 0..<40 {
                try tx.insert(
                    Todo(
                        id: UUID(), title: "task \(i)", status: Status.allCases[i % 3], priority: i % 7,
                        due: Date(timeIntervalSince1970: Double(i * 1000))))
            }
        }
        return store
    }

    @Test func plansUseTheRightIndex() throws {
        let store = try todoStore()
        let all = store.objects(Todo.self)
        let open = Status.open
        let cutoff = Date(timeIntervalSince1970: 10_500)
        let statuses = [Status.open, Status.done]

        let byStatus = all.filter(#Predicate { $0.status == open })
        #expect(
            try byStatus.explain()
                == QueryPlan(
                    access: .indexLookup(index: "status", count: 1), ordering: .primaryKey(reversed: false),
                    rechecksPredicate: false))
        #expect(try byStatus.count == 14)

        let inList = all.filter(#Predicate { statuses.contains($0.status) })
        #expect(try inList.explain().access == .indexLookup(index: "status", count: 2))
        #expect(try inList.count == 27)

        let due = all.filter(#Predicate { $0.due! > cutoff })
        #expect(try due.explain().access == .fullScan)  // a force-unwrap is not a plain property

        let priorities = all.filter(#Predicate { $0.priority >= 2 && $0.priority < 4 })
        #expect(
            try priorities.explain()
                == QueryPlan(
                    access: .indexRange(index: "priority"), ordering: .primaryKey(reversed: false),
                    rechecksPredicate: false))
        #expect(try priorities.fetch().allSatisfy { $0.priority == 2 || $0.priority == 3 })
        #expect(try priorities.count == 12)

        let compound = all.filter(#Predicate { $0.status == open && $0.priority > 3 })
        #expect(try compound.explain().access == .indexRange(index: "status+priority"))
        #expect(try compound.fetch().allSatisfy { $0.status == .open && $0.priority > 3 })

        let prefix = all.filter(#Predicate { $0.title.starts(with: "task 1") })
        #expect(try prefix.explain().access == .indexPrefix(index: "title"))
        #expect(try prefix.explain().rechecksPredicate)
        #expect(try prefix.count == 11)

        let unique = all.filter(#Predicate { $0.title == "task 7" })
        #expect(try unique.explain().access == .indexLookup(index: "title", count: 1))
        #expect(try unique.map(\.priority) == [0])

        let opaque = all.filter(#Predicate { $0.priority * 2 == 6 })
        #expect(
            try opaque.explain()
                == QueryPlan(
                    access: .fullScan, ordering: .primaryKey(reversed: false), rechecksPredicate: true))
        #expect(try opaque.count == 6)
    }

    @Test func plansAnswerSortsFromIndexesWhenOrdersAgree() throws {
        let store = try todoStore()
        let all = store.objects(Todo.self)
        let byTitle = all.sorted(by: [SortDescriptor(\Todo.title, order: .reverse)])
        #expect(
            try byTitle.explain()
                == QueryPlan(
                    access: .fullScan, ordering: .index("title", reversed: true), rechecksPredicate: false))
        #expect(try byTitle.map(\.title) == (0..<40).map { "task \($0)" }.sorted().reversed())

        // A string comparator is its own order, not the index's: sorted in memory.
        let descriptor = SortDescriptor(\Todo.title, comparator: .lexical)
        let lexical = all.sorted(by: [descriptor])
        #expect(try lexical.explain().ordering == QueryPlan.Ordering.inMemory)
        let titles = try all.fetch().sorted { descriptor.compare($0, $1) == .orderedAscending }.map(\.title)
        #expect(try lexical.map { $0.title } == titles)

        // An enum's `<` is its own: sorted in memory even though `status` is indexed.
        let byStatus = all.sorted(by: \.status)
        #expect(try byStatus.explain().ordering == .inMemory)

        // Filter by one index, sort by another: the filter's index wins, the sort is done in memory.
        let open = Status.open
        let mixed = all.filter(#Predicate { $0.status == open }).sorted(by: \.priority, ascending: false)
        #expect(
            try mixed.explain()
                == QueryPlan(
                    access: .indexLookup(index: "status", count: 1), ordering: .inMemory,
                    rechecksPredicate: false))
        #expect(try mixed.map(\.priority) == mixed.map(\.priority).sorted(by: >))

        let firstThree = all.sorted(by: \.priority).limit(3)
        #expect(try firstThree.map(\.priority) == [0, 0, 0])
    }

    @Test func primaryKeyPlans() throws {
        let store = try Store(at: tmp.url)
        try store.write { tx in for i in 0..<30 { try tx.insert(Counter(name: "c\(i)", value: i)) } }
        let all = store.objects(Counter.self)
        let one = all.filter(#Predicate { $0.name == "c7" })
        #expect(
            try one.explain()
                == QueryPlan(
                    access: .primaryKeyLookup(count: 1), ordering: .primaryKey(reversed: false),
                    rechecksPredicate: false))
        #expect(try one.map(\.value) == [7])
        let names = ["c1", "c2", "nope"]
        #expect(try all.filter(#Predicate { names.contains($0.name) }).map(\.value) == [1, 2])
        let range = all.filter(#Predicate { $0.name > "c25" })
        #expect(try range.explain().access == .primaryKeyRange)
        #expect(
            try range.map(\.name) == ["c26", "c27", "c28", "c29", "c3", "c4", "c5", "c6", "c7", "c8", "c9"])
        #expect(try all.sorted(by: \.name, ascending: false).first?.name == "c9")
        #expect(
            try all.sorted(by: \.name, ascending: false).explain().ordering == .primaryKey(reversed: true))
    }

    // MARK: The property test

    func makeStore(_ name: String, indexes: Bool) throws -> Store {
        Item.registration.lock()
        defer { Item.registration.unlock() }
        Item.useIndexes = indexes
        return try Store(at: tmp.url.appendingPathComponent(name), types: [Item.self])
    }

    func randomItem(id: Int, using rng: inout some RandomNumberGenerator) -> Item {
        let words = ["", "a", "ab", "abc", "b", "ba", "é", "éa", "日本", "Z", "z"]
        let dates = (0..<6).map { Date(timeIntervalSinceReferenceDate: Double($0) * 86_400.5) }
        return Item(
            id: id, a: Int.random(in: -20...20, using: &rng), b: words.randomElement(using: &rng)!,
            c: [Double.random(in: -100...100, using: &rng), 0, -0.5, 1.5].randomElement(using: &rng)!,
            d: Status.allCases.randomElement(using: &rng)!, e: dates.randomElement(using: &rng)!,
            flag: Bool.random(using: &rng),
            opt: Bool.random(using: &rng) ? Int.random(in: -5...5, using: &rng) : nil)
    }

    func randomCase(using rng: inout some RandomNumberGenerator) -> QueryCase {
        let x = Int.random(in: -22...22, using: &rng)
        let y = Int.random(in: -22...22, using: &rng)
        let s = ["", "a", "ab", "b", "é", "z", "日"].randomElement(using: &rng)!
        let st = Status.allCases.randomElement(using: &rng)!
        let dbl = Double.random(in: -100...100, using: &rng)
        let date = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...6, using: &rng)) * 86_400.5)
        let set = (0..<Int.random(in: 0...4, using: &rng)).map { _ in Int.random(in: -22...22, using: &rng) }
        let ids = (0..<Int.random(in: 0...5, using: &rng)).map { _ in Int.random(in: 0..<1500, using: &rng) }
        let o: Int? = Bool.random(using: &rng) ? nil : Int.random(in: -5...5, using: &rng)
        let cases: [QueryCase] = [
            QueryCase(name: "all", predicate: nil, matches: { _ in true }),
            QueryCase(name: "a == \(x)", predicate: #Predicate { $0.a == x }, matches: { $0.a == x }),
            QueryCase(name: "a > \(x)", predicate: #Predicate { $0.a > x }, matches: { $0.a > x }),
            QueryCase(name: "a <= \(x)", predicate: #Predicate { $0.a <= x }, matches: { $0.a <= x }),
            QueryCase(
                name: "\(x) <= a < \(y)", predicate: #Predicate { $0.a >= x && $0.a < y },
                matches: { $0.a >= x && $0.a < y }),
            QueryCase(
                name: "a in \(set)", predicate: #Predicate { set.contains($0.a) },
                matches: { set.contains($0.a) }),
            QueryCase(name: "b == \(s)", predicate: #Predicate { $0.b == s }, matches: { $0.b == s }),
            QueryCase(name: "b < \(s)", predicate: #Predicate { $0.b < s }, matches: { $0.b < s }),
            QueryCase(name: "b >= \(s)", predicate: #Predicate { $0.b >= s }, matches: { $0.b >= s }),
            QueryCase(
                name: "b starts \(s)", predicate: #Predicate { $0.b.starts(with: s) },
                matches: { $0.b.starts(with: s) }),
            QueryCase(name: "c > \(dbl)", predicate: #Predicate { $0.c > dbl }, matches: { $0.c > dbl }),
            QueryCase(name: "c == 0", predicate: #Predicate { $0.c == 0 }, matches: { $0.c == 0 }),
            QueryCase(name: "d == \(st)", predicate: #Predicate { $0.d == st }, matches: { $0.d == st }),
            QueryCase(
                name: "d == \(st) && a > \(x)", predicate: #Predicate { $0.d == st && $0.a > x },
                matches: { $0.d == st && $0.a > x }),
            QueryCase(
                name: "d == \(st) && a == \(x)", predicate: #Predicate { $0.d == st && $0.a == x },
                matches: { $0.d == st && $0.a == x }),
            QueryCase(name: "e >= date", predicate: #Predicate { $0.e >= date }, matches: { $0.e >= date }),
            QueryCase(name: "e == date", predicate: #Predicate { $0.e == date }, matches: { $0.e == date }),
            QueryCase(
                name: "flag && a <= \(x)", predicate: #Predicate { $0.flag == true && $0.a <= x },
                matches: { $0.flag && $0.a <= x }),
            QueryCase(
                name: "a > \(x) || b == \(s)", predicate: #Predicate { $0.a > x || $0.b == s },
                matches: { $0.a > x || $0.b == s }),
            QueryCase(
                name: "!(a == \(x))", predicate: #Predicate { !($0.a == x) }, matches: { !($0.a == x) }),
            QueryCase(
                name: "opt == \(String(describing: o))", predicate: #Predicate { $0.opt == o },
                matches: { $0.opt == o }),
            QueryCase(
                name: "id == \(ids.first ?? 0)", predicate: #Predicate { $0.id == (ids.first ?? 0) },
                matches: { $0.id == (ids.first ?? 0) }),
            QueryCase(
                name: "id in \(ids)", predicate: #Predicate { ids.contains($0.id) },
                matches: { ids.contains($0.id) }),
            QueryCase(
                name: "\(x * 70) < id <= \(y * 70)",
                predicate: #Predicate { $0.id > x * 70 && $0.id <= y * 70 },
                matches: { $0.id > x * 70 && $0.id <= y * 70 }),
            QueryCase(
                name: "a > \(x) && b starts \(s) && c < \(dbl)",
                predicate: #Predicate { $0.a > x && $0.b.starts(with: s) && $0.c < dbl },
                matches: { $0.a > x && $0.b.starts(with: s) && $0.c < dbl }),
        ]
        return cases.randomElement(using: &rng)!
    }

    func randomSort(using rng: inout some RandomNumberGenerator) -> [SortDescriptor<Item>] {
        let choices: [[SortDescriptor<Item>]] = [
            [], [SortDescriptor(\Item.a)], [SortDescriptor(\Item.a, order: .reverse)],
            [SortDescriptor(\Item.b)],
            [SortDescriptor(\Item.b, order: .reverse)], [SortDescriptor(\Item.c)],
            [SortDescriptor(\Item.e, order: .reverse)],
            [SortDescriptor(\Item.id, order: .reverse)], [SortDescriptor(\Item.d)],
            [SortDescriptor(\Item.a), SortDescriptor(\Item.b, order: .reverse)],
            [SortDescriptor(\Item.b, comparator: .lexical)],
        ]
        return choices.randomElement(using: &rng)!
    }

    /// What a brute-force filter and sort of the same data gives (ties in primary-key order).
    func expected(
        _ data: [Int: Item], _ query: QueryCase, _ sort: [SortDescriptor<Item>], offset: Int, limit: Int?
    ) -> [Item] {
        var result = data.values.sorted { $0.id < $1.id }.filter(query.matches).sortedStably(by: sort)
        result = Array(result.dropFirst(offset))
        if let limit { result = Array(result.prefix(limit)) }
        return result
    }

    @Test func randomQueriesMatchABruteForceFilterAndSort() throws {
        var rng = SeededGenerator(seed: 0x10de)
        let indexed = try makeStore("indexed", indexes: true)
        let plain = try makeStore("plain", indexes: false)
        var data: [Int: Item] = [:]
        // Random writes: inserts, updates, deletes, in batches.
        // 4,000 random writes over 1,500 keys.
        for _ in 0..<40 {
            var batch: [(Item?, Int)] = []
            for _ in 0..<100 {
                let id = Int.random(in: 0..<1500, using: &rng)
                if data[id] != nil && Int.random(in: 0..<4, using: &rng) == 0 {
                    data[id] = nil
                    batch.append((nil, id))
                } else {
                    let item = randomItem(id: id, using: &rng)
                    data[id] = item
                    batch.append((item, id))
                }
            }
            for store in [indexed, plain] {
                try store.write { tx in
                    for (item, id) in batch {
                        if let item { try tx.upsert(item) } else { try tx.delete(Item.self, key: id) }
                    }
                }
            }
        }
        #expect(try indexed.read { try $0.count(Item.self) } == data.count)
        var indexedPlans = Set<String>()
        for round in 0..<300 {
            let query = randomCase(using: &rng)
            let sort = randomSort(using: &rng)
            let offset = Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 0...20, using: &rng) : 0
            let limit: Int? =
                Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 0...30, using: &rng) : nil
            let want = expected(data, query, sort, offset: offset, limit: limit).map(\.id)
            for (label, store) in [("indexed", indexed), ("plain", plain)] {
                var results = store.objects(Item.self)
                if let predicate = query.predicate { results = results.filter(predicate) }
                if !sort.isEmpty { results = results.sorted(by: sort) }
                results = results.offset(offset)
                if let limit { results = results.limit(limit) }
                let got = try results.fetch().map(\.id)
                let plan = try results.explain()
                #expect(
                    got == want,
                    "round \(round) \(label): \(query.name) sorted \(sort.map { "\($0.keyPath.map { "\($0)" } ?? "?") \($0.order)" }) offset \(offset) limit \(String(describing: limit)); plan \(plan)"
                )
                if label == "plain" {
                    #expect(plan.access == .fullScan || plan.access.isPrimaryKey)
                } else {
                    indexedPlans.insert("\(plan.access)")
                }
                // The same query inside a read transaction agrees.
                if round % 10 == 0 {
                    let inside = try store.read { tx in
                        var results = tx.objects(Item.self)
                        if let predicate = query.predicate { results = results.filter(predicate) }
                        return try results.sorted(by: sort).offset(offset).limit(limit ?? .max).fetch().map(
                            \.id)
                    }
                    #expect(inside == want, "in a transaction, round \(round) \(label): \(query.name)")
                }
            }
        }
        // The random queries exercised the index paths, not just scans.
        #expect(indexedPlans.count >= 6, "\(indexedPlans)")
    }
}

extension QueryPlan.Access {
    var isPrimaryKey: Bool {
        switch self {
        case .primaryKeyLookup, .primaryKeyRange: return true
        default: return false
        }
    }
}
