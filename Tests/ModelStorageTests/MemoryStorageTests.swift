import Foundation
import ModelStorage
import Testing

@Suite struct MemoryStorageTests {
    let storage = MemoryStorage()
    let delegate: MirroringDelegate<Int>

    init() {
        delegate = MirroringDelegate<Int>(storage)
        storage.delegate = delegate
    }

    func checkMirror(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(delegate.failures.isEmpty, "\(delegate.failures)", sourceLocation: sourceLocation)
    }

    @Test func addingIntoAnEmptyStorageInsertsTheSection() {
        storage.addItems([1, 2, 3])
        #expect(changes(delegate.lastUpdate) == ["s.insert [0]"])
        storage.addItem(4)
        #expect(changes(delegate.lastUpdate) == ["insert [[0, 3]]"])
        storage.addItem(10, toSection: 2)
        #expect(changes(delegate.lastUpdate) == ["s.insert [1]", "s.insert [2]"])
        #expect(storage.items(inSection: 0) as? [Int] == [1, 2, 3, 4])
        #expect(storage.numberOfSections() == 3)
        checkMirror()
    }

    @Test func insertingAtIndexPaths() throws {
        storage.addItems([1, 2, 3])
        try storage.insertItem(9, to: ip(1, 0))
        #expect(changes(delegate.lastUpdate) == ["insert [[0, 1]]"])
        try storage.insertItems([7, 8], at: ip(0, 0))
        #expect(changes(delegate.lastUpdate) == ["insert [[0, 0]]", "insert [[0, 1]]"])
        try storage.insertItems([5, 6], to: [ip(5, 0), ip(0, 1)])
        #expect(changes(delegate.lastUpdate) == ["s.insert [1]", "insert [[0, 5]]"])
        #expect(storage.items(inSection: 0) as? [Int] == [7, 8, 1, 9, 2, 5, 3])
        checkMirror()
    }

