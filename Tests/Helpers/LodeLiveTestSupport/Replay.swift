import Dispatch
import Foundation
import LodeLive
import LodeQuery
import LodeStore
import LodeTestModels
import LodeTestSupport
import ModelStorage
import Testing

/// Replays a change on a mirror of the old rows and checks it gives the new rows exactly.
func replay(_ change: CollectionChange, old: [Task], new: [Task]) throws -> [Task] {
    var mirror = ListMirror(sections: [old])
    let update = change.storageUpdate { new[$0] }
    try mirror.apply(update, dataSource: [new])
    return mirror.sections[0]
}

func changesText(_ update: StorageUpdate) -> [String] {
    update.objectChanges.map { "\($0.0.rawValue) \($0.1.map(\.item))" }
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
