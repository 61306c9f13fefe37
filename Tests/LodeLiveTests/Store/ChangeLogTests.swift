import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct ChangeLogTests {
    let tmp = TemporaryDirectory()

    /// The decoded change-log entry of `version`.
    func entry(_ store: Store, _ version: Int) throws -> (ChangeLogEntry, bytes: Int)? {
        try store.read { tx in
            guard let bytes = try tx.lmdb.get(ChangeLogEntry.key(for: version), in: store.changeLog!) else {
                return nil
            }
            return (try CBORDecoder().decode(ChangeLogEntry.self, from: bytes), bytes.count)
        }
    }

    /// Commits one-object writes until the next commit prunes; returns the id used next.
    func commitUntilAPrune(_ store: Store, from id: Int) throws -> Int {
        var id = id
        let before = store.changeLogStatistics.current.prunes
        while store.changeLogStatistics.current.prunes == before {
            let next = id
            try store.write { try $0.insert(Task(id: next, title: "t", rank: next, done: false, group: "x")) }
            id += 1
        }
        return id
    }

    /// A prune reads the version and time of the entries it removes and of the first one it keeps,
    /// and nothing else: a large entry is never decoded (it was, in full, at every 64th commit).
    @Test func aPruneReadsOnlyTheEntriesItRemoves() throws {
        let store = try Store(
            at: tmp.url,
            configuration: StoreConfiguration(
                durability: .noSync, changeLogRetention: .zero, changeLogBulkThreshold: 100_000),
            types: [Task.self])
        try store.write { tx in
            for id in 0..<20_000 {
                try tx.insert(Task(id: 1_000_000 + id, title: "bulk", rank: id, done: false, group: "b"))
            }
        }
        let bulkVersion = try store.read { $0.version }
        #expect(try entry(store, bulkVersion).map(\.bytes) ?? 0 > 400_000)
        var id = 0
        // A live result pinned just after the bulk load: the first prune removes everything before it.
        var pinned: LiveResults<Task>? = try store.objects(Task.self).live()
        id = try commitUntilAPrune(store, from: id)
        var (prunes, outcome) = store.changeLogStatistics.current
        #expect(prunes == 1)
        #expect(
            outcome.removed >= 1 && outcome.examined == outcome.removed + 1 && outcome.decoded == 0,
            "\(outcome)")
        #expect(try entry(store, bulkVersion) == nil)
        // Still pinned: the next prune reads one entry and removes none.
        id = try commitUntilAPrune(store, from: id)
        let second = store.changeLogStatistics.current.outcome
        #expect(second.examined - outcome.examined == 1 && second.removed == outcome.removed)
        // Released: the next prune removes every entry up to the commit making it.
        pinned = nil
        _ = try commitUntilAPrune(store, from: id)
        (prunes, outcome) = store.changeLogStatistics.current
        let removed = outcome.removed - second.removed
        #expect(prunes == 3)
        #expect(removed >= ChangeLogPruning.interval && outcome.examined - second.examined == removed + 1)
        #expect(outcome.decoded == 0)
        withExtendedLifetime(pinned) {}
    }

    /// A commit that changes more objects of a type than the threshold logs one bulk change for the
    /// type (its entry stays small); live results across it are exact, evaluated again.
    @Test func aCommitOfManyObjectsIsLoggedAsOneBulkChange() throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(changeLogBulkThreshold: 10),
            types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<5 { try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: "x")) }
        }
        let query = store.objects(Task.self).sorted(by: \.rank)
        let live = try query.live()
        let old = try live.results.fetch()
        let version = try store.write { tx in
            for id in 5..<55 {
                try tx.insert(Task(id: id, title: "t", rank: 60 - id, done: false, group: "x"))
            }
            try tx.update(Task.self, key: 2) { $0.rank = 100 }
            try tx.insert(Counter(name: "one", value: 1))
            return tx.version
        }
        let (logged, bytes) = try #require(try entry(store, version))
        #expect(
            logged.changes == [
                .init(type: "Task", key: Data(), op: .bulk, count: 51),
                .init(type: "Counter", key: Data(try KeyEncoder().encode("one")), op: .insert),
            ])
        #expect(bytes < 200)
        let change = try #require(try live.refresh())
        #expect(change.wasFullyReevaluated)
        let new = try query.copyingQuery(of: query).fetch()
        #expect(try live.results.fetch() == new)
        #expect(try replay(change, old: old, new: new) == new)
        let dump = try shell("'\(builtTool("lode-dump"))' changes '\(tmp.path)' --since \(version)")
        #expect(dump.status == 0, "\(dump.err)")
        #expect(dump.out.contains("bulk Task (51 objects)"), "\(dump.out)")
    }

    /// A store written by a Lode of format 1 is upgraded when opened for writing (format 2 adds bulk
    /// entries a format-1 reader cannot decode); opened read-only, it is left as it is.
    @Test func aFormatOneStoreIsUpgradedWhenOpenedForWriting() throws {
        do {
            let store = try Store(at: tmp.url, types: [Task.self])
            try store.write { try $0.insert(Task(id: 1, title: "t", rank: 1, done: false, group: "x")) }
            let environment = try store.environment()
            try environment.write { txn in
                try txn.put(try CBOREncoder().encode(1), forKey: Array("format".utf8), in: store.meta)
            }
            store.close()
        }
        func format(_ store: Store) throws -> Int? {
            try store.read { tx in
                try tx.lmdb.get(Array("format".utf8), in: store.meta).map {
                    try CBORDecoder().decode(Int.self, from: $0)
                }
            }
        }
        do {
            let reader = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
            #expect(try format(reader) == 1)
            reader.close()
        }
        let writer = try Store(at: tmp.url, types: [Task.self])
        #expect(try format(writer) == 2)
        #expect(try writer.read { try $0.count(Task.self) } == 1)
    }
}
