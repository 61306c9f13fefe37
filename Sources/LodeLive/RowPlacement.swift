import ModelStorage

/// Decides which changed rows a batch update must move.
///
/// A row whose sort value (or section) changed need not move: if it passes no other row, a view
/// keeps it where it is and reloads it. In batch-update terms, every row that is neither deleted,
/// inserted nor moved keeps its order relative to the other such rows; a changed row may join them
/// when the number of unchanged rows before it is the same in the old and the new order (so it
/// passes none of them), it stays in its section, and it keeps its order relative to the other
/// changed rows that stay (the longest such run is kept, the fewest rows move).
enum RowPlacement {
    /// One changed row: its rank in the old and new order of the whole list (nil: not there), and
    /// whether its position key (sort values, section) changed.
    struct Row {
        var oldRank: Int?
        var newRank: Int?
        var keyChanged: Bool
        var sameSection: Bool
    }

    /// The indices of `rows` whose key changed that can stay in place.
    ///
    /// - Complexity: O(k log k) for k changed rows.
    static func staying(_ rows: [Row]) -> Set<Int> {
        var deletedOld: [Int] = []
        var insertedNew: [Int] = []
        var changedOld: [Int] = []
        var changedNew: [Int] = []
        for row in rows {
            switch (row.oldRank, row.newRank) {
            case (let old?, nil): deletedOld.append(old)
            case (nil, let new?): insertedNew.append(new)
            case (let old?, let new?) where row.keyChanged:
                changedOld.append(old)
                changedNew.append(new)
            default: break
            }
        }
        guard !changedOld.isEmpty else { return [] }
        deletedOld.sort()
        insertedNew.sort()
        changedOld.sort()
        changedNew.sort()
        // Changed rows with as many unchanged rows before them in both orders, by old rank.
        var candidates: [(index: Int, old: Int, new: Int)] = []
        for (index, row) in rows.enumerated() where row.keyChanged && row.sameSection {
            guard let old = row.oldRank, let new = row.newRank else { continue }
            let unchangedBefore = old - countBelow(old, deletedOld) - countBelow(old, changedOld)
            let unchangedAfter = new - countBelow(new, insertedNew) - countBelow(new, changedNew)
            if unchangedBefore == unchangedAfter { candidates.append((index, old, new)) }
        }
        if candidates.count <= 1 { return Set(candidates.map(\.index)) }
        candidates.sort { $0.old < $1.old }
        return Set(longestIncreasingSubsequence(candidates.map(\.new)).map { candidates[$0].index })
    }

    /// The number of elements of the sorted `values` below `value`.
    private static func countBelow(_ value: Int, _ values: [Int]) -> Int {
        var low = 0
        var high = values.count
        while low < high {
            let middle = (low + high) / 2
            if values[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
