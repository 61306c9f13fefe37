import Foundation
import ModelStorage
import Testing

struct Model: EntityIdentifiable, Hashable, CustomStringConvertible {
    var id: Int
    var value: String
    var identifier: AnyHashable { id }
    var description: String { "\(id):\(value)" }
}

/// Applies single-section operations to `old` through a list mirror and returns the result.
func replay<T: Equatable>(_ operations: [SingleSectionOperation], from old: [T], to new: [T]) throws -> [T] {
    let update = StorageUpdate()
    for operation in operations {
        switch operation {
        case .delete(let index): update.objectChanges.append((.delete, [IndexPath(item: index, section: 0)]))
        case .insert(let index): update.objectChanges.append((.insert, [IndexPath(item: index, section: 0)]))
        case .move(let from, let to):
            update.objectChanges.append(
                (.move, [IndexPath(item: from, section: 0), IndexPath(item: to, section: 0)]))
        case .update(let index): update.objectChanges.append((.update, [IndexPath(item: index, section: 0)]))
        }
    }
    var mirror = ListMirror(sections: [old])
    try mirror.apply(update, dataSource: [new])
    return mirror.sections[0]
}

@Suite struct DiffingTests {
    @Test func heckelReportsMovesAndUpdates() {
        let old = [
            Model(id: 1, value: "a"), Model(id: 2, value: "b"), Model(id: 3, value: "c"),
            Model(id: 4, value: "d"),
        ]
        let new = [
            Model(id: 3, value: "c"), Model(id: 1, value: "a"), Model(id: 2, value: "B"),
            Model(id: 5, value: "e"),
        ]
        #expect(
            HeckelDiffer().diff(from: old, to: new) == [
                .delete(3), .insert(3), .move(from: 2, to: 0), .update(1),
            ])
        #expect(HeckelDiffer().diff([1, 2, 3], [3, 1, 2]) == [.move(from: 2, to: 0)])
        #expect(HeckelDiffer().diff([Int](), [1]) == [.insert(0)])
        #expect(HeckelDiffer().diff([1, 1, 2], [1, 2]) == [.delete(1)])
    }

    @Test func myersFindsAShortestEditScript() {
        // The paper's example: D = 5.
        #expect(MyersDiffer().diff(Array("ABCABBA"), Array("CBABAC")).count == 5)
        #expect(MyersDiffer().diff([1, 2, 3], [1, 2, 3]).isEmpty)
        #expect(MyersDiffer().diff([1, 2, 3], [1, 3]) == [.delete(1)])
        #expect(MyersDiffer().diff([Int](), [1, 2]) == [.insert(0), .insert(1)])
    }

    @Test(arguments: [7, 8, 9])
    func randomArrayPairsReplayExactly(seed: UInt64) throws {
        var rng = SplitMix(seed)
        for round in 0..<300 {
            let size = Int.random(in: 0...40, using: &rng)
            let alphabet = Int.random(in: 1...30, using: &rng)
            let old = (0..<size).map { _ in Int.random(in: 0..<alphabet, using: &rng) }
            var new = old.filter { _ in Int.random(in: 0..<4, using: &rng) != 0 }
            for _ in 0..<Int.random(in: 0...8, using: &rng) {
                new.insert(
                    Int.random(in: 0..<alphabet, using: &rng), at: Int.random(in: 0...new.count, using: &rng))
            }
            if Bool.random(using: &rng) { new.shuffle(using: &rng) }
            let myers = MyersDiffer().diff(old, new)
            #expect(try replay(myers, from: old, to: new) == new, "round \(round) myers \(old) → \(new)")
            // Shortest: never more edits than the standard library's Myers.
            #expect(myers.count <= new.difference(from: old).count, "round \(round)")
            let heckel = HeckelDiffer().diff(old, new)
            #expect(try replay(heckel, from: old, to: new) == new, "round \(round) heckel \(old) → \(new)")
            // With identities and values: updates are replayed from the new values.
            let oldModels = Array(Set(old)).map { Model(id: $0, value: "v\($0)") }.shuffled(using: &rng)
            let newModels =
                oldModels.filter { _ in Bool.random(using: &rng) }.map {
                    Int.random(in: 0..<3, using: &rng) == 0 ? Model(id: $0.id, value: $0.value + "!") : $0
                }.shuffled(using: &rng) + [Model(id: 1000 + round, value: "new")]
            let operations = HeckelDiffer().diff(from: oldModels, to: newModels)
            #expect(
                try replay(operations, from: oldModels, to: newModels) == newModels, "round \(round) models")
        }
    }

    @Test func largeInputsStayFast() {
        let old = Array(0..<100_000)
        var new = old
        for index in stride(from: 0, to: new.count, by: 50) { new[index] = -index - 1 }
        #expect(MyersDiffer().diff(old, new).count == 4000)
        #expect(HeckelDiffer().diff(old, new).count == 4000)
    }
}

