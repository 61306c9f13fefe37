import Foundation
import ModelStorage
import Testing

@Suite struct SnapshotTests {
    @Test func buildingASnapshot() throws {
        var snapshot = Snapshot<String, Int>()
        try snapshot.appendSections(["a", "c"])
        try snapshot.insertSections(["b"], beforeSection: "c")
        try snapshot.appendItems([1, 2, 3], toSection: "a")
        try snapshot.appendItems([9])  // the last section
        try snapshot.insertItems([4], afterItem: 1)
        try snapshot.moveItem(3, beforeItem: 9)
        try snapshot.moveSection("c", beforeSection: "a")
        #expect(snapshot.sectionIdentifiers == ["c", "a", "b"])
        #expect(try snapshot.itemIdentifiers(inSection: "a") == [1, 4, 2])
        #expect(try snapshot.itemIdentifiers(inSection: "c") == [3, 9])
        #expect(snapshot.sectionIdentifier(containingItem: 3) == "c")
        #expect(snapshot.indexOfItem(2) == 2)
        #expect(snapshot.indexOfSection("b") == 2)
        #expect(snapshot.numberOfItems == 5)
        try snapshot.deleteItems([4])
        try snapshot.deleteSections(["c"])
        #expect(snapshot.itemIdentifiers == [1, 2])
        #expect(snapshot.sectionIdentifier(containingItem: 9) == nil)
        snapshot.deleteAllItems()
        #expect(snapshot.numberOfItems == 0 && snapshot.numberOfSections == 2)
    }

    @Test func invalidSnapshotEditsThrow() throws {
        var snapshot = Snapshot<String, Int>()
        #expect(throws: SnapshotError<String, Int>.noSections) { try snapshot.appendItems([1]) }
        try snapshot.appendSections(["a"])
        #expect(throws: SnapshotError<String, Int>.duplicateSection("a")) {
            try snapshot.appendSections(["a"])
        }
        try snapshot.appendItems([1])
        #expect(throws: SnapshotError<String, Int>.duplicateItem(1)) { try snapshot.appendItems([2, 1]) }
        #expect(throws: SnapshotError<String, Int>.itemNotFound(7)) {
            try snapshot.insertItems([3], beforeItem: 7)
        }
        #expect(throws: SnapshotError<String, Int>.sectionNotFound("z")) {
            try snapshot.deleteSections(["z"])
        }
        #expect(throws: SnapshotError<String, Int>.moveRelativeToItself) {
            try snapshot.moveItem(1, afterItem: 1)
        }
        #expect(throws: SnapshotError<String, Int>.itemNotFound(5)) { try snapshot.reloadItems([5]) }
        #expect(snapshot.itemIdentifiers == [1])
    }

    @Test func applyingSnapshotsDeliversSectionAndItemMoves() throws {
        let storage = SnapshotStorage<String, Int>()
        let delegate = MirroringDelegate<Int>(storage)
        storage.delegate = delegate
        var snapshot = Snapshot<String, Int>()
        try snapshot.appendSections(["a", "b"])
        try snapshot.appendItems([1, 2, 3], toSection: "a")
        try snapshot.appendItems([4, 5], toSection: "b")
        storage.apply(snapshot)
        #expect(changes(delegate.lastUpdate) == ["s.insert [0]", "s.insert [1]"])
        try snapshot.moveSection("b", beforeSection: "a")
        try snapshot.moveItem(1, afterItem: 5)
        try snapshot.reloadItems([2])
        storage.apply(snapshot)
        #expect(
            changes(delegate.lastUpdate) == ["s.move [1, 0]", "move [[0, 0], [0, 2]]", "update [[0, 1]]"])
        #expect(delegate.lastUpdate?.updatedObjects[IndexPath(item: 1, section: 0)] as? Int == 2)
        #expect(storage.headerModel(forSection: 0) as? String == "b")
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
    }

    @Test(arguments: [21, 22, 23])
    func randomSnapshotsReplayOnTheMirror(seed: UInt64) throws {
        var rng = SplitMix(seed)
        let storage = SnapshotStorage<Int, Int>()
        let delegate = MirroringDelegate<Int>(storage)
        storage.delegate = delegate
        var nextItem = 0
        var nextSection = 0
        for _ in 0..<300 {
            var snapshot = storage.snapshot
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let sections = snapshot.sectionIdentifiers
                let items = snapshot.itemIdentifiers
                switch Int.random(in: 0..<9, using: &rng) {
                case 0:
                    nextSection += 1
                    if let target = sections.randomElement(using: &rng), Bool.random(using: &rng) {
                        try snapshot.insertSections([nextSection], beforeSection: target)
                    } else {
                        try snapshot.appendSections([nextSection])
                    }
                case 1:
                    if let section = sections.randomElement(using: &rng) {
                        try snapshot.deleteSections([section])
                    }
                case 2, 3:
                    if let section = sections.randomElement(using: &rng) {
                        let count = Int.random(in: 1...3, using: &rng)
                        try snapshot.appendItems((0..<count).map { nextItem + $0 }, toSection: section)
                        nextItem += count
                    }
                case 4: if let item = items.randomElement(using: &rng) { try snapshot.deleteItems([item]) }
                case 5:
                    if let item = items.randomElement(using: &rng),
                        let target = items.randomElement(using: &rng), item != target
                    {
                        try snapshot.moveItem(item, afterItem: target)
                    }
                case 6:
                    if let section = sections.randomElement(using: &rng),
                        let target = sections.randomElement(using: &rng), section != target
                    {
                        try snapshot.moveSection(section, beforeSection: target)
                    }
                case 7: if let item = items.randomElement(using: &rng) { try snapshot.reloadItems([item]) }
                default:
                    if let section = sections.randomElement(using: &rng) {
                        try snapshot.reloadSections([section])
                    }
                }
            }
            storage.apply(snapshot)
            #expect(storage.snapshot.itemIdentifiers == snapshot.itemIdentifiers)
        }
        #expect(delegate.failures.isEmpty, "\(delegate.failures.prefix(3))")
        #expect(delegate.updates.count > 200)
    }
}
