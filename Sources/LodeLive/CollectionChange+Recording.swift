import Foundation
import ModelStorage

extension CollectionChange {
    /// Fills the change from the engine's changed rows: deletions, insertions, modifications in place
    /// (also of rows whose sort value changed without passing another row), and moves.
    mutating func record<Element>(_ rows: [LiveQueryEngine<Element>.Row]) {
        // Only survivors whose sort values changed can be moves; most commits have none.
        let staying =
            rows.contains { $0.oldRank != nil && $0.newRank != nil && $0.oldEntry != $0.newEntry }
            ? RowPlacement.staying(
                rows.map {
                    .init(
                        oldRank: $0.oldRank, newRank: $0.newRank, keyChanged: $0.oldEntry != $0.newEntry,
                        sameSection: true)
                }) : []
        for (index, row) in rows.enumerated() {
            switch (row.oldRank, row.newRank) {
            case (let old?, nil): deletions.append(old)
            case (nil, let new?): insertions.append(new)
            case (let old?, let new?):
                if row.oldEntry == row.newEntry || staying.contains(index) {
                    if row.modified { modifications.append(.init(old: old, new: new)) }
                } else {
                    moves.append(.init(from: old, to: new, modified: row.modified))
                }
            default: break
            }
        }
        sort()
    }

    /// Fills the change by diffing two orders of small non-negative numbers that stand for objects
    /// (each number at most once per order): those only in `old` are deleted, those only in `new`
    /// inserted, of the others a longest run still in their old order stays and the rest move —
    /// the fewest moves — and those in `modified` that stay are modifications. Arrays indexed by
    /// number, no hashing: O(*n* log *n*).
    mutating func apply(diffingNumbers old: [Int], _ new: [Int], modified: Set<Int>) {
        let size =
            (old.max() ?? -1) + 1 > (new.max() ?? -1) + 1 ? (old.max() ?? -1) + 1 : (new.max() ?? -1) + 1
        var oldPosition = [Int](repeating: -1, count: size)
        var newPosition = [Int](repeating: -1, count: size)
        for (index, number) in old.enumerated() { oldPosition[number] = index }
        for (index, number) in new.enumerated() { newPosition[number] = index }
        for (index, number) in old.enumerated() where newPosition[number] < 0 { deletions.append(index) }
        for (index, number) in new.enumerated() where oldPosition[number] < 0 { insertions.append(index) }
        // The survivors in their new order, by old position: a longest increasing run stays.
        let survivors = new.filter { oldPosition[$0] >= 0 }
        var staying = [Bool](repeating: false, count: size)
        for index in longestIncreasingSubsequence(survivors.map { oldPosition[$0] }) {
            staying[survivors[index]] = true
        }
        var isModified = [Bool](repeating: false, count: size)
        for number in modified where number < size { isModified[number] = true }
        for number in survivors {
            let from = oldPosition[number]
            let to = newPosition[number]
            if staying[number] {
                if isModified[number] { modifications.append(.init(old: from, new: to)) }
            } else {
                moves.append(.init(from: from, to: to, modified: isModified[number]))
            }
        }
        sort()
    }

    /// Fills the change by diffing two lists of keys (Heckel, minimal moves): primary keys, or any
    /// numbers that stand for them.
    mutating func apply<Key: Hashable>(diffing old: [Key], _ new: [Key], modified: Set<Key>) {
        var newIndex: [Key: Int] = [:]
        for (index, key) in new.enumerated() { newIndex[key] = index }
        for operation in HeckelDiffer().diff(old, new) {
            switch operation {
            case .delete(let index): deletions.append(index)
            case .insert(let index): insertions.append(index)
            case .move(let from, let to):
                moves.append(.init(from: from, to: to, modified: modified.contains(new[to])))
            case .update: break
            }
        }
        // Objects that kept their place and changed.
        let movedOrGone = Set(deletions).union(moves.map(\.from))
        for (index, key) in old.enumerated() where !movedOrGone.contains(index) && modified.contains(key) {
            if let target = newIndex[key] { modifications.append(.init(old: index, new: target)) }
        }
        sort()
    }
}
