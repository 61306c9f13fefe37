import Foundation

/// A storage of one section whose items are replaced as a whole: ``setItems(_:)`` and
/// ``addItems(_:_:)`` compute the change with a ``DiffingAlgorithm`` and deliver it as one update.
/// Use ``SingleSectionEquatableStorage`` or ``SingleSectionHashableStorage``.
open class SingleSectionStorage<T: EntityIdentifiable & Equatable>: BaseStorage, Storage {
    /// The algorithm that computes updates.
    public let differ: any DiffingAlgorithm
    /// The items, with every change made (the app's view).
    public private(set) var items: [T]
    private var visible: [T]
    private let applied = AppliedUpdates()

    /// Makes a storage with initial items and a differ.
    public init(items: [T] = [], differ: any DiffingAlgorithm) {
        self.items = items
        self.visible = items
        self.differ = differ
        super.init()
    }

    /// Always 1.
    public func numberOfSections() -> Int { 1 }

    /// The number of items the view has applied (0 for other sections).
    public func numberOfItems(inSection section: Int) -> Int { section == 0 ? visible.count : 0 }

    /// The item at an index path, as the view has applied it.
    public func item(at indexPath: IndexPath) -> Any? {
        guard indexPath.count == 2, indexPath.section == 0, visible.indices.contains(indexPath.item) else {
            return nil
        }
        return visible[indexPath.item]
    }

    /// Replaces the items and delivers the difference as one update (nothing when there is none).
    public func setItems(_ newItems: [T]) {
        let oldItems = items
        let operations = differ.diff(from: oldItems, to: newItems)
        items = newItems
        guard !operations.isEmpty else {
            // Nothing changed; while the view holds an update, that update shows these items.
            if applied.pending == 0 { visible = newItems }
            return
        }
        let update = StorageUpdate()
        var newIndex: [AnyHashable: Int]?
        for operation in operations {
            switch operation {
            case .delete(let index):
                update.objectChanges.append((.delete, [IndexPath(item: index, section: 0)]))
            case .insert(let index):
                update.objectChanges.append((.insert, [IndexPath(item: index, section: 0)]))
            case .move(let from, let to):
                update.objectChanges.append(
                    (.move, [IndexPath(item: from, section: 0), IndexPath(item: to, section: 0)]))
            case .update(let index):
                let path = IndexPath(item: index, section: 0)
                update.objectChanges.append((.update, [path]))
                if newIndex == nil {
                    var positions: [AnyHashable: Int] = [:]
                    for (position, item) in newItems.enumerated() where positions[item.identifier] == nil {
                        positions[item.identifier] = position
                    }
                    newIndex = positions
                }
                if index < oldItems.count, let position = newIndex?[oldItems[index].identifier] {
                    update.updatedObjects[path] = newItems[position]
                }
            }
        }
        applied.enqueue(update, reportingTo: anomalyHandler) { [weak self] in self?.visible = newItems }
        deliver(update)
    }

    /// Adds a batch of items, combined with the current ones by `strategy`, as one update.
    public func addItems(
        _ newItems: [T], _ strategy: any AccumulationStrategy = AdditiveAccumulationStrategy()
    ) {
        setItems(strategy.accumulate(oldItems: items, newItems: newItems))
    }
}

/// A single-section storage for equatable items; by default its updates come from ``MyersDiffer``
/// (inserts and deletes; a changed value is a delete and an insert).
public final class SingleSectionEquatableStorage<T: EntityIdentifiable & Equatable>: SingleSectionStorage<T> {
    /// Makes a storage.
    public override init(items: [T] = [], differ: any DiffingAlgorithm = MyersDiffer()) {
        super.init(items: items, differ: differ)
    }
}

/// A single-section storage for hashable items; by default its updates come from ``HeckelDiffer``
/// (deletes, inserts, moves and updates, matched by identifier).
public final class SingleSectionHashableStorage<T: EntityIdentifiable & Hashable>: SingleSectionStorage<T> {
    /// Makes a storage.
    public override init(items: [T] = [], differ: any DiffingAlgorithm = HeckelDiffer()) {
        super.init(items: items, differ: differ)
    }
}

/// A type-erased identifiable, equatable value: lets one single-section storage hold several model
/// types. Mappings see through it to the boxed value's mapping.
public struct AnyIdentifiableEquatable: EntityIdentifiable, Equatable, TypeErasedModel {
    /// The wrapped value.
    public let base: Any
    /// The wrapped value's identifier.
    public let identifier: AnyHashable
    private let isEqual: (Any) -> Bool

    /// Wraps a value.
    public init<T: EntityIdentifiable & Equatable>(_ value: T) {
        base = value
        identifier = value.identifier
        isEqual = { ($0 as? T) == value }
    }

    /// Equal when both wrap equal values of the same type.
    public static func == (lhs: AnyIdentifiableEquatable, rhs: AnyIdentifiableEquatable) -> Bool {
        lhs.isEqual(rhs.base)
    }
}
