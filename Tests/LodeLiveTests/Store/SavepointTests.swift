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

@Suite struct SavepointTests {
    struct Refused: Error {}

    @Test func readsInsideAWriteSeeACommittedSavepointAndNothingOfARolledBackOne() throws {
        let store = try Store.temporary(types: [Task.self])
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
            try tx.savepoint { tx in
                try tx.insert(Task(id: 2, title: "b", rank: 2, done: true, group: "y"))
                #expect(try tx.objects(Task.self).filter(#Predicate { $0.done }).fetch().map(\.id) == [2])
            }
            #expect(throws: Refused.self) {
                try tx.savepoint { tx in
                    try tx.update(Task.self, key: 1) { $0.group = "y" }
                    _ = try tx.delete(Task.self, key: 2)
                    try tx.insert(Task(id: 3, title: "c", rank: 0, done: true, group: "y"))
                    #expect(
                        try tx.objects(Task.self).filter(#Predicate { $0.group == "y" }).fetch().map(\.id)
                            == [1, 3])
                    throw Refused()
                }
            }
            // The rolled-back savepoint left no trace in records, indexes or counts.
            #expect(try tx.count(Task.self) == 2)
            #expect(try tx.objects(Task.self).filter(#Predicate { $0.group == "y" }).fetch().map(\.id) == [2])
            #expect(try tx.objects(Task.self).sorted(by: \.rank).fetch().map(\.id) == [1, 2])
            #expect(try tx.object(Task.self, key: 3) == nil)
            #expect(try tx.object(Task.self, key: 1)?.group == "x")
        }
        #expect(try store.objects(Task.self).filter(#Predicate { $0.done }).fetch().map(\.id) == [2])
    }

    @Test func theOuterTransactionWaitsWhileASavepointIsOpen() throws {
        let store = try Store.temporary(types: [Task.self])
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        try store.write { outer in
            try outer.savepoint { inner in
                try inner.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
                for error in [
                    #expect(throws: (any Error).self) {
                        try outer.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x"))
                    },
                    #expect(throws: (any Error).self) { try outer.count(Task.self) },
                ] {
                    #expect("\(error.map { "\($0)" } ?? "")".contains("the transaction has an active child"))
                }
            }
            try outer.insert(Task(id: 3, title: "c", rank: 3, done: false, group: "x"))
        }
        #expect(try store.objects(Task.self).fetch().map(\.id) == [1, 3])
        // Observers are told of exactly what was committed.
        let change = try #require(try live.refresh())
        #expect(change.insertions == [0, 1])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func withWriteMapDurabilityASavepointIsRefusedBeforeItRuns() throws {
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .writeMapNoSync), types: [Task.self])
        var ran = false
        try store.write { tx in
            let error = lodeError { try tx.savepoint { _ in ran = true } }
            guard case .storage(let failure) = error else {
                Issue.record("expected a storage error, got \(String(describing: error))")
                return
            }
            #expect(failure.message.contains("nested transactions are not available"))
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))  // still usable
        }
        #expect(!ran)
        #expect(try store.objects(Task.self).fetch().count == 1)
    }

    /// Nested savepoints, each randomly committed or rolled back, and outer writes randomly thrown
    /// away, compared after every step with an in-memory model of the records and of what the indexes
    /// must answer; `checkIntegrity` clean and an observer's change replaying exactly after every
    /// outer write.
    @Test(arguments: [0x5A7E_0001, 0x5A7E_0002] as [UInt64])
    func randomNestedSavepointsMatchAModel(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let store = try Store.temporary(types: [Task.self])
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        var committed: [Int: Task] = [:]
        var rows: [Task] = []
        var savepoints = (committed: 0, rolledBack: 0, deepest: 0)

        func expectMatches(_ tx: LodeStore.Transaction, _ model: [Int: Task]) throws {
            #expect(try tx.count(Task.self) == model.count)
            let group = ["a", "b", "c"].randomElement(using: &rng)!
            #expect(
                try tx.objects(Task.self).filter(#Predicate { $0.group == group }).fetch().map(\.id).sorted()
                    == model.values.filter { $0.group == group }.map(\.id).sorted())
            #expect(
                try tx.objects(Task.self).filter(#Predicate { $0.done }).fetch().map(\.id).sorted()
                    == model.values.filter(\.done).map(\.id).sorted())
            #expect(
                try tx.objects(Task.self).sorted(by: \.rank).fetch().map(\.rank)
                    == model.values.map(\.rank).sorted())
        }

        func edit(_ tx: LodeStore.WriteTransaction, _ model: inout [Int: Task], depth: Int) throws {
            savepoints.deepest = max(savepoints.deepest, depth)
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let id = Int.random(in: 0..<30, using: &rng)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<3:
                    let object = Task(
                        id: id, title: "t\(id)", rank: Int.random(in: 0..<100, using: &rng),
                        done: Bool.random(using: &rng), group: ["a", "b", "c"].randomElement(using: &rng)!)
                    try tx.upsert(object)
                    model[id] = object
                case 3..<5:
                    #expect(try tx.delete(Task.self, key: id) == (model.removeValue(forKey: id) != nil))
                case 5..<7 where model[id] != nil:
                    let rank = Int.random(in: 0..<100, using: &rng)
                    try tx.update(Task.self, key: id) { $0.rank = rank }
                    model[id]?.rank = rank
                case 7..<9 where depth < 5:
                    var inner = model
                    let rollsBack = Int.random(in: 0..<3, using: &rng) == 0
                    do {
                        try tx.savepoint { savepoint in
                            try edit(savepoint, &inner, depth: depth + 1)
                            try expectMatches(savepoint, inner)
                            if rollsBack { throw Refused() }
                        }
                        model = inner
                        savepoints.committed += 1
                    } catch is Refused {
                        savepoints.rolledBack += 1
                    }
                    try expectMatches(tx, model)
                default:
                    try expectMatches(tx, model)
                }
            }
        }

        for _ in 0..<40 {
            var model = committed
            let throwsAway = Int.random(in: 0..<6, using: &rng) == 0
            do {
                try store.write { tx in
                    try edit(tx, &model, depth: 0)
                    try expectMatches(tx, model)
                    if throwsAway { throw Refused() }
                }
                committed = model
            } catch is Refused {}
            try store.read { tx in
                try expectMatches(tx, committed)
                #expect(try tx.checkIntegrity().problems == [])
            }
            let fresh = try store.objects(Task.self).sorted(by: \.rank).fetch()
            #expect(Dictionary(uniqueKeysWithValues: fresh.map { ($0.id, $0) }) == committed)
            if let change = try live.refresh() {
                rows = try replay(change, old: rows, new: fresh)
            }
            #expect(rows.map(\.id) == fresh.map(\.id))
        }
        #expect(savepoints.committed > 20)
        #expect(savepoints.rolledBack > 5)
        #expect(savepoints.deepest >= 3)
    }
}
