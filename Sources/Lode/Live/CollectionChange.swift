import Foundation
import ModelStorage

/// What changed in a live list between two versions, in batch-update form: deletions at old indices,
/// insertions at new indices, modifications at old indices (with their new indices alongside), moves
/// from old to new. Each list is sorted ascending (moves by their old index).
///
/// A moved object whose content also changed is in ``moves`` and in ``modifiedMoves``; a view cannot
/// move and reload one row in one batch, so ``storageUpdate(section:model:)`` turns those into a delete
/// and an insert.
public struct CollectionChange: Equatable, Sendable, CustomStringConvertible {
    /// An object that moved.
    public struct Move: Equatable, Hashable, Sendable {
        /// Its old index.
        public var from: Int
        /// Its new index.
        public var to: Int

        /// Makes a move.
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Old indices of objects that left the list.
    public var deletions: [Int] = []
    /// New indices of objects that joined it.
    public var insertions: [Int] = []
    /// Old indices of objects that stayed in place and changed.
    public var modifications: [Int] = []
    /// The new indices of the same objects, in the same order.
    public var modificationsNew: [Int] = []
    /// Objects that changed position.
    public var moves: [Move] = []
    /// New indices of moved objects whose content changed too.
    public var modifiedMoves: [Int] = []
    /// The version the consumer had.
    public var fromVersion: Int
    /// The version the change leads to.
    public var toVersion: Int
    /// True when the change was computed by evaluating the query again in full (the change log did not
    /// reach back, or the type was cleared, or the query cannot be maintained incrementally); it is
    /// exact all the same, but every object that stayed is reported as modified when the log could not
    /// say which ones changed.
    public var wasFullyReevaluated = false

    /// Makes an empty change between two versions.
    public init(fromVersion: Int, toVersion: Int) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
    }

    /// True when nothing in the list changed.
    public var isEmpty: Bool {
        deletions.isEmpty && insertions.isEmpty && modifications.isEmpty && moves.isEmpty
    }

    /// The change as a ModelStorage update for one section. `model` gives the object at a new index,
    /// captured for reloads.
    public func storageUpdate(section: Int = 0, model: (Int) -> Any? = { _ in nil }) -> StorageUpdate {
        let update = StorageUpdate()
        let reloadedMoves = Set(modifiedMoves)
        var deletes = deletions
        var inserts = insertions
        var plainMoves: [Move] = []
        for move in moves {
            if reloadedMoves.contains(move.to) {
                deletes.append(move.from)
                inserts.append(move.to)
            } else {
                plainMoves.append(move)
            }
        }
        for index in deletes.sorted() {
            update.objectChanges.append((.delete, [IndexPath(item: index, section: section)]))
        }
        for index in inserts.sorted() {
            update.objectChanges.append((.insert, [IndexPath(item: index, section: section)]))
        }
        for move in plainMoves {
            update.objectChanges.append(
                (
                    .move,
                    [
                        IndexPath(item: move.from, section: section),
                        IndexPath(item: move.to, section: section),
                    ]
                ))
        }
        for (old, new) in zip(modifications, modificationsNew) {
            let path = IndexPath(item: old, section: section)
            update.objectChanges.append((.update, [path]))
            if let object = model(new) { update.updatedObjects[path] = object }
        }
        return update
    }

    /// The change as a standard-library difference between the old and new lists of identities.
    public func difference<ID: Hashable>(from old: [ID], to new: [ID]) -> CollectionDifference<ID> {
        var changes: [CollectionDifference<ID>.Change] = []
        let movedFrom = Dictionary(uniqueKeysWithValues: moves.map { ($0.from, $0.to) })
        let movedTo = Dictionary(uniqueKeysWithValues: moves.map { ($0.to, $0.from) })
        for index in (deletions + moves.map(\.from)).sorted() {
            changes.append(.remove(offset: index, element: old[index], associatedWith: movedFrom[index]))
        }
        for index in (insertions + moves.map(\.to)).sorted() {
            changes.append(.insert(offset: index, element: new[index], associatedWith: movedTo[index]))
        }
        return CollectionDifference(changes)!
    }

    /// `v3→v4: delete [1], insert [0], modify [2→2], move [0→3]`.
    public var description: String {
        var parts: [String] = []
        if !deletions.isEmpty { parts.append("delete \(deletions)") }
        if !insertions.isEmpty { parts.append("insert \(insertions)") }
        if !modifications.isEmpty {
            parts.append(
                "modify ["
                    + zip(modifications, modificationsNew).map { "\($0)→\($1)" }.joined(separator: ", ") + "]"
            )
        }
        if !moves.isEmpty {
            parts.append("move [" + moves.map { "\($0.from)→\($0.to)" }.joined(separator: ", ") + "]")
        }
        return "v\(fromVersion)→v\(toVersion): "
            + (parts.isEmpty ? "no changes" : parts.joined(separator: ", "))
            + (wasFullyReevaluated ? " (re-evaluated)" : "")
    }
}
