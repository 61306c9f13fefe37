import Foundation
import ModelStorage

/// What changed in sectioned results between two versions: section deletions (old indices) and
/// insertions (new), then row changes as index paths — deletions at old paths, insertions at new
/// ones, modifications with their old and new paths, moves from old to new (also across sections).
/// Rows of deleted or inserted sections come and go with their section.
public struct SectionedChange: Equatable, Sendable, CustomStringConvertible {
    /// A row that moved.
    public struct Move: Equatable, Hashable, Sendable {
        /// Its old index path.
        public var from: IndexPath
        /// Its new index path.
        public var to: IndexPath
        /// True when its content changed too.
        public var isModified: Bool

        /// Makes a move.
        public init(from: IndexPath, to: IndexPath, modified: Bool = false) {
            self.from = from
            self.to = to
            self.isModified = modified
        }
    }

    /// A row that kept its place and changed.
    public struct Modification: Equatable, Hashable, Sendable {
        /// Its old index path (where a view reloads it).
        public var old: IndexPath
        /// Its new index path (where its new content is read).
        public var new: IndexPath

        /// Makes a modification.
        public init(old: IndexPath, new: IndexPath) {
            self.old = old
            self.new = new
        }
    }

    /// Old indices of sections that emptied.
    public var sectionDeletions: [Int] = []
    /// New indices of sections that appeared.
    public var sectionInsertions: [Int] = []
    /// Old index paths of rows that left.
    public var deletions: [IndexPath] = []
    /// New index paths of rows that joined.
    public var insertions: [IndexPath] = []
    /// Rows that changed in place.
    public var modifications: [Modification] = []
    /// Rows that moved.
    public var moves: [Move] = []
    /// The version the consumer had.
    public var fromVersion: Int
    /// The version the change leads to.
    public var toVersion: Int
    /// True when the query was evaluated again in full to compute the change.
    public var wasFullyReevaluated = false

