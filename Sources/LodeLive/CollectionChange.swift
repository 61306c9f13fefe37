import Foundation
import ModelStorage

/// What changed in a live list between two versions, in batch-update form: deletions at old indices,
/// insertions at new indices, modifications (objects that kept their place and changed) with their
/// old and new indices, and moves from old to new. Each list is sorted ascending (modifications and
/// moves by their old index).
///
/// An object whose sort value changed without passing any other object is a modification, not a
/// move. A moved object whose content also changed is a move marked ``Move/isModified``; a view
/// cannot move and reload one row in one batch, so ``storageUpdate(section:model:)`` turns those into
/// a delete and an insert.
///
/// Every change Lode delivers is well formed (``isWellFormed``) with its lists in ascending order;
/// a change an app builds itself may check ``isWellFormed`` before a view applies it.
public struct CollectionChange: Equatable, Sendable, CustomStringConvertible {
    /// An object that changed position.
    public struct Move: Equatable, Hashable, Sendable {
        /// Its old index.
        public var from: Int
        /// Its new index.
        public var to: Int
        /// True when its content changed too.
        public var isModified: Bool

        /// Makes a move.
        public init(from: Int, to: Int, modified: Bool = false) {
            self.from = from
            self.to = to
            self.isModified = modified
        }
    }

    /// An object that kept its place among the others and changed.
    public struct Modification: Equatable, Hashable, Sendable {
        /// Its old index (where a view reloads it).
        public var old: Int
        /// Its new index (where its new content is read).
        public var new: Int

        /// Makes a modification.
        public init(old: Int, new: Int) {
            self.old = old
            self.new = new
        }
    }

    /// Old indices of objects that left the list.
    public var deletions: [Int] = []
    /// New indices of objects that joined it.
    public var insertions: [Int] = []
    /// Objects that stayed in place and changed.
    public var modifications: [Modification] = []
    /// Objects that changed position.
    public var moves: [Move] = []
    /// The version the consumer had.
    public var fromVersion: Int
    /// The version the change leads to.
    public var toVersion: Int
    /// True when the change was computed by evaluating the query again in full (the change log did not
    /// reach back, or the type was cleared, or the query cannot be maintained incrementally); it is
    /// exact all the same, but every object that stayed is reported as modified when the log could not
    /// say which ones changed.
    public var wasFullyReevaluated = false

    /// Makes a change between two versions.
    public init(
        fromVersion: Int, toVersion: Int, deletions: [Int] = [], insertions: [Int] = [],
        modifications: [Modification] = [], moves: [Move] = []
    ) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.moves = moves
    }

    /// True when nothing in the list changed.
    public var isEmpty: Bool {
        deletions.isEmpty && insertions.isEmpty && modifications.isEmpty && moves.isEmpty
    }

    /// The change as a ModelStorage update for one section. `model` gives the object at a new index,
    /// captured for reloads (`{ try results[$0] }`); an error it throws is rethrown.
    ///
    /// - Complexity: O(*c*) for *c* changes, and one call of `model` per modified row.
    /// - Throws: what `model` throws.
    public func storageUpdate(section: Int = 0, model: (Int) throws -> Any?) rethrows -> StorageUpdate {
        try SectionedChange(self, section: section).storageUpdate { try model($0.item) }
    }

    /// The change as a ModelStorage update for one section, without models for reloads.
    ///
    /// - Complexity: O(*c*) for *c* changes.
    public func storageUpdate(section: Int = 0) -> StorageUpdate {
        storageUpdate(section: section) { _ in nil }
    }

    /// The change as a standard-library difference between the old and new lists of identities.
    ///
    /// - Complexity: O(*c* log *c*) for *c* changes.
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

    /// Sorts every list the documented way (and, in debug builds, checks the change is well formed).
    mutating func sort() {
        sortRows()
        assert(isWellFormed, "CollectionChange: an index is used twice: \(self)")
        if internalChecksEnabled { checkInvariants() }
    }

    /// Checks the change's invariants (with `LODE_INTERNAL_CHECKS`, after every change Lode makes):
    /// well formed (``isWellFormed``) and every list in ascending order without repeats.
    func checkInvariants() { checkInvariants(wellFormed: isWellFormed) }

    /// No old index is deleted, moved or modified twice, and no new index inserted, moved to or
    /// modified twice: what a batch update requires.
    public var isWellFormed: Bool {
        let (old, new) = usedPositions
        return rowsUseEachPositionOnce && old.allSatisfy { $0 >= 0 } && new.allSatisfy { $0 >= 0 }
    }

    /// `v3→v4: delete [1], insert [0], modify [2→2], move [0→3]` (a modified move is marked `*`).
    public var description: String {
        var parts: [String] = []
        if !deletions.isEmpty { parts.append("delete \(deletions)") }
        if !insertions.isEmpty { parts.append("insert \(insertions)") }
        if !modifications.isEmpty {
            parts.append(
                "modify [" + modifications.map { "\($0.old)→\($0.new)" }.joined(separator: ", ") + "]")
        }
        if !moves.isEmpty {
            parts.append(
                "move ["
                    + moves.map { "\($0.from)→\($0.to)\($0.isModified ? "*" : "")" }.joined(separator: ", ")
                    + "]")
        }
        return "v\(fromVersion)→v\(toVersion): "
            + (parts.isEmpty ? "no changes" : parts.joined(separator: ", "))
            + (wasFullyReevaluated ? " (re-evaluated)" : "")
    }
}

extension CollectionChange: BatchRowChanges {
    static func positions(of modification: Modification) -> (old: Int, new: Int) {
        (modification.old, modification.new)
    }

    static func positions(of move: Move) -> (old: Int, new: Int) { (move.from, move.to) }
}
