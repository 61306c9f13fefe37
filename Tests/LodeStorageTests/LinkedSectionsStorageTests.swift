import Foundation
import ModelStorage
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

/// A `LiveResultsStorage` whose sections are keyed by a linked object's field (tasks by project
/// name): renames, re-links and cascades arrive as one `StorageUpdate` per commit, which a mirror of
/// the list applies exactly.
@Suite struct LinkedSectionsStorageTests {
    typealias Project = LinkedProject<OwningRules>
    typealias Task = LinkedTask<OwningRules>
    typealias Tag = LinkedTag<OwningRules>

    @Test func sectionsByProjectNameFollowEveryCommitInOneUpdate() throws {
        var rng = SeededGenerator(seed: 0x5ec)
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .noSync),
            types: [Project.self, Task.self, Tag.self])
        let names = ["inbox", "home", "work", "garden", "shop"]
        try store.write { tx in
            for id in 1...5 { try tx.insert(Project(id: id, name: names[id - 1])) }
            for id in 1...40 {
                try tx.insert(
                    Task(id: id, title: "t\(id)", project: id % 9 == 0 ? nil : try Link(key: id % 5 + 1)))
            }
        }
        let byProject = store.objects(Task.self).sorted(by: \.title).sectioned(through: \.project, by: \.name)
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        let delegate = MirroringStorageDelegate(storage)
        storage.delegate = delegate
        try storage.setSections(from: byProject)
        func fresh() throws -> [[ObjectID]] {
            try byProject.reevaluated().fetchSections().map { try $0.objects.objectIDs }
        }
        #expect(MirroringStorageDelegate.contents(storage) == (try fresh()))
        var next = 41
        var sectionChanges = 0
        for round in 0..<120 {
            try store.write { tx in
                let projects = try tx.objects(Project.self).fetch().map(\.id)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<4:
                    // A rename renames (and may move or merge) a section: one update.
                    if let id = projects.randomElement(using: &rng) {
                        try tx.update(Project.self, key: id) {
                            $0.name = names.randomElement(using: &rng)! + "\(round % 3)"
                        }
                    }
                case 4..<7:
                    let id = Int.random(in: 1..<next, using: &rng)
                    if try tx.object(Task.self, key: id) != nil {
                        try tx.update(Task.self, key: id) {
                            $0.project = try projects.randomElement(using: &rng).map { try Link(key: $0) }
                        }
                    }
                case 7:
                    if let id = projects.randomElement(using: &rng) {
                        _ = try tx.delete(Project.self, key: id)
                    }
                default:
                    let id = (projects.max() ?? 0) + 1
                    try tx.insert(Project(id: id, name: names.randomElement(using: &rng)!))
                    for _ in 0..<3 {
                        try tx.insert(Task(id: next, title: "t\(next)", project: try Link(key: id)))
                        next += 1
                    }
                }
            }
            let before = delegate.updates
            if let update = try storage.refresh() { sectionChanges += update.sectionChanges.count }
            #expect(delegate.updates - before <= 1, "round \(round): one update per commit")
            #expect(delegate.failures.isEmpty, "round \(round): \(delegate.failures)")
            #expect(MirroringStorageDelegate.contents(storage) == (try fresh()), "round \(round)")
            #expect(delegate.mirror.sections == (try fresh()), "round \(round)")
        }
        #expect(sectionChanges > 30)
    }
}