    /// Makes a change between two versions.
    public init(
        fromVersion: Int, toVersion: Int, sectionDeletions: [Int] = [], sectionInsertions: [Int] = [],
        deletions: [IndexPath] = [], insertions: [IndexPath] = [], modifications: [Modification] = [],
        moves: [Move] = []
    ) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.sectionDeletions = sectionDeletions
        self.sectionInsertions = sectionInsertions
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.moves = moves
    }

    /// The change of one list, as the change of section `section`.
    public init(_ change: CollectionChange, section: Int) {
        func path(_ item: Int) -> IndexPath { IndexPath(item: item, section: section) }
        self.init(
            fromVersion: change.fromVersion, toVersion: change.toVersion,
            deletions: change.deletions.map(path), insertions: change.insertions.map(path),
            modifications: change.modifications.map { .init(old: path($0.old), new: path($0.new)) },
            moves: change.moves.map { .init(from: path($0.from), to: path($0.to), modified: $0.isModified) })
        wasFullyReevaluated = change.wasFullyReevaluated
    }

    /// True when nothing changed.
    public var isEmpty: Bool {
        sectionDeletions.isEmpty && sectionInsertions.isEmpty && deletions.isEmpty && insertions.isEmpty
            && modifications.isEmpty && moves.isEmpty
    }

    /// Sorts every list the documented way (and, in debug builds, checks the change is well formed).
    mutating func sort() {
        sectionDeletions.sort()
        sectionInsertions.sort()
        sortRows()
        assert(isWellFormed, "SectionedChange: an index is used twice: \(self)")
        if internalChecksEnabled { checkInvariants() }
    }

    /// Checks the change's invariants (with `LODE_INTERNAL_CHECKS`, after every change Lode makes):
    /// well formed (``isWellFormed``) and every list in ascending order without repeats.
    func checkInvariants() {
        checkInvariants(wellFormed: isWellFormed)
        precondition(
            sectionDeletions.isStrictlyAscending && sectionInsertions.isStrictlyAscending,
            "SectionedChange: a section list is out of order: \(self)")
    }

    /// No section or row is used twice on either side, and no row is changed inside a section that
    /// is deleted or inserted: what a batch update requires.
    public var isWellFormed: Bool {
        let (old, new) = usedPositions
        let deletedSections = Set(sectionDeletions)
        let insertedSections = Set(sectionInsertions)
        return rowsUseEachPositionOnce
            && Set(sectionDeletions).count == sectionDeletions.count
            && Set(sectionInsertions).count == sectionInsertions.count
            && !old.contains { deletedSections.contains($0.section) }
            && !new.contains { insertedSections.contains($0.section) }
    }

    /// The change as a ModelStorage update (sections offset by `firstSection`), without models for
    /// reloads; moved rows whose content changed become a delete and an insert.
    ///
    /// - Complexity: O(*c* log *c*) for *c* changes.
    public func storageUpdate(firstSection: Int = 0) -> StorageUpdate {
        storageUpdate(firstSection: firstSection) { _ in nil }
    }

    /// The change as a ModelStorage update (sections offset by `firstSection`), with `model` giving
    /// the object at a new index path for reloads; an error it throws is rethrown.
    ///
    /// - Complexity: O(*c* log *c*) for *c* changes, and one call of `model` per modified row.
    /// - Throws: what `model` throws.
    public func storageUpdate(firstSection: Int = 0, model: (IndexPath) throws -> Any?) rethrows
        -> StorageUpdate
    {
        func shift(_ path: IndexPath) -> IndexPath {
            IndexPath(item: path.item, section: path.section + firstSection)
        }
        let update = StorageUpdate()
        for index in sectionDeletions { update.sectionChanges.append((.delete, [index + firstSection])) }
        for index in sectionInsertions { update.sectionChanges.append((.insert, [index + firstSection])) }
        var deletes = deletions
        var inserts = insertions
        var plain: [Move] = []
        for move in moves {
            if move.isModified {
                deletes.append(move.from)
                inserts.append(move.to)
            } else {
                plain.append(move)
            }
        }
        for path in deletes.sorted() { update.objectChanges.append((.delete, [shift(path)])) }
        for path in inserts.sorted() { update.objectChanges.append((.insert, [shift(path)])) }
        for move in plain { update.objectChanges.append((.move, [shift(move.from), shift(move.to)])) }
        for modification in modifications {
            update.objectChanges.append((.update, [shift(modification.old)]))
            if let object = try model(modification.new) {
                update.updatedObjects[shift(modification.old)] = object
            }
        }
        return update
    }

    /// A one-line summary.
    public var description: String {
        func text(_ path: IndexPath) -> String { "[\(path.section), \(path.item)]" }
        var parts: [String] = []
        if !sectionDeletions.isEmpty { parts.append("delete sections \(sectionDeletions)") }
        if !sectionInsertions.isEmpty { parts.append("insert sections \(sectionInsertions)") }
        if !deletions.isEmpty { parts.append("delete " + deletions.map(text).joined(separator: " ")) }
        if !insertions.isEmpty { parts.append("insert " + insertions.map(text).joined(separator: " ")) }
        if !modifications.isEmpty {
            parts.append(
                "modify " + modifications.map { text($0.old) + "→" + text($0.new) }.joined(separator: " "))
        }
        if !moves.isEmpty {
            parts.append(
                "move "
                    + moves.map { text($0.from) + "→" + text($0.to) + ($0.isModified ? "*" : "") }.joined(
                        separator: " "))
        }
        return "v\(fromVersion)→v\(toVersion): "
            + (parts.isEmpty ? "no changes" : parts.joined(separator: ", "))
            + (wasFullyReevaluated ? " (re-evaluated)" : "")
    }
}

extension SectionedChange: BatchRowChanges {
    static func positions(of modification: Modification) -> (old: IndexPath, new: IndexPath) {
        (modification.old, modification.new)
    }

    static func positions(of move: Move) -> (old: IndexPath, new: IndexPath) { (move.from, move.to) }
}