@Suite struct SingleSectionStorageTests {
    @Test func setItemsDeliversTheDiffAndTheMirrorAgrees() {
        let storage = SingleSectionHashableStorage(items: [
            Model(id: 1, value: "a"), Model(id: 2, value: "b"),
        ])
        let delegate = MirroringDelegate<Model>(storage)
        storage.delegate = delegate
        storage.setItems([Model(id: 2, value: "B"), Model(id: 1, value: "a"), Model(id: 3, value: "c")])
        // 1 keeps its place; 2 moved and changed, which a view cannot do in one step: delete + insert.
        #expect(changes(delegate.lastUpdate) == ["delete [[0, 1]]", "insert [[0, 0]]", "insert [[0, 2]]"])
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
        storage.setItems(storage.items)
        #expect(delegate.updates.count == 1)  // no change, no update
    }

    @Test func accumulationStrategies() {
        let old = [Model(id: 1, value: "foo"), Model(id: 2, value: "bar")]
        let new = [Model(id: 1, value: "bar"), Model(id: 3, value: "xyz")]
        #expect(
            AdditiveAccumulationStrategy().accumulate(oldItems: old, newItems: new).map(\.id) == [1, 2, 1, 3])
        #expect(
            UpdateOldValuesAccumulationStrategy().accumulate(oldItems: old, newItems: new).map(\.description)
                == ["1:bar", "2:bar", "3:xyz"])
        #expect(
            DeleteOldValuesAccumulationStrategy().accumulate(oldItems: old, newItems: new).map(\.description)
                == ["2:bar", "1:bar", "3:xyz"])
        // A batch that repeats an identifier (the lineage wrote into the wrong slot).
        let repeated = [Model(id: 3, value: "x"), Model(id: 1, value: "one"), Model(id: 3, value: "y")]
        #expect(
            UpdateOldValuesAccumulationStrategy().accumulate(oldItems: old, newItems: repeated).map(
                \.description) == ["1:one", "2:bar", "3:y"])
        #expect(
            DeleteOldValuesAccumulationStrategy().accumulate(oldItems: old, newItems: repeated).map(
                \.description) == ["2:bar", "1:one", "3:y"])
    }

    @Test func addItemsWithEachStrategyReplaysOnTheMirror() {
        let storage = SingleSectionHashableStorage(items: [
            Model(id: 1, value: "foo"), Model(id: 2, value: "bar"),
        ])
        let delegate = MirroringDelegate<Model>(storage)
        storage.delegate = delegate
        storage.addItems(
            [Model(id: 1, value: "bar"), Model(id: 3, value: "xyz")], UpdateOldValuesAccumulationStrategy())
        #expect(storage.items.map(\.description) == ["1:bar", "2:bar", "3:xyz"])
        #expect(changes(delegate.lastUpdate) == ["insert [[0, 2]]", "update [[0, 0]]"])
        #expect(
            delegate.lastUpdate?.updatedObjects[IndexPath(item: 0, section: 0)] as? Model
                == Model(id: 1, value: "bar"))
        storage.addItems(
            [Model(id: 1, value: "baz"), Model(id: 4, value: "q")], DeleteOldValuesAccumulationStrategy())
        #expect(storage.items.map(\.id) == [2, 3, 1, 4])
        storage.addItems([Model(id: 5, value: "z")])
        #expect(storage.numberOfItems(inSection: 0) == 5)
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
    }

    @Test func mixedTypesThroughTheTypeErasedWrapper() {
        struct Other: EntityIdentifiable, Equatable {
            var name: String
            var identifier: AnyHashable { name }
        }
        let storage = SingleSectionEquatableStorage(items: [
            AnyIdentifiableEquatable(Model(id: 1, value: "a")), AnyIdentifiableEquatable(Other(name: "x")),
        ])
        storage.setItems([
            AnyIdentifiableEquatable(Other(name: "x")), AnyIdentifiableEquatable(Model(id: 2, value: "b")),
        ])
        #expect(storage.numberOfItems(inSection: 0) == 2)
        #expect(
            (storage.item(at: IndexPath(item: 1, section: 0)) as? AnyIdentifiableEquatable)?.base as? Model
                == Model(id: 2, value: "b"))
    }

    @Test(arguments: [11, 12])
    func randomSetItemsReplayOnTheMirror(seed: UInt64) {
        var rng = SplitMix(seed)
        for differ in [HeckelDiffer() as any DiffingAlgorithm, MyersDiffer()] {
            let storage = SingleSectionStorage<Model>(items: [], differ: differ)
            let delegate = MirroringDelegate<Model>(storage)
            storage.delegate = delegate
            for _ in 0..<200 {
                var items = storage.items.filter { _ in Int.random(in: 0..<5, using: &rng) != 0 }
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    let id = Int.random(in: 0..<60, using: &rng)
                    if !items.contains(where: { $0.id == id }) {
                        items.insert(
                            Model(id: id, value: "v"), at: Int.random(in: 0...items.count, using: &rng))
                    }
                }
                items = items.map {
                    Int.random(in: 0..<6, using: &rng) == 0 ? Model(id: $0.id, value: $0.value + "'") : $0
                }
                if Int.random(in: 0..<3, using: &rng) == 0 { items.shuffle(using: &rng) }
                storage.setItems(items)
            }
            #expect(delegate.failures.isEmpty, "\(delegate.failures.prefix(3))")
        }
    }
}
