/// How ``SingleSectionStorage/addItems(_:_:)`` combines the current items with a new batch.
public protocol AccumulationStrategy {
    /// The items after adding `newItems` to `oldItems`.
    func accumulate<T: EntityIdentifiable>(oldItems: [T], newItems: [T]) -> [T]
}

/// Appends the new items, duplicates and all (the default).
public struct AdditiveAccumulationStrategy: AccumulationStrategy, Sendable {
    /// Makes the strategy.
    public init() {}

    /// `oldItems + newItems`.
    public func accumulate<T: EntityIdentifiable>(oldItems: [T], newItems: [T]) -> [T] { oldItems + newItems }
}

/// A new item whose identifier is already present replaces it in place; other new items are
/// appended. When the new batch repeats an identifier, the last value wins, at the place of the
/// first one (the lineage replaced the wrong slot in that case).
public struct UpdateOldValuesAccumulationStrategy: AccumulationStrategy, Sendable {
    /// Makes the strategy.
    public init() {}

    /// The merged items.
    public func accumulate<T: EntityIdentifiable>(oldItems: [T], newItems: [T]) -> [T] {
        var result = oldItems
        var position: [AnyHashable: Int] = [:]
        for (index, item) in oldItems.enumerated() where position[item.identifier] == nil {
            position[item.identifier] = index
        }
        for item in newItems {
            if let index = position[item.identifier] {
                result[index] = item
            } else {
                position[item.identifier] = result.count
                result.append(item)
            }
        }
        return result
    }
}

/// Old items whose identifiers come again are removed and the new batch is appended, so each
/// identifier moves to its place in the new batch. When the batch repeats an identifier, it appears
/// once, with its last value, at the place of its last occurrence.
public struct DeleteOldValuesAccumulationStrategy: AccumulationStrategy, Sendable {
    /// Makes the strategy.
    public init() {}

    /// The merged items.
    public func accumulate<T: EntityIdentifiable>(oldItems: [T], newItems: [T]) -> [T] {
        var lastOccurrence: [AnyHashable: Int] = [:]
        for (index, item) in newItems.enumerated() { lastOccurrence[item.identifier] = index }
        let kept = oldItems.filter { lastOccurrence[$0.identifier] == nil }
        let added = newItems.enumerated().filter { lastOccurrence[$0.element.identifier] == $0.offset }.map(
            \.element)
        return kept + added
    }
}
