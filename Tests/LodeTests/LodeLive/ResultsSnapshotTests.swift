import Dispatch
import Foundation
import Lode
import LodeTestSupport
import ModelStorage
import Synchronization
import Testing

@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore

@Suite struct ResultsSnapshotTests {
    @Test func resultsAndSectionsBecomeDiffableSnapshotsThatApplyToASnapshotStorage() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for (id, group) in ["b", "a", "b"].enumerated() {
                try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: group))
            }
        }
        let sectioned = store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group)
        let snapshot = try sectioned.snapshot()
        #expect(snapshot.sectionIdentifiers == ["a", "b"])
        #expect(
            try snapshot.itemIdentifiers(inSection: "b") == [
                try ObjectID(Task.self, key: 0), try ObjectID(Task.self, key: 2),
            ])
        let storage = SnapshotStorage<String, ObjectID>()
        storage.apply(snapshot)
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.group = "a" } }
        let delegate = MirroringSnapshotDelegate(storage)
        storage.delegate = delegate
        storage.apply(try store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group).snapshot())
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
        #expect(try store.objects(Task.self).snapshot(section: "all").itemIdentifiers.count == 3)
    }
}

/// Replays snapshot-storage updates on a mirror of object identities.
final class MirroringSnapshotDelegate<SectionID: Hashable & Sendable>: StorageUpdating {
    let storage: SnapshotStorage<SectionID, ObjectID>
    var mirror: ListMirror<ObjectID>
    var failures: [String] = []

    init(_ storage: SnapshotStorage<SectionID, ObjectID>) {
        self.storage = storage
        mirror = ListMirror(sections: Self.contents(storage))
    }

    static func contents(_ storage: SnapshotStorage<SectionID, ObjectID>) -> [[ObjectID]] {
        (0..<storage.numberOfSections()).map { section in
            (0..<storage.numberOfItems(inSection: section)).map {
                storage.itemIdentifier(at: IndexPath(item: $0, section: section))!
            }
        }
    }

    func storageDidPerformUpdate(_ update: StorageUpdate) {
        update.applyDeferredDatasourceUpdates()
        do {
            try mirror.apply(update, dataSource: Self.contents(storage))
        } catch {
            failures.append("\(error)")
        }
        if mirror.sections != Self.contents(storage) { failures.append("mirror differs") }
    }

    func storageNeedsReloading() {}
}
