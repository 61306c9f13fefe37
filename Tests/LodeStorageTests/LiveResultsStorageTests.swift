import Dispatch
import Foundation
import LodeTesting
import ModelStorage
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Replays a live-results storage's updates on a mirror of object identities, checking after each
/// one that the mirror shows what the storage's data source shows.
final class MirroringStorageDelegate: StorageUpdating, @unchecked Sendable {
    let storage: LiveResultsStorage
    var mirror: ListMirror<ObjectID>
    var failures: [String] = []
    var updates = 0
    /// Time spent on each update (a slow consumer).
    var delay = 0.0

    init(_ storage: LiveResultsStorage) {
        self.storage = storage
        mirror = ListMirror(sections: Self.contents(storage))
    }

    static func contents(_ storage: LiveResultsStorage) -> [[ObjectID]] { ListMirror(storage).sections }

    func storageDidPerformUpdate(_ update: StorageUpdate) {
        updates += 1
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        update.applyDeferredDatasourceUpdates()
        do {
            try mirror.replay(update, against: storage)
        } catch {
            failures.append("update \(updates): \(error)")
        }
    }

    func storageNeedsReloading() { failures.append("unexpected reload") }

    func storageDidFail(_ error: any Error) { failures.append("failure: \(error)") }
}

/// Holds updates without applying them, as a view between its batch updates would.
final class HoldingDelegate: StorageUpdating {
    var held: [StorageUpdate] = []
    func storageDidPerformUpdate(_ update: StorageUpdate) { held.append(update) }
    func storageNeedsReloading() {}
}

/// A second type for the article's example.
struct Note: Persistable {
    var id: Int
    var text: String
    var date: Date
    static let schema = Schema<Note>(primaryKey: \.id, indexes: [.on(\.date)])
}

/// Applies each update at once, as a view applying its batch right away would.
final class ApplyingDelegate: StorageUpdating {
    var updates = 0
    func storageDidPerformUpdate(_ update: StorageUpdate) {
        updates += 1
        update.applyDeferredDatasourceUpdates()
    }
    func storageNeedsReloading() {}
}

@Suite struct LiveResultsStorageTests {
    let tmp = TemporaryDirectory()

