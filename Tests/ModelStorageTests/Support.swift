import Foundation
import ModelStorage
import Testing

/// A delegate that applies each update and replays it on a list mirror, checking the mirror against
/// the storage's data after every batch, as a table view would.
final class MirroringDelegate<Item: Equatable>: StorageUpdating {
    let storage: any Storage
    var mirror: ListMirror<Item>
    var updates: [StorageUpdate] = []
    var reloads = 0
    var failures: [String] = []

    init(_ storage: any Storage) {
        self.storage = storage
        self.mirror = ListMirror(sections: MirroringDelegate.contents(of: storage))
    }

    static func contents(of storage: any Storage) -> [[Item]] {
        (0..<storage.numberOfSections()).map { section in
            (0..<storage.numberOfItems(inSection: section)).map { item in
                storage.item(at: IndexPath(item: item, section: section)) as! Item
            }
        }
    }

    func storageDidPerformUpdate(_ update: StorageUpdate) {
        updates.append(update)
        update.applyDeferredDatasourceUpdates()
        do {
            try mirror.replay(update, dataSource: Self.contents(of: storage))
        } catch {
            failures.append("\(error) in \(update)")
        }
        // Reloaded rows carry the model captured for them.
        for (path, model) in update.updatedObjects where model as? Item == nil {
            failures.append("updated object at \(path) is not an item: \(model)")
        }
    }

    func storageNeedsReloading() {
        reloads += 1
        mirror.reload(Self.contents(of: storage))
    }

    var lastUpdate: StorageUpdate? { updates.last }
}

func ip(_ item: Int, _ section: Int) -> IndexPath { IndexPath(item: item, section: section) }

/// The exact ordered changes of an update, for comparisons.
func changes(_ update: StorageUpdate?) -> [String] {
    guard let update else { return [] }
    return update.sectionChanges.map { "s.\($0.0.rawValue) \($0.1)" }
        + update.objectChanges.map { "\($0.0.rawValue) \($0.1.map { [$0.section, $0.item] })" }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
