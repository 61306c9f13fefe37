import Foundation

/// A storage shown from ``Snapshot``s: ``apply(_:)`` diffs the new snapshot against the current one
/// and delivers one update with section and item deletes, inserts, moves and reloads.
///
/// Items are the item identifiers, or what ``itemProvider`` makes of them; header and footer models
/// default to the section identifiers.
public final class SnapshotStorage<SectionID: Hashable & Sendable, ItemID: Hashable & Sendable>: BaseStorage,
    Storage
{
    /// The snapshot the app last applied.
    public private(set) var snapshot = Snapshot<SectionID, ItemID>()
    private var visible = Snapshot<SectionID, ItemID>()
    private let appliedUpdates = AppliedUpdates()
    /// Turns an item identifier into the model a view shows (by default the identifier itself).
    public var itemProvider: ((ItemID) -> Any?)?

    /// Makes an empty storage whose header models are the section identifiers.
    public override init() {
        super.init()
        headerModelProvider = { [weak self] index in
            guard let self, self.visible.sections.indices.contains(index) else { return nil }
            return self.visible.sections[index].id
        }
    }

    /// The number of sections the view has applied.
    public func numberOfSections() -> Int { visible.sections.count }

    /// The number of items in a section, as applied.
    public func numberOfItems(inSection section: Int) -> Int {
        visible.sections.indices.contains(section) ? visible.sections[section].items.count : 0
    }

    /// The item at an index path, as applied.
    public func item(at indexPath: IndexPath) -> Any? {
        guard let identifier = itemIdentifier(at: indexPath) else { return nil }
        return itemProvider.map { $0(identifier) } ?? identifier
    }

    /// The item identifier at an index path, as applied.
    public func itemIdentifier(at indexPath: IndexPath) -> ItemID? {
        guard indexPath.count == 2, visible.sections.indices.contains(indexPath.section),
            visible.sections[indexPath.section].items.indices.contains(indexPath.item)
        else { return nil }
        return visible.sections[indexPath.section].items[indexPath.item]
    }

    /// Shows `newSnapshot`, delivering the difference from the current one as one update.
    public func apply(_ newSnapshot: Snapshot<SectionID, ItemID>) {
        let old = snapshot.sections.map {
            ChangeSetBuilder<SectionID, ItemID>.SectionShape(id: $0.id, items: $0.items)
        }
        let new = newSnapshot.sections.map {
            ChangeSetBuilder<SectionID, ItemID>.SectionShape(id: $0.id, items: $0.items)
        }
        let changes = ChangeSetBuilder(
            from: old, to: new, reloadedItems: newSnapshot.reloadedItems,
            reloadedSections: newSnapshot.reloadedSections)
        let applied = newSnapshot.clearingReloads()
        snapshot = applied
        guard !changes.isEmpty else {
            // Nothing changed; while the view holds an update, that update shows this snapshot.
            if appliedUpdates.pending == 0 { visible = applied }
            return
        }
        let update = StorageUpdate()
        let provider = itemProvider
        changes.record(into: update) { path in
            let identifier = applied.sections[path.section].items[path.item]
            return provider.map { $0(identifier) } ?? identifier
        }
        appliedUpdates.enqueue(update, reportingTo: anomalyHandler) { [weak self] in self?.visible = applied }
        deliver(update)
    }
}
