import Foundation

/// Computes the batch update that turns one list of sections into another, from the identities of
/// sections and items: section deletes, inserts and moves; item deletes, inserts, moves (within and
/// across sections) and reloads. Every storage builds its updates this way, so a batch of any number
/// of edits becomes one valid, minimal update.
///
/// Moves are minimal: the items (and sections) that keep their relative order — the longest
/// increasing subsequence — stay; only the others move. Items of deleted or inserted sections come
/// and go with their section. An item that moves and is also reloaded is reported as a delete and an
/// insert (a view cannot move and reload one row in one batch).
struct ChangeSetBuilder<SectionID: Hashable, ItemID: Hashable> {
    struct SectionShape {
        var id: SectionID
        var items: [ItemID]
    }

    var sectionDeletes: [Int] = []
    var sectionInserts: [Int] = []
    var sectionMoves: [(Int, Int)] = []
    var sectionReloads: [Int] = []
    var itemDeletes: [IndexPath] = []
    var itemInserts: [IndexPath] = []
    var itemMoves: [(IndexPath, IndexPath)] = []
    /// Reloads as (old index path, new index path).
    var itemReloads: [(IndexPath, IndexPath)] = []

    init(
        from old: [SectionShape], to new: [SectionShape], reloadedItems: Set<ItemID> = [],
        reloadedSections: Set<SectionID> = []
    ) {
        var oldSectionIndex: [SectionID: Int] = [:]
        for (index, section) in old.enumerated() { oldSectionIndex[section.id] = index }
        var newSectionIndex: [SectionID: Int] = [:]
        for (index, section) in new.enumerated() { newSectionIndex[section.id] = index }

        // Sections.
        var survivingOld: [Int] = []  // old indices of surviving sections, in new order
        var survivingNew: [Int] = []
        for (newIndex, section) in new.enumerated() {
            if let oldIndex = oldSectionIndex[section.id] {
                survivingOld.append(oldIndex)
                survivingNew.append(newIndex)
            } else {
                sectionInserts.append(newIndex)
            }
        }
        for (oldIndex, section) in old.enumerated() where newSectionIndex[section.id] == nil {
            sectionDeletes.append(oldIndex)
        }
        let stayingSections = Set(longestIncreasingSubsequence(survivingOld).map { survivingOld[$0] })
        /// Sections whose contents are replaced wholesale: reloaded ones (moved ones become delete+insert).
        var replacedOld = Set<Int>()
        var replacedNew = Set<Int>()
        for (position, oldIndex) in survivingOld.enumerated() {
            let newIndex = survivingNew[position]
            let reloaded = reloadedSections.contains(old[oldIndex].id)
            if !stayingSections.contains(oldIndex) {
                if reloaded {
                    sectionDeletes.append(oldIndex)
                    sectionInserts.append(newIndex)
                    replacedOld.insert(oldIndex)
                    replacedNew.insert(newIndex)
                } else {
                    sectionMoves.append((oldIndex, newIndex))
                }
            } else if reloaded {
                sectionReloads.append(oldIndex)
                replacedOld.insert(oldIndex)
                replacedNew.insert(newIndex)
            }
        }
        let deletedOld = Set(sectionDeletes)
        let insertedNew = Set(sectionInserts)

        // Items.
        var oldPosition: [ItemID: IndexPath] = [:]
        for (sectionIndex, section) in old.enumerated() where !deletedOld.contains(sectionIndex) {
            for (row, item) in section.items.enumerated() {
                oldPosition[item] = IndexPath(item: row, section: sectionIndex)
            }
        }
        var newPosition: [ItemID: IndexPath] = [:]
        for (sectionIndex, section) in new.enumerated() where !insertedNew.contains(sectionIndex) {
            for (row, item) in section.items.enumerated() {
                newPosition[item] = IndexPath(item: row, section: sectionIndex)
            }
        }
        for (sectionIndex, section) in old.enumerated() where !deletedOld.contains(sectionIndex) {
            if replacedOld.contains(sectionIndex) { continue }
            for (row, item) in section.items.enumerated() {
                let target = newPosition[item]
                if target == nil || replacedNew.contains(target!.section) {
                    itemDeletes.append(IndexPath(item: row, section: sectionIndex))
                }
            }
        }
        for (sectionIndex, section) in new.enumerated() where !insertedNew.contains(sectionIndex) {
            if replacedNew.contains(sectionIndex) { continue }
            // Items that stay in this section (same section identity), in new order, by old row.
            var stayingRows: [Int] = []
            var stayingItems: [(ItemID, Int)] = []
            for (row, item) in section.items.enumerated() {
                guard let source = oldPosition[item], !replacedOld.contains(source.section) else {
                    itemInserts.append(IndexPath(item: row, section: sectionIndex))
                    continue
                }
                if old[source.section].id == section.id {
                    stayingRows.append(source.item)
                    stayingItems.append((item, row))
                } else {
                    // Across sections: a move, or delete + insert when it is also reloaded.
                    let destination = IndexPath(item: row, section: sectionIndex)
                    if reloadedItems.contains(item) {
                        itemDeletes.append(source)
                        itemInserts.append(destination)
                    } else {
                        itemMoves.append((source, destination))
                    }
                }
            }
            let keep = Set(longestIncreasingSubsequence(stayingRows).map { stayingRows[$0] })
            let oldSection = oldSectionIndex[section.id]!
            for (position, (item, row)) in stayingItems.enumerated() {
                let source = IndexPath(item: stayingRows[position], section: oldSection)
                let destination = IndexPath(item: row, section: sectionIndex)
                let reloaded = reloadedItems.contains(item)
                if keep.contains(stayingRows[position]) {
                    if reloaded { itemReloads.append((source, destination)) }
                } else if reloaded {
                    itemDeletes.append(source)
                    itemInserts.append(destination)
                } else {
                    itemMoves.append((source, destination))
                }
            }
        }
        sectionDeletes.sort()
        sectionInserts.sort()
        sectionMoves.sort { $0.0 < $1.0 }
        sectionReloads.sort()
        itemDeletes.sort()
        itemInserts.sort()
        itemMoves.sort { $0.0 < $1.0 }
        itemReloads.sort { $0.0 < $1.0 }
    }

