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

    /// Fills the change by diffing two lists of primary keys (Heckel, minimal moves).
    mutating func apply(diffing old: [[UInt8]], _ new: [[UInt8]], modified: Set<[UInt8]>) {
        var newIndex: [[UInt8]: Int] = [:]
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
