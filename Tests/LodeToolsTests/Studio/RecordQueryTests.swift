import Foundation
import Lode
import ModelStorage
import StoredQuery
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeStudio
@testable import LodeTestModels
@testable import LodeTestSupport

/// Lode Studio's tables a page at a time (`RecordQuery`): over random stores, filters and orders, the
/// pages read from cursor to cursor — in primary-key order, in an index's order, sorted, with a
/// reading budget that stops pages early — add up to exactly the records a whole read finds, in
/// order; a cursor kept across commits continues after its record in the new data.
@Suite struct RecordQueryTests {
    struct Part: Codable, Equatable {
        var label: String
        var sizes: [Int]
    }

    struct Item: Persistable, Equatable {
        var id: Int
        var name: String
        var rank: Int
        var tag: String?
        var part: Part
        static let schema = Schema<Item>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.name)])
    }

    static let filters: [String?] = [
        nil, "rank == 3", "rank >= 4 and rank < 8", "rank in [1, 5, 9]", "name hasPrefix \"b\"",
        "id > 100 and id <= 300", "id in [3, 50, 999, 7]", "tag == null", "tag != null and rank > 2",
        "part.label == \"p1\" or rank == 0", "not (rank < 9)", "name contains \"a\"",
    ]
    static let orders: [String?] = [
        nil, "id", "-id", "rank", "-rank", "name", "-name", "-name,id", "tag,-id", "part.label,rank",
    ]

    /// The whole answer: every record, filtered, in the query's order (primary-key bytes last).
    func expected(_ query: RecordQuery, in store: Store) throws -> [RecordRow] {
        let rows = try store.read { tx in
            try tx.storedRecords(of: "Item").map { RecordRow(key: $0.key, value: try $0.value(type: "Item")) }
        }
        return rows.filter { query.filter?.matches($0.value) ?? true }.sorted { lhs, rhs in
            for key in query.sort {
                let order = compare(lhs.value.value(atPath: key.field), rhs.value.value(atPath: key.field))
                if order != 0 { return key.ascending ? order < 0 : order > 0 }
            }
            // Ties in the first key's direction.
            return query.sort.first?.ascending ?? true
                ? lhs.key.lexicographicallyPrecedes(rhs.key) : rhs.key.lexicographicallyPrecedes(lhs.key)
        }
    }

    /// Every page from `cursor` on, concatenated.
    func allPages(
        _ query: RecordQuery, after cursor: PageCursor? = nil, limit: Int, budget: Int,
        gathering: Int = RecordQuery.gatheredKeys, in store: Store
    ) throws -> (rows: [RecordRow], plans: Set<String>) {
        var rows: [RecordRow] = []
        var plans: Set<String> = []
        var cursor = cursor
        for _ in 0..<10_000 {
            let page = try store.read { tx in
                try query.page(after: cursor, limit: limit, budget: budget, gathering: gathering, in: tx)
            }
            #expect(page.rows.count <= limit)
            // A page read in an order it can walk stops at its budget; a sorted one reads every candidate.
            if !page.plan.contains("sorted by") { #expect(page.examined <= budget) }
            plans.insert(page.plan)
            // No record comes twice (a cursor that does not move on would page forever).
            let keys = Set(rows.map(\.key))
            if let again = page.rows.first(where: { keys.contains($0.key) }) {
                Issue.record(
                    "\(KeyDescription.describe(again.key)) came again after the cursor (\(page.plan))")
                return (rows, plans)
            }
            rows += page.rows
            guard let next = page.next else { return (rows, plans) }
            // A cursor goes through its text form, as the browser keeps it.
            cursor = try PageCursor(token: next.token)
        }
        Issue.record("the pages never ended")
        return (rows, plans)
    }

    func makeStore(count: Int, seed: UInt64) throws -> (Store, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let store = try Store(at: directory.url, types: [Item.self])
        var random = SeededGenerator(seed: seed)
        try store.write { tx in
            for id in 0..<count { try tx.insert(Self.item(id, &random)) }
        }
        return (store, directory)
    }

    static func item(_ id: Int, _ random: inout SeededGenerator) -> Item {
        let names = ["alpha", "beta", "bravo", "charlie", "delta", "echo", "b", ""]
        return Item(
            id: id * 3 + Int.random(in: 0..<3, using: &random),
            name: names[Int.random(in: 0..<names.count, using: &random)]
                + "\(Int.random(in: 0..<5, using: &random))",
            rank: Int.random(in: 0..<12, using: &random),
            tag: Bool.random(using: &random) ? nil : "t\(Int.random(in: 0..<4, using: &random))",
            part: Part(label: "p\(Int.random(in: 0..<3, using: &random))", sizes: [id % 5, id % 7]))
    }

    @Test(arguments: [1, 2])
    func pagesAddUpToTheWholeAnswerInEveryOrder(seed: UInt64) throws {
        let (store, directory) = try makeStore(count: 240, seed: seed)
        _ = directory
        var random = SeededGenerator(seed: seed &* 7919)
        var planned: Set<String> = []
        for filter in Self.filters {
            for order in Self.orders {
                let query = try RecordQuery(type: "Item", filter: filter, sort: order)
                let limit = [3, 7, 25, 500][Int.random(in: 0..<4, using: &random)]
                let budget = [5, 40, 100_000][Int.random(in: 0..<3, using: &random)]
                // (An index range of more matches than `gathering` is walked in key order instead.)
                let gathering = [8, RecordQuery.gatheredKeys][Int.random(in: 0..<2, using: &random)]
                let (rows, plans) = try allPages(
                    query, limit: limit, budget: budget, gathering: gathering, in: store)
                let whole = try expected(query, in: store)
                #expect(
                    rows == whole,
                    "where \(filter ?? "-") sort \(order ?? "-") limit \(limit) budget \(budget): \(rows.count) rows, expected \(whole.count); \(plans)"
                )
                planned.formUnion(plans)
            }
        }
        // Every way of paging was taken.
        #expect(planned.contains { $0.contains("in primary-key order") && $0.hasPrefix("scan") })
        #expect(
            planned.contains { $0.contains("in primary-key order") && $0.hasPrefix("primary key of Item") })
        #expect(planned.contains { $0.contains("in primary-key order") && $0.hasPrefix("index Item.rank") })
        #expect(planned.contains { $0.contains("in the order of index Item.rank") })
        #expect(planned.contains { $0.contains("in the order of index Item.rank (rank), descending") })
        #expect(planned.contains { $0.contains("in primary-key order, descending") })
        #expect(
            planned.contains {
                $0.hasPrefix("index Item.rank") && $0.contains("in the order of index Item.rank")
            })
        #expect(planned.contains { $0.contains("sorted by -name,id") })
        // An index range of more matches than are gathered is walked in key order, the filter checked.
        let broad = try RecordQuery(type: "Item", filter: "rank >= 1", sort: nil)
        let (walked, walkedPlans) = try allPages(broad, limit: 30, budget: 100_000, gathering: 8, in: store)
        #expect(walked == (try expected(broad, in: store)))
        #expect(walkedPlans.contains { $0.contains("walked in primary-key order instead") }, "\(walkedPlans)")
    }

    /// Sorting descending by an index or by the primary key read every record (11.5 s a page at a
    /// million objects), and a filter on the field the page is sorted by read every candidate again to
    /// sort it: each walks the index or the records from the cursor and reads about a page.
    @Test func pagesInAnIndexOrPrimaryKeyOrderReadAboutAPageInEitherDirection() throws {
        let (store, directory) = try makeStore(count: 3_000, seed: 3)
        _ = directory
        for (filter, order, walk) in [
            (nil, "-id", "in primary-key order, descending"), (nil, "id", "in primary-key order"),
            (nil, "-rank", "in the order of index Item.rank (rank), descending"),
            (nil, "rank", "in the order of index Item.rank (rank)"),
            ("rank > 5", "rank", "in the order of index Item.rank (rank)"),
            ("rank > 5", "-rank", "in the order of index Item.rank (rank), descending"),
            ("rank in [2, 7]", "-rank", "in the order of index Item.rank (rank), descending"),
        ] as [(String?, String, String)] {
            let query = try RecordQuery(type: "Item", filter: filter, sort: order)
            var cursor: PageCursor?
            for pageNumber in 0..<4 {
                let page = try store.read { tx in try query.page(after: cursor, limit: 25, in: tx) }
                #expect(page.plan.hasSuffix(walk), "\(filter ?? "-") \(order): \(page.plan)")
                #expect(page.rows.count == 25)
                #expect(
                    page.examined <= 26, "\(filter ?? "-") \(order) page \(pageNumber): read \(page.examined)"
                )
                let next = try #require(page.next)
                cursor = next
            }
        }
    }

    @Test func aCursorKeptAcrossCommitsContinuesAfterItsRecord() throws {
        let (store, directory) = try makeStore(count: 300, seed: 11)
        _ = directory
        var random = SeededGenerator(seed: 99)
        for order in Self.orders {
            for filter in ["rank >= 2", nil, "name hasPrefix \"b\""] as [String?] {
                let query = try RecordQuery(type: "Item", filter: filter, sort: order)
                let first = try store.read { tx in try query.page(after: nil, limit: 40, in: tx) }
                let cursor = try #require(first.next)
                // Other commits: inserts, deletes and updates on both sides of the cursor.
                try store.write { tx in
                    for _ in 0..<30 {
                        let id = Int.random(in: 0..<1_000, using: &random)
                        switch Int.random(in: 0..<3, using: &random) {
                        case 0: try tx.upsert(Self.item(id / 3, &random))
                        case 1: try tx.delete(Item.self, key: id)
                        default:
                            guard var item = try tx.object(Item.self, key: id) else { continue }
                            item.rank = Int.random(in: 0..<12, using: &random)
                            try tx.upsert(item)
                        }
                    }
                }
                let (rest, _) = try allPages(query, after: cursor, limit: 33, budget: 100_000, in: store)
                // The new answer after the cursor's place (its values and key, as the cursor saw them).
                // (In primary-key order, asked for or not, the cursor holds the key alone.)
                let after = try expected(query, in: store).filter { row in
                    for (position, key) in query.sort.enumerated() where position < cursor.sortValues.count {
                        let order = compare(row.value.value(atPath: key.field), cursor.sortValues[position])
                        if order != 0 { return key.ascending ? order > 0 : order < 0 }
                    }
                    return query.sort.first?.ascending ?? true
                        ? cursor.key.lexicographicallyPrecedes(row.key)
                        : row.key.lexicographicallyPrecedes(cursor.key)
                }
                #expect(
                    rest.map(\.key) == after.map(\.key),
                    "where \(filter ?? "-") sort \(order ?? "-"): \(rest.count) rows after the cursor \(cursor.sortValues.map(\.json)) \(KeyDescription.describe(cursor.key)), expected \(after.count); first \(rest.prefix(3).map(\.value.json)) vs \(after.prefix(3).map(\.value.json))"
                )
            }
        }
    }

    @Test func badCursorsAndExpressionsAreClearErrors() throws {
        for token in [
            "", "%%%", "AAAA", String(repeating: "A", count: 5000), PageCursor(key: []).token + "x",
        ] {
            #expect(throws: QueryError.self, "\(token.prefix(20))") { _ = try PageCursor(token: token) }
        }
        let (store, directory) = try makeStore(count: 20, seed: 5)
        _ = directory
        // A cursor of another order.
        let sorted = try RecordQuery(type: "Item", filter: nil, sort: "name,rank")
        let keyOrder = try store.read { tx in
            try RecordQuery(type: "Item", filter: nil, sort: nil).page(after: nil, limit: 3, in: tx)
        }
        #expect(throws: QueryError.self) {
            try store.read { tx in try sorted.page(after: keyOrder.next, limit: 3, in: tx) }
        }
        for bad in [
            "rank >", "(((", "name == \"x", "rank ~ 3", String(repeating: "(", count: 500) + "rank == 1",
        ] {
            #expect(throws: ExpressionError.self, "\(bad.prefix(20))") {
                _ = try RecordQuery(type: "Item", filter: bad, sort: nil)
            }
        }
        #expect(throws: LodeError.self) {
            try store.read { tx in
                try RecordQuery(type: "Nothing", filter: nil, sort: nil).page(after: nil, limit: 3, in: tx)
            }
        }
    }
}