    /// True when nothing changed.
    var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && sectionMoves.isEmpty && sectionReloads.isEmpty
            && itemDeletes.isEmpty && itemInserts.isEmpty && itemMoves.isEmpty && itemReloads.isEmpty
    }

    /// Writes the changes into `update` (sections first, then items; each kind in ascending order), with
    /// the model of every reloaded item taken from `model(at:)` at its new position.
    func record(into update: StorageUpdate, model: (IndexPath) -> Any?) {
        for index in sectionDeletes { update.sectionChanges.append((.delete, [index])) }
        for index in sectionInserts { update.sectionChanges.append((.insert, [index])) }
        for (from, to) in sectionMoves { update.sectionChanges.append((.move, [from, to])) }
        for index in sectionReloads { update.sectionChanges.append((.update, [index])) }
        for path in itemDeletes { update.objectChanges.append((.delete, [path])) }
        for path in itemInserts { update.objectChanges.append((.insert, [path])) }
        for (from, to) in itemMoves { update.objectChanges.append((.move, [from, to])) }
        for (from, to) in itemReloads {
            update.objectChanges.append((.update, [from]))
            if let model = model(to) { update.updatedObjects[from] = model }
        }
    }
}

/// For each position of `values`, whether it is in one longest strictly increasing subsequence
/// (the one ``longestIncreasingSubsequence(_:)`` returns), without the list of positions.
///
/// - Complexity: O(n log n).
@inlinable
public func longestIncreasingSubsequenceFlags(_ values: [Int]) -> [Bool] {
    var flags = [Bool](repeating: false, count: values.count)
    guard !values.isEmpty else { return flags }
    var tails: [Int] = []
    var previous = [Int](repeating: -1, count: values.count)
    for (index, value) in values.enumerated() {
        // Lists mostly keep their order: extending the longest run needs no search.
        if let last = tails.last, values[last] < value {
            previous[index] = last
            tails.append(index)
            continue
        }
        var low = 0
        var high = tails.count
        while low < high {
            let middle = (low + high) / 2
            if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
        }
        if low > 0 { previous[index] = tails[low - 1] }
        if low == tails.count { tails.append(index) } else { tails[low] = index }
    }
    var cursor = tails.last!
    while cursor >= 0 {
        flags[cursor] = true
        cursor = previous[cursor]
    }
    return flags
}

/// The positions (indices into `values`) of one longest strictly increasing subsequence: the
/// elements a list can keep in place while the others move (the differs use it, and so do Lode's
/// live results).
///
/// - Complexity: O(n log n).
@inlinable
public func longestIncreasingSubsequence(_ values: [Int]) -> [Int] {
    let flags = longestIncreasingSubsequenceFlags(values)
    return flags.indices.filter { flags[$0] }
}