    @Test func invalidEditsThrowToTheCallerAndChangeNothing() throws {
        storage.addItems([1, 2, 3])
        let before = delegate.updates.count
        #expect(throws: MemoryStorageError.indexPathTooBig(ip(5, 0), itemsInSection: 3)) {
            try storage.insertItem(4, to: ip(5, 0))
        }
        #expect(throws: MemoryStorageError.itemNotFound("42")) { try storage.removeItem(42) }
        #expect(throws: MemoryStorageError.itemNotFound("42")) { try storage.replaceItem(42, with: 1) }
        #expect(throws: MemoryStorageError.itemNotFound("42")) { try storage.reloadItem(42) }
        #expect(throws: MemoryStorageError.itemNotFound("42")) { try storage.removeItems([1, 42]) }
        #expect(throws: MemoryStorageError.invalidIndexPath(ip(3, 0))) {
            try storage.removeItems(at: [ip(0, 0), ip(3, 0)])
        }
        #expect(throws: MemoryStorageError.sectionOutOfRange(1, numberOfSections: 1)) {
            try storage.removeItems(fromSection: 1)
        }
        #expect(throws: MemoryStorageError.sectionOutOfRange(2, numberOfSections: 1)) {
            try storage.deleteSections([0, 2])
        }
        #expect(throws: MemoryStorageError.itemCountMismatch(items: 2, indexPaths: 1)) {
            try storage.insertItems([1, 2], to: [ip(0, 0)])
        }
        #expect(throws: MemoryStorageError.invalidIndexPath(ip(3, 0))) {
            try storage.moveItem(at: ip(3, 0), to: ip(0, 0))
        }
        #expect(throws: MemoryStorageError.indexPathTooBig(ip(3, 0), itemsInSection: 2)) {
            try storage.moveItem(at: ip(0, 0), to: ip(3, 0))
        }
        #expect(throws: MemoryStorageError.sectionOutOfRange(3, numberOfSections: 1)) {
            try storage.insertSection(SectionModel(), atIndex: 3)
        }
        #expect(delegate.updates.count == before)
        #expect(storage.items(inSection: 0) as? [Int] == [1, 2, 3])
        checkMirror()
    }

    /// DTModelStorage 11's spec: moving an item into a section that does not exist yet creates the
    /// section. The update inserts the new sections and deletes the item where it was (an inserted
    /// section's rows come with it), and it replays on the mirror.
    @Test func movingAnItemIntoASectionThatDoesNotExistYetCreatesIt() throws {
        storage.addItems([1, 2, 3])
        try storage.moveItem(at: ip(1, 0), to: ip(0, 2))
        #expect(storage.numberOfSections() == 3)
        #expect(storage.items(inSection: 0) as? [Int] == [1, 3])
        #expect(storage.items(inSection: 1) as? [Int] == [])
        #expect(storage.items(inSection: 2) as? [Int] == [2])
        #expect(changes(delegate.lastUpdate) == ["s.insert [1]", "s.insert [2]", "delete [[0, 1]]"])
        // A new section is empty: only its first position exists.
        #expect(throws: MemoryStorageError.indexPathTooBig(ip(1, 4), itemsInSection: 0)) {
            try storage.moveItem(at: ip(0, 0), to: ip(1, 4))
        }
        // The view's own drag and drop cannot end in a section it does not show.
        #expect(throws: MemoryStorageError.invalidIndexPath(ip(0, 5))) {
            try storage.moveItemWithoutAnimation(from: ip(0, 0), to: ip(0, 5))
        }
        #expect(storage.numberOfSections() == 3)
        checkMirror()
    }

    /// A drag and drop reported while the view still holds an update it has not applied: the move
    /// is refused with an error that says so and nothing changes (it used to index the view's stale
    /// rows and trap); once the view applies the update, the same move goes through.
    @Test func aMoveTheViewMadeBeforeApplyingAnUpdateIsRefused() throws {
        let storage = MemoryStorage()
        let view = HoldingDelegate()
        storage.delegate = view
        storage.addItems([1, 2, 3])
        #expect(throws: MemoryStorageError.viewNotUpToDate(pendingUpdates: 1)) {
            try storage.moveItemWithoutAnimation(from: ip(0, 0), to: ip(2, 0))
        }
        #expect(storage.numberOfSections() == 0)  // the view's data: nothing applied yet
        view.applyAll()
        try storage.moveItemWithoutAnimation(from: ip(0, 0), to: ip(2, 0))
        #expect(storage.items(inSection: 0) as? [Int] == [2, 3, 1])
        #expect(storage.item(at: ip(2, 0)) as? Int == 1)
        #expect(view.held.isEmpty)  // no update for a move the view made itself
        // A reload supersedes updates still held: the view shows the data, and the held update,
        // applied late, does not take its rows back to its older snapshot.
        storage.addItem(4)
        let late = view.held
        view.held.removeAll()
        storage.updateWithoutAnimations { storage.addItem(5) }
        try storage.moveItemWithoutAnimation(from: ip(4, 0), to: ip(0, 0))
        let log = AnomalyLog(storage.anomalyHandler)
        for update in late { update.applyDeferredDatasourceUpdates() }
        #expect(log.anomalies == [.updateAppliedOutOfOrder(update: 2, expected: 3)])
        #expect(storage.items(inSection: 0) as? [Int] == [5, 2, 3, 1, 4])
        #expect((0..<5).map { storage.item(at: ip($0, 0)) as? Int } == [5, 2, 3, 1, 4])
        #expect(
            MemoryStorageError.viewNotUpToDate(pendingUpdates: 2).description
                == "the view has not applied 2 earlier updates yet, so a move it made itself cannot be matched to the data; apply the updates first"
        )
    }

    @Test func removingItems() throws {
        storage.addItems([1, 2, 3, 4, 5])
        storage.addItems([6, 7], toSection: 1)
        try storage.removeItem(2)
        #expect(changes(delegate.lastUpdate) == ["delete [[0, 1]]"])
        try storage.removeItems([5, 1, 7])
        #expect(changes(delegate.lastUpdate) == ["delete [[0, 0]]", "delete [[0, 3]]", "delete [[1, 1]]"])
        try storage.removeItems(at: [ip(0, 0), ip(1, 0)])
        #expect(changes(delegate.lastUpdate) == ["delete [[0, 0]]", "delete [[0, 1]]"])
        try storage.removeItems(fromSection: 1)
        #expect(changes(delegate.lastUpdate) == ["delete [[1, 0]]"])
        #expect(storage.items(inSection: 0)?.isEmpty == true)
        #expect(storage.items(inSection: 1)?.isEmpty == true)
        checkMirror()
    }

    @Test func replacingAndReloadingCaptureTheModel() throws {
        storage.addItems([1, 2, 3])
        try storage.replaceItem(2, with: 20)
        #expect(changes(delegate.lastUpdate) == ["update [[0, 1]]"])
        #expect(delegate.lastUpdate?.updatedObjects[ip(1, 0)] as? Int == 20)
        try storage.reloadItem(3)
        #expect(changes(delegate.lastUpdate) == ["update [[0, 2]]"])
        checkMirror()
    }

    @Test func movingItemsAndSections() throws {
        storage.addItems([1, 2, 3])
        storage.addItems([4, 5], toSection: 1)
        try storage.moveItem(at: ip(0, 0), to: ip(2, 0))
        #expect(changes(delegate.lastUpdate) == ["move [[0, 0], [0, 2]]"])
        try storage.moveItem(at: ip(1, 1), to: ip(0, 0))
        #expect(changes(delegate.lastUpdate) == ["move [[1, 1], [0, 0]]"])
        try storage.moveSection(1, toSection: 0)
        #expect(changes(delegate.lastUpdate) == ["s.move [1, 0]"])
        #expect(storage.items(inSection: 0) as? [Int] == [4])
        #expect(storage.items(inSection: 1) as? [Int] == [5, 2, 3, 1])
        try storage.deleteSections([0])
        #expect(changes(delegate.lastUpdate) == ["s.delete [0]"])
        try storage.insertSection(SectionModel(items: [9, 9]), atIndex: 0)
        #expect(changes(delegate.lastUpdate) == ["s.insert [0]"])
        checkMirror()
    }

    @Test func batchesBecomeOneUpdateEvenWhenNested() throws {
        storage.addItems([1, 2, 3, 4])
        let before = delegate.updates.count
        try storage.performUpdates {
            storage.addItem(5)
            try storage.removeItem(1)
            try storage.performUpdates {
                try storage.insertItem(0, to: ip(0, 0))
                try storage.moveItem(at: ip(4, 0), to: ip(1, 0))
            }
            try storage.replaceItem(3, with: 30)
        }
        #expect(delegate.updates.count == before + 1)
        #expect(storage.items(inSection: 0) as? [Int] == [0, 5, 2, 30, 4])
        // Deletes at old index paths, inserts at new ones, one move, one reload.
        #expect(
            changes(delegate.lastUpdate) == [
                "delete [[0, 0]]", "insert [[0, 0]]", "insert [[0, 1]]", "update [[0, 2]]",
            ])
        checkMirror()
    }

    @Test func theDataSourceSeesChangesOnlyWhenTheDelegateAppliesThem() {
        final class Holding: StorageUpdating {
            var pending: [StorageUpdate] = []
            func storageDidPerformUpdate(_ update: StorageUpdate) { pending.append(update) }
            func storageNeedsReloading() {}
        }
        let holding = Holding()
        storage.delegate = holding
        storage.addItems([1, 2])
        #expect(storage.numberOfSections() == 0)  // the view has not applied it yet
        #expect(storage.items(inSection: 0) as? [Int] == [1, 2])  // the app sees its edit
        holding.pending.first?.applyDeferredDatasourceUpdates()
        #expect(storage.numberOfItems(inSection: 0) == 2)
        // Without a delegate, edits apply at once (the lineage dropped them).
        storage.delegate = nil
        storage.addItem(3)
        #expect(storage.numberOfItems(inSection: 0) == 3)
    }

    @Test func setAndWithoutAnimationEditsReload() throws {
        storage.setItems([1, 2, 3])
        #expect(delegate.reloads == 1)
        storage.setItemsForAllSections([[1], [2, 3]])
        #expect(delegate.reloads == 2)
        #expect(storage.numberOfSections() == 2)
        try storage.updateWithoutAnimations {
            storage.addItem(4)
            try storage.removeItem(1)
        }
        #expect(delegate.reloads == 3)
        #expect(storage.items(inSection: 0) as? [Int] == [4])
        storage.removeAllItems()
        #expect(delegate.reloads == 4)
        #expect(storage.numberOfSections() == 2)
        #expect(storage.totalNumberOfItems == 0)
        checkMirror()
    }

    @Test func moveWithoutAnimationChangesDataWithoutAnUpdate() throws {
        storage.addItems([1, 2, 3])
        let count = delegate.updates.count
        try storage.moveItemWithoutAnimation(from: ip(0, 0), to: ip(2, 0))
        #expect(delegate.updates.count == count)
        #expect(storage.item(at: ip(2, 0)) as? Int == 1)
        storage.addItem(4)
        #expect(changes(delegate.lastUpdate) == ["insert [[0, 3]]"])  // the move is not reported again
    }

    @Test func queries() {
        storage.addItems([1, 2])
        storage.addItems([3], toSection: 1)
        #expect(storage.indexPath(forItem: 3) == ip(0, 1))
        #expect(storage.indexPath(forItem: 9) == nil)
        #expect(storage.section(atIndex: 1)?.items(ofType: Int.self) == [3])
        #expect(storage.item(at: ip(5, 5)) == nil)
        #expect(storage.numberOfItems(inSection: 7) == 0)
    }

    @Test func supplementaryRouting() {
        // The lineage's spec asks an empty storage for its sections' models: an anomaly by design.
        storage.anomalyHandler.silence(.supplementaryForMissingSection)
        storage.headerModelProvider = { [1, 2, 3][$0] }
        storage.supplementaryModelProvider = { _, indexPath in [4, 5, 6][indexPath.item] }
        storage.supplementaryHeaderKind = "Foo"
        #expect(storage.supplementaryModel(ofKind: "Foo", forSectionAt: ip(0, 0)) as? Int == 1)
        #expect(storage.supplementaryModel(ofKind: "Bar", forSectionAt: ip(0, 0)) as? Int == 4)
        storage.supplementaryModelProvider = nil  // header routing stays
        #expect(storage.supplementaryModel(ofKind: "Foo", forSectionAt: ip(0, 2)) as? Int == 3)
        #expect(storage.supplementaryModel(ofKind: "Bar", forSectionAt: ip(0, 0)) == nil)
        storage.setSectionFooterModels(["a", "b"])
        storage.configureForTableViewUsage()
        #expect(storage.footerModel(forSection: 1) as? String == "b")
        #expect(storage.footerModel(forSection: 2) == nil)
        #expect(
            storage.supplementaryModel(ofKind: SupplementaryKind.tableFooter, forSectionAt: ip(0, 0))
                as? String == "a")
        storage.setSectionHeaderModels(["h"])
        #expect(storage.headerModel(forSection: 0) as? String == "h")
    }

    @Test func updatesAreAlsoAnAsyncSequence() async {
        let stream = MemoryStorage()
        var iterator = stream.updates.makeAsyncIterator()
        stream.addItems([1, 2])
        stream.setItems([3])
        guard case .update(let update)? = await iterator.next() else {
            Issue.record("expected an update")
            return
        }
        #expect(changes(update) == ["s.insert [0]"])
        guard case .reload? = await iterator.next() else {
            Issue.record("expected a reload")
            return
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func randomEditsReplayExactlyOnTheMirror(seed: UInt64) throws {
        var rng = SplitMix(seed)
        var next = 1000
        for _ in 0..<400 {
            let batch = Int.random(in: 0..<3, using: &rng) == 0
            let steps = batch ? Int.random(in: 2...6, using: &rng) : 1
            try storage.performUpdates {
                for _ in 0..<steps { try randomEdit(&rng, &next) }
            }
            checkMirror()
            if !delegate.failures.isEmpty { return }
        }
    }

    func randomEdit(_ rng: inout SplitMix, _ next: inout Int) throws {
        next += 1
        let sections = storage.sections.count
        let storage = self.storage
        func randomPath() -> IndexPath? {
            let nonEmpty = storage.sections.indices.filter { storage.sections[$0].numberOfItems > 0 }
            guard let section = nonEmpty.randomElement(using: &rng) else { return nil }
            return ip(Int.random(in: 0..<storage.sections[section].numberOfItems, using: &rng), section)
        }
        switch Int.random(in: 0..<11, using: &rng) {
        case 0: storage.addItem(next, toSection: Int.random(in: 0...sections, using: &rng))
        case 1:
            let section = Int.random(in: 0..<max(sections, 1), using: &rng)
            let count =
                storage.sections.indices.contains(section) ? storage.sections[section].numberOfItems : 0
            try storage.insertItem(next, to: ip(Int.random(in: 0...count, using: &rng), section))
        case 2: if let path = randomPath() { try storage.removeItems(at: [path]) }
        case 3:
            if let path = randomPath(), let value = storage.sections[path.section].items[path.item] as? Int {
                try storage.replaceItem(value, with: next)
            }
        case 4:
            if let source = randomPath() {
                let section = Int.random(in: 0..<sections, using: &rng)
                let count = storage.sections[section].numberOfItems - (section == source.section ? 1 : 0)
                try storage.moveItem(at: source, to: ip(Int.random(in: 0...count, using: &rng), section))
            }
        case 5:
            if sections > 1 {
                try storage.moveSection(
                    Int.random(in: 0..<sections, using: &rng),
                    toSection: Int.random(in: 0..<sections, using: &rng))
            }
        case 6: if sections > 0 { try storage.deleteSections([Int.random(in: 0..<sections, using: &rng)]) }
        case 7:
            try storage.insertSection(
                SectionModel(items: [next, next + 500]), atIndex: Int.random(in: 0...sections, using: &rng))
            next += 1
        case 8:
            if let path = randomPath(), let value = storage.sections[path.section].items[path.item] as? Int {
                try storage.reloadItem(value)
            }
        case 9:
            storage.addItems(
                [next, next + 2000, next + 4000], toSection: Int.random(in: 0...sections, using: &rng))
        default:
            if let path = randomPath() {
                let count = storage.sections[path.section].numberOfItems
                let other = ip(Int.random(in: 0..<count, using: &rng), path.section)
                try storage.removeItems(at: [path, other])
            }
        }
    }
}

/// A view that keeps updates without applying them until told to, as a table view in the middle of
/// an animation does.
final class HoldingDelegate: StorageUpdating {
    var held: [StorageUpdate] = []

    func storageDidPerformUpdate(_ update: StorageUpdate) { held.append(update) }
    func storageNeedsReloading() {}

    func applyAll() {
        for update in held { update.applyDeferredDatasourceUpdates() }
        held.removeAll()
    }
}