    @Test func sectionsOfSeveralTypesFollowRandomTransactionsExactly() throws {
        var rng = SeededGenerator(seed: 0x5707)
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync),
            types: [Task.self, Counter.self])
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        let open = store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
        let counters = store.objects(Counter.self).sorted(by: \.value)
        let byGroup = store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group)
        // Only `done` counts as a modification here: a rank change is a plain move, a title change is
        // not reported at all.
        try storage.addSection(with: open, keyPaths: [\Task.done])
        try storage.addSection(with: counters)
        // Sectioned results in the middle: the sections after them shift as groups come and go.
        try storage.insertSections(from: byGroup, at: 1)
        /// Each member's sections, read fresh from the store: what the storage must show.
        var expected: [(Store) throws -> [[ObjectID]]] = [
            {
                [
                    try $0.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
                        .objectIDs
                ]
            },
            {
                try $0.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group).fetchSections().map {
                    try $0.objects.objectIDs
                }
            },
            { [try $0.objects(Counter.self).sorted(by: \.value).objectIDs] },
        ]
        func fresh() throws -> [[ObjectID]] { try expected.flatMap { try $0(store) } }
        #expect(MirroringStorageDelegate.contents(storage) == (try fresh()))

        var ids: [Int] = []
        var next = 0
        var sawSectionChanges = false
        var sawMoves = false
        for round in 0..<300 {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...5, using: &rng) {
                    switch Int.random(in: 0..<12, using: &rng) {
                    case 0..<4:
                        try tx.insert(
                            Task(
                                id: next, title: "t\(next)", rank: Int.random(in: 0..<20, using: &rng),
                                done: Bool.random(using: &rng),
                                group: ["x", "y", "z"].randomElement(using: &rng)!))
                        ids.append(next)
                        next += 1
                    case 4..<7:
                        if let id = ids.randomElement(using: &rng) {
                            try tx.update(Task.self, key: id) { task in
                                switch Int.random(in: 0..<4, using: &rng) {
                                case 0: task.rank = Int.random(in: 0..<20, using: &rng)
                                case 1: task.done.toggle()
                                case 2: task.title += "!"
                                default: task.group = ["w", "x", "y", "z"].randomElement(using: &rng)!
                                }
                            }
                        }
                    case 7..<9:
                        if let index = ids.indices.randomElement(using: &rng) {
                            _ = try tx.delete(Task.self, key: ids.remove(at: index))
                        }
                    case 9..<11:
                        try tx.upsert(
                            Counter(
                                name: "c\(Int.random(in: 0..<8, using: &rng))",
                                value: Int.random(in: 0..<10, using: &rng)))
                    default:
                        _ = try tx.delete(Counter.self, key: "c\(Int.random(in: 0..<8, using: &rng))")
                    }
                }
            }
            let update = try storage.refresh()
            if let update {
                sawSectionChanges = sawSectionChanges || !update.sectionChanges.isEmpty
                sawMoves = sawMoves || update.objectChanges.contains { $0.0 == .move }
            }
            // Now and then change the members themselves.
            switch round % 50 {
            case 10:
                try storage.insertSection(with: store.objects(Counter.self).sorted(by: \.name), at: 0)
                expected.insert({ [try $0.objects(Counter.self).sorted(by: \.name).objectIDs] }, at: 0)
            case 20:
                try storage.removeSection(at: 0)
                expected.remove(at: 0)
            case 30:
                try storage.replaceSection(
                    at: 2, with: store.objects(Counter.self).filter(#Predicate { $0.value > 4 }))
                expected[2] = { [try $0.objects(Counter.self).filter(#Predicate { $0.value > 4 }).objectIDs] }
            case 40:
                try storage.replaceSection(at: 2, with: counters)
                expected[2] = { [try $0.objects(Counter.self).sorted(by: \.value).objectIDs] }
            default: break
            }
            #expect(delegate.failures.isEmpty, "round \(round): \(delegate.failures)")
            #expect(
                MirroringStorageDelegate.contents(storage) == (try fresh()),
                "round \(round)")
            if !delegate.failures.isEmpty { break }
        }
        #expect(delegate.updates > 250)
        #expect(sawSectionChanges, "groups come and go: section inserts and deletes")
        #expect(sawMoves)
    }

    /// Sections named by the app: a snapshot identifies them by the identifiers the members were
    /// given (a string, a group key), and follows the store like the rows.
    @Test func snapshotsUseTheSectionIdentifiersMembersWereGiven() throws {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<4 {
                try tx.insert(
                    Task(id: id, title: "t\(id)", rank: id, done: id == 3, group: id < 2 ? "x" : "y"))
            }
            try tx.insert(Counter(name: "c", value: 1))
        }
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        try storage.addSection(with: store.objects(Counter.self), sectionIdentifier: "Counters")
        try storage.addSections(
            from: store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group),
            sectionIdentifier: { SectionIdentifier($0) })
        var snapshot = try storage.snapshot()
        #expect(snapshot.sectionIdentifiers == ["Counters", "x", "y"])
        #expect(
            try snapshot.itemIdentifiers(inSection: "y") == [
                try ObjectID(Task.self, key: 2), try ObjectID(Task.self, key: 3),
            ])
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.group = "z" } }
        try storage.refresh()
        snapshot = try storage.snapshot()
        #expect(snapshot.sectionIdentifiers == ["Counters", "x", "y", "z"])
        #expect(try snapshot.itemIdentifiers(inSection: "z") == [try ObjectID(Task.self, key: 0)])
        #expect(SectionIdentifier(7) != SectionIdentifier("7"))  // compared by value and type
    }

    @Test func headersAreSectionKeysAndDataWaitsForTheDelegate() throws {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "y"))
            try tx.insert(Counter(name: "n", value: 1))
        }
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        try storage.addSection(with: store.objects(Counter.self))
        try storage.addSections(from: store.objects(Task.self).sectioned(by: \.group))
        #expect(storage.numberOfSections() == 2)
        #expect(storage.headerModel(forSection: 0) == nil)
        #expect(storage.headerModel(forSection: 1) as? String == "y")
        #expect((storage.item(at: IndexPath(item: 0, section: 1)) as? Task)?.title == "a")
        #expect(storage.item(at: IndexPath(item: 5, section: 1)) == nil)
        #expect(storage.item(at: IndexPath(item: 0, section: 9)) == nil)

        let holding = HoldingDelegate()
        storage.delegate = holding
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 0, done: false, group: "a")) }
        try storage.refresh()
        #expect(holding.held.count == 1)
        #expect(storage.numberOfSections() == 2, "the view has not applied the update yet")
        holding.held[0].applyDeferredDatasourceUpdates()
        #expect(storage.numberOfSections() == 3)
        #expect(storage.headerModel(forSection: 1) as? String == "a")
        #expect(holding.held[0].sectionChanges.map(\.0) == [.insert])
        #expect(holding.held[0].sectionChanges.map(\.1) == [[1]])

        #expect(throws: LiveResultsStorage.MemberError.noSuchMember(index: 7, count: 2)) {
            try storage.removeSection(at: 7)
        }
        #expect(throws: LodeError.insideTransaction(operation: "LiveResultsStorage")) {
            try store.write { _ in try storage.addSection(with: store.objects(Counter.self)) }
        }
    }

    /// The "Sectioned lists and LiveResultsStorage" article's example, as written.
    @Test func theArticleExampleRuns() throws {
        let store = try Store.temporary(types: [Task.self, Note.self])
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
            try tx.insert(Task(id: 2, title: "b", rank: 2, done: true, group: "y"))
            try tx.insert(Note(id: 7, text: "n", date: Date(timeIntervalSince1970: 0)))
        }
        let tableAdapter = ApplyingDelegate()
        let otherResults = store.objects(Note.self)

        let storage = LiveResultsStorage(store: store, queue: .main)
        storage.delegate = tableAdapter  // any StorageUpdating
        try storage.addSection(
            with: store.objects(Task.self).filter(#Predicate { !$0.done }), sectionIdentifier: "Open")
        try storage.addSection(with: store.objects(Note.self).sorted(by: \.date))  // another type
        try storage.addSections(
            from: store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group),
            sectionIdentifier: { SectionIdentifier($0) })  // sections named by their key
        let note = storage.item(at: IndexPath(item: 0, section: 1), as: Note.self)  // of the applied version
        let group = storage.headerModel(forSection: 2)  // the group key (override: headerModelProvider)
        try storage.replaceSection(at: 0, with: otherResults)  // one update: old section out, new one in

        #expect(note?.id == 7)
        #expect(group as? String == "x")
        #expect(tableAdapter.updates == 4)
        #expect(storage.numberOfSections() == 4)
        #expect(storage.item(at: IndexPath(item: 0, section: 0), as: Note.self)?.id == 7)
        storage.stopObserving()
    }

    /// A view may apply updates later than they are delivered (between its own batches): each update
    /// is relative to the one before it, not to what the view has applied so far. Members added while
    /// earlier updates wait used to index the applied views past their end.
    @Test func updatesStayConsistentWhileTheViewHasNotAppliedThemYet() throws {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<4 {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g\(id % 2)"))
            }
            try tx.insert(Counter(name: "c", value: 1))
        }
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        let later = HoldingDelegate()
        storage.delegate = later
        var mirror = ListMirror<ObjectID>(sections: [])
        try storage.addSection(with: store.objects(Counter.self))
        try storage.addSections(from: store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group))
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.group = "g1" } }
        try storage.refresh()
        try storage.removeSection(at: 0)
        #expect(later.held.count == 4)
        for update in later.held {
            update.applyDeferredDatasourceUpdates()
            try mirror.apply(update, dataSource: MirroringStorageDelegate.contents(storage))
        }
        #expect(mirror.sections == MirroringStorageDelegate.contents(storage))
        #expect(mirror.sections.count == 2)
    }

    /// A view that applies an older update after a newer one is told (an anomaly of the storage's
    /// own), and the older update no longer takes the data-source methods back to its version.
    @Test func anUpdateAppliedOutOfOrderIsReportedAndNeverTakesTheDataBack() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        let later = HoldingDelegate()
        storage.delegate = later
        var anomalies: [ListAnomaly] = []
        storage.anomalyHandler.anomalyAction = { anomalies.append($0) }
        try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank), keyPaths: [\Task.done])
        for id in 0..<2 {
            try store.write { tx in try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: "g"))
            }
            try storage.refresh()
        }
        #expect(later.held.count == 3)  // the new section, then one insert per commit
        later.held[0].applyDeferredDatasourceUpdates()
        later.held[2].applyDeferredDatasourceUpdates()  // #2 skipped
        #expect(anomalies == [.updateAppliedOutOfOrder(update: 3, expected: 2)])
        #expect(storage.numberOfItems(inSection: 0) == 2)
        later.held[1].applyDeferredDatasourceUpdates()  // late: ignored, reported
        #expect(anomalies.last == .updateAppliedOutOfOrder(update: 2, expected: 4))
        #expect(storage.numberOfItems(inSection: 0) == 2)
        // A version with no visible change while the view holds nothing shows at once.
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.title = "renamed" } }
        #expect(try storage.refresh() == nil)
        #expect(storage.item(at: IndexPath(item: 0, section: 0), as: Task.self)?.title == "renamed")
        #expect(anomalies.count == 2)
    }

    @Test func commitsAreDeliveredOnTheQueueAsOneUpdatePerVersion() throws {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        let queue = DispatchQueue(label: "storage updates")
        let storage = LiveResultsStorage(store: store, queue: queue)
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank))
        try storage.addSection(with: store.objects(Counter.self))
        for id in 0..<20 {
            try store.write { tx in
                try tx.insert(Task(id: id, title: "t", rank: 20 - id, done: false, group: "x"))
                try tx.upsert(Counter(name: "all", value: id))
            }
        }
        // Deliveries are asynchronous: wait until the storage shows the last commit.
        let deadline = Date().addingTimeInterval(30)
        while queue.sync(execute: { storage.numberOfItems(inSection: 0) }) < 20, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        queue.sync {
            #expect(storage.numberOfItems(inSection: 0) == 20)
            #expect(storage.numberOfItems(inSection: 1) == 1)
            #expect(delegate.failures.isEmpty, "\(delegate.failures)")
            #expect(delegate.updates >= 1)
            #expect(delegate.mirror.sections[0].count == 20)
        }
    }

    /// Issue 23, finding 6: a storage exposed no token, so an edit its view already showed could not
    /// be kept from coming back as an update.
    @Test func aWriteWithoutNotifyingPassesTheStorageOverAndItStillFollows() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "storage updates")
        let storage = LiveResultsStorage(store: store, queue: queue)
        let delegate = ApplyingDelegate()
        storage.delegate = delegate
        try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank))
        #expect(delegate.updates == 1)  // the section appears
        try store.write(withoutNotifying: [storage.observationToken]) { tx in
            try tx.insert(Task(id: 1, title: "shown already", rank: 1, done: false, group: "x"))
        }
        func wait(until condition: () -> Bool) {
            let deadline = Date().addingTimeInterval(30)
            while !queue.sync(execute: condition), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        }
        // The storage advances past the silent commit without an update: its rows show it.
        wait { storage.numberOfItems(inSection: 0) == 1 }
        queue.sync {
            #expect(storage.numberOfItems(inSection: 0) == 1)
            #expect(delegate.updates == 1)
        }
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x")) }
        wait { storage.numberOfItems(inSection: 0) == 2 }
        queue.sync {
            #expect(storage.numberOfItems(inSection: 0) == 2)
            #expect(delegate.updates == 2)
        }
        // Cancelling the token is stopObserving().
        storage.observationToken.cancel()
        #expect(!storage.followsCommits)
    }

    /// Issue 24, point 4, as a list view does it: the user drags a row; the view moves it itself; the
    /// app stores the new order without an update coming back; the next commit's update replays on
    /// the view's rows exactly.
    @Test func aRowTheUserMovedIsStoredSilentlyAndTheNextUpdateReplays() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for (id, title) in ["a", "b", "c"].enumerated() {
                try tx.insert(Task(id: id, title: title, rank: id + 1, done: false, group: "x"))
            }
        }
        let queue = DispatchQueue(label: "storage updates")
        let storage = LiveResultsStorage(store: store, queue: queue)
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank))
        // The user drags "a" below "c": the view moves the row itself (as UIKit does)…
        try queue.sync {
            let move = StorageUpdate()
            move.objectChanges.append(
                (.move, [IndexPath(item: 0, section: 0), IndexPath(item: 2, section: 0)]))
            try delegate.mirror.apply(move, dataSource: delegate.mirror.sections)
        }
        // …and the app stores the new order without notifying the storage.
        try store.write(withoutNotifying: [storage.observationToken]) { tx in
            try tx.update(Task.self, key: 0) { $0.rank = 4 }
        }
        func wait(until condition: () -> Bool) {
            let deadline = Date().addingTimeInterval(30)
            while !queue.sync(execute: condition), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        }
        let a = try ObjectID(Task.self, key: 0)
        wait { storage.objectID(at: IndexPath(item: 2, section: 0)) == a }
        try store.write { tx in try tx.insert(Task(id: 3, title: "d", rank: 0, done: false, group: "x")) }
        wait { storage.numberOfItems(inSection: 0) == 4 }
        queue.sync {
            #expect(delegate.updates == 2, "the section, then the insert: nothing for the move")
            #expect(delegate.failures.isEmpty, "\(delegate.failures)")
            #expect(delegate.mirror.sections == MirroringStorageDelegate.contents(storage))
            #expect(delegate.mirror.sections.first?.last == a)
        }
    }

    /// Commits a few random changes to tasks and counters.
    func randomCommit(_ store: Store, _ rng: inout SeededGenerator) throws {
        try store.write { tx in
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let id = Int.random(in: 0..<25, using: &rng)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0..<3:
                    try tx.upsert(
                        Task(
                            id: id, title: "t\(id)", rank: Int.random(in: 0..<10, using: &rng),
                            done: Bool.random(using: &rng),
                            group: ["x", "y", "z"].randomElement(using: &rng)!))
                case 3: _ = try tx.delete(Task.self, key: id)
                case 4: try tx.upsert(Counter(name: "c\(id % 5)", value: id))
                default: _ = try tx.delete(Counter.self, key: "c\(id % 5)")
                }
            }
        }
    }

    @Test(arguments: ["one type, one section", "one type, sections by a field", "several types, merged"])
    func snapshotsOfTheThreeWaysListsAreBuiltReplay(way: String) throws {
        var rng = SeededGenerator(seed: 0x5a9)
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync),
            types: [Task.self, Counter.self])
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        let tasks = store.objects(Task.self).sorted(by: \.rank)
        let open = store.objects(Task.self).filter(#Predicate { $0.done == false })
        let counters = store.objects(Counter.self).sorted(by: \.name)
        /// The expected snapshot, read fresh.
        let fresh: () throws -> [(String, [ObjectID])]
        switch way {
        case "one type, one section":
            try storage.addSection(with: tasks)
            fresh = { [("Task", try tasks.copyingQuery(of: tasks).objectIDs)] }
        case "one type, sections by a field":
            try storage.setSections(from: tasks.sectioned(by: \.group))
            fresh = {
                try tasks.copyingQuery(of: tasks).sectioned(by: \.group).fetchSections().map {
                    ("Task.\($0.key)", try $0.objects.objectIDs)
                }
            }
        default:
            // Each object in one section: identifiers are unique across a diffable snapshot.
            let done = store.objects(Task.self).filter(#Predicate { $0.done == true })
            try storage.addSection(with: open)
            try storage.addSection(with: counters)
            try storage.addSection(with: done)
            fresh = {
                [
                    ("Task", try open.copyingQuery(of: open).objectIDs),
                    ("Counter", try counters.copyingQuery(of: counters).objectIDs),
                    ("Task#2", try done.copyingQuery(of: done).objectIDs),
                ]
            }
        }
        let rows = MirroringStorageDelegate(storage)
        storage.delegate = rows
        let snapshots = SnapshotStorage<SectionIdentifier, ObjectID>()
        snapshots.apply(try storage.snapshot())
        let snapshotMirror = MirroringSnapshotDelegate(snapshots)
        snapshots.delegate = snapshotMirror
        for round in 0..<60 {
            try randomCommit(store, &rng)
            try storage.refresh()
            let snapshot = try storage.snapshot()
            snapshots.apply(snapshot)
            let expected = try fresh().filter { !$0.1.isEmpty || way != "one type, sections by a field" }
            #expect(snapshot.sectionIdentifiers == expected.map { SectionIdentifier($0.0) }, "round \(round)")
            for (section, items) in expected {
                #expect(
                    try snapshot.itemIdentifiers(inSection: SectionIdentifier(section)) == items,
                    "round \(round) \(section)")
            }
            #expect(
                rows.failures.isEmpty && snapshotMirror.failures.isEmpty,
                "round \(round): \(rows.failures) \(snapshotMirror.failures)")
        }
        #expect(rows.updates > 40)
    }

    @Test func anObjectMovingBetweenSectionsIsOneConsistentUpdate() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in 0..<6 {
                try tx.insert(
                    Task(id: id, title: "t\(id)", rank: id, done: id % 2 == 0, group: id < 3 ? "x" : "y"))
            }
        }
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        // Leaving one query and joining another: open tasks, then done tasks, two members.
        try storage.addSection(
            with: store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank))
        try storage.addSection(
            with: store.objects(Task.self).filter(#Predicate { $0.done == true }).sorted(by: \.rank))
        // A status change within sectioned results: only titles reload rows, so the row moves.
        try storage.addSections(
            from: store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group), keyPaths: [\Task.title])
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.done = true } }
        let completed = try #require(try storage.refresh())
        #expect(
            completed.objectChanges.map { "\($0.0) \($0.1)" } == ["delete [[0, 0]]", "insert [[1, 1]]"],
            "the sectioned member follows titles only: `done` changes nothing there")
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.group = "y" } }
        let regrouped = try #require(try storage.refresh())
        #expect(
            regrouped.objectChanges.map { "\($0.0) \($0.1)" } == [
                "update [[1, 1]]", "move [[2, 1], [3, 0]]",
            ],
            "a reload in the done section, a move across the group sections")
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
        #expect(storage.objectID(at: IndexPath(item: 0, section: 3)) == (try ObjectID(Task.self, key: 1)))
    }

    @Test func replacingWhileObjectsAreDeletedAndEmptyingAndRefilling() throws {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<8 {
                try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: "g\(id % 3)"))
            }
            try tx.insert(Counter(name: "a", value: 1))
        }
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        try storage.addSection(with: store.objects(Counter.self))
        try storage.addSections(from: store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group))
        try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank))
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        func headers() -> [String] {
            (0..<storage.numberOfSections()).map { "\(storage.headerModel(forSection: $0) ?? "-")" }
        }
        #expect(headers() == ["-", "g0", "g1", "g2", "-"])

        // Objects deleted in a commit the storage has not seen, then a member replaced: one update
        // carries both.
        try store.write { tx in
            for id in [0, 3, 6, 1] { _ = try tx.delete(Task.self, key: id) }
        }
        try storage.replaceSection(at: 0, with: store.objects(Task.self).filter(#Predicate { $0.rank > 4 }))
        #expect(delegate.updates == 1)
        #expect(headers() == ["-", "g1", "g2", "-"], "group g0 emptied: its section went")
        #expect(storage.numberOfItems(inSection: 0) == 2, "ranks 5 and 7 are left above 4")

        // Emptied, then refilled.
        try store.write { tx in _ = try tx.deleteAll(Task.self) }
        try storage.refresh()
        #expect(headers() == ["-", "-"])
        #expect(storage.numberOfItems(inSection: 0) == 0 && storage.numberOfItems(inSection: 1) == 0)
        try store.write { tx in
            try tx.insert(Task(id: 20, title: "t", rank: 1, done: false, group: "b"))
            try tx.insert(Task(id: 21, title: "t", rank: 9, done: false, group: "a"))
        }
        try storage.refresh()
        #expect(headers() == ["-", "a", "b", "-"])
        #expect(storage.numberOfItems(inSection: 0) == 1)
        #expect(storage.numberOfItems(inSection: 3) == 2)
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
        #expect(delegate.updates == 3)
    }

    @Test func updatesArriveAsAnAsyncSequence() async throws {
        try await onDedicatedExecutor {
            let store = try Store(at: tmp.url, types: [Task.self])
            let storage = LiveResultsStorage(store: store, observesCommits: false)
            try storage.addSection(with: store.objects(Task.self).sorted(by: \.rank))
            let events = storage.updates
            try await store.write { tx in
                try tx.insert(Task(id: 1, title: "t", rank: 1, done: false, group: "x"))
            }
            try storage.refresh()
            var iterator = events.makeAsyncIterator()
            guard case .update(let update) = await iterator.next() else {
                Issue.record("expected an update")
                return
            }
            #expect(update.objectChanges.map { "\($0.0) \($0.1)" } == ["insert [[0, 0]]"])
            #expect(
                storage.numberOfItems(inSection: 0) == 1, "without a delegate, the data changes are applied")
        }
    }
}
