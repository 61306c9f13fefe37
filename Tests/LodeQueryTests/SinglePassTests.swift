import Foundation
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Results that walk the records in key order decode (or project) each record where the walk finds
/// it, and a filter no index covers is checked there too: what they give must be what a read by key
/// gives, and the results stay the one evaluation every later read sees.
@Suite struct SinglePassTests {
    struct Entry: Persistable, Equatable {
        var id: Int
        var name: String
        var size: Int
        static let schema = Schema<Entry>(primaryKey: \.id, indexes: [.on(\.size)])
    }

    /// Decodes like synthesized `Codable`, and runs `onDecode` (when set) before each decode.
    struct Hooked: Persistable, Equatable {
        var id: Int
        var name: String
        static let schema = Schema<Hooked>(primaryKey: \.id)
        static let onDecode = Mutex<(@Sendable () throws -> Void)?>(nil)

        init(id: Int, name: String) {
            self.id = id
            self.name = name
        }

        init(from decoder: any Decoder) throws {
            if let hook = Self.onDecode.withLock({ hook in
                defer { hook = nil }
                return hook
            }) {
                try hook()
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int.self, forKey: .id)
            name = try container.decode(String.self, forKey: .name)
        }
    }

    func makeStore(count: Int) throws -> (Store, [Entry]) {
        let store = try Store.temporary(types: [Entry.self, Hooked.self])
        var rng = SystemRandomNumberGenerator()
        let entries = (0..<count).shuffled(using: &rng).map {
            Entry(id: $0 * 3, name: "entry \($0)", size: Int.random(in: 0..<40, using: &rng))
        }
        try store.write { tx in
            for entry in entries { try tx.insert(entry) }
        }
        return (store, entries.sorted { $0.id < $1.id })
    }

    @Test func aWalkInKeyOrderGivesEveryObjectOnceInOrder() throws {
        let (store, entries) = try makeStore(count: 500)
        let fresh = store.objects(Entry.self)
        #expect(try fresh.fetch() == entries)
        // The walk kept the evaluation: later reads see the same objects, by position and by key.
        #expect(try fresh.count == entries.count)
        #expect(try fresh[137] == entries[137])
        #expect(try fresh.fetch() == entries)
        let inTransaction = try store.read { tx in
            (try tx.objects(Entry.self).fetch(), try tx.objects(Entry.self).values(of: \.name))
        }
        #expect(inTransaction.0 == entries && inTransaction.1 == entries.map(\.name))
        // Projections walk once on fresh results and read by key on evaluated ones: the same values.
        let projected = store.objects(Entry.self)
        #expect(try projected.values(of: \.size) == entries.map(\.size))
        #expect(try projected.values(of: \.size) == entries.map(\.size))
        let pairs = try projected.values(of: \.name, \.size)
        #expect(pairs.map(\.0) == entries.map(\.name) && pairs.map(\.1) == entries.map(\.size))
        // A write transaction's own writes are in its walk.
        try store.write { tx in
            try tx.insert(Entry(id: 1, name: "new", size: 1))
            try tx.delete(Entry.self, key: 0)
            let expected = ([Entry(id: 1, name: "new", size: 1)] + entries.dropFirst()).sorted {
                $0.id < $1.id
            }
            #expect(try tx.objects(Entry.self).fetch() == expected)
            #expect(try tx.objects(Entry.self).values(of: \.id) == expected.map(\.id))
        }
    }

    @Test func cutSortedOrReversedResultsAreNotTakenFromTheWalk() throws {
        let (store, entries) = try makeStore(count: 300)
        let all = store.objects(Entry.self)
        #expect(try all.limit(10).offset(5).fetch() == Array(entries[5..<15]))
        #expect(try all.sorted(by: \.id, ascending: false).fetch() == entries.reversed())
        #expect(try all.sorted(by: \.name).fetch().map(\.name) == entries.map(\.name).sorted())
        #expect(
            try all.filter(#Predicate { $0.size < 10 }).fetch() == entries.filter { $0.size < 10 })
    }

    @Test func aFilterNoIndexCoversIsCheckedInTheWalk() throws {
        let (store, entries) = try makeStore(count: 400)
        let filtered = store.objects(Entry.self).filter(#Predicate { $0.name.contains("7") })
        #expect(try filtered.filter(#Predicate { _ in true }).explain().access == .fullScan)
        let expected = entries.filter { $0.name.contains("7") }
        #expect(try filtered.fetch() == expected)
        #expect(try filtered.count == expected.count)
        #expect(try filtered.values(of: \.id) == expected.map(\.id))
        let inTransaction = try store.read { tx in
            try tx.objects(Entry.self).filter(#Predicate { $0.name.contains("7") }).fetch()
        }
        #expect(inTransaction == expected)
    }

    /// Two readers of the same fresh results: the one that keeps its evaluation first decides what
    /// every reader of them sees, so a fetch whose own walk lost returns the kept version's objects.
    @Test func aWalkThatLosesToAnotherEvaluationReturnsTheKeptOne() throws {
        let (store, results) = try twentyHooked()
        // A copy shares the evaluation.
        let otherCount = evaluateDuringTheFirstDecode(results, in: store)
        let fetched = try results.fetch()
        #expect(otherCount.value.withLock { $0 } == 21)
        #expect(fetched.count == 21)
        #expect(fetched.last == Hooked(id: 100, name: "late"))
        #expect(try results.count == fetched.count)
    }

    /// The same race for a projection: the values are those of the kept evaluation, each once.
    @Test func aProjectionWhoseWalkLosesGivesTheKeptValuesOnce() throws {
        let (store, results) = try twentyHooked()
        let otherCount = evaluateDuringTheFirstDecode(results, in: store)
        let names = try results.values(of: \.name)
        #expect(otherCount.value.withLock { $0 } == 21)
        #expect(names == (0..<20).map { "h\($0)" } + ["late"])
        #expect(try results.count == names.count)
    }

    /// A store of twenty `Hooked` objects and results of all of them.
    private func twentyHooked() throws -> (Store, Results<Hooked>) {
        let store = try Store.temporary(types: [Hooked.self])
        try store.write { tx in
            for id in 0..<20 { try tx.insert(Hooked(id: id, name: "h\(id)")) }
        }
        return (store, store.objects(Hooked.self))
    }

    /// Makes the next decode of a `Hooked` (during the first walk, on this thread) wait for another
    /// thread to commit one more object and evaluate `copy` (a copy of the walking results, sharing
    /// their evaluation) on the new version. Returns where that thread puts the count it saw.
    private func evaluateDuringTheFirstDecode(_ copy: Results<Hooked>, in store: Store) -> SeenCount {
        let otherCount = SeenCount()
        Hooked.onDecode.withLock { hook in
            hook = {
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    defer { done.signal() }
                    do {
                        try store.write { tx in try tx.insert(Hooked(id: 100, name: "late")) }
                        let count = try copy.count
                        otherCount.value.withLock { $0 = count }
                    } catch {
                        Issue.record(error)
                    }
                }
                done.wait()
            }
        }
        return otherCount
    }

    /// What the other thread of a race saw.
    final class SeenCount: Sendable {
        let value = Mutex<Int?>(nil)
    }
}
