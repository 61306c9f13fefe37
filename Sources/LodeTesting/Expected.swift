import Foundation
import Lode
import ModelStorage

extension CollectionChange {
    /// A change to compare with one a result reported (with ``withoutVersions``): `modified` are
    /// rows that kept their index, `modifications` rows whose old and new indices differ; `moved`
    /// rows changed position only, `movedAndModified` changed content too (a sort key, say).
    public static func expected(
        deleted: [Int] = [], inserted: [Int] = [], modified: [Int] = [],
        modifications: [(old: Int, new: Int)] = [], moved: [(from: Int, to: Int)] = [],
        movedAndModified: [(from: Int, to: Int)] = []
    ) -> CollectionChange {
        let all = modified.map { Modification(old: $0, new: $0) } + modifications.map(Modification.init)
        let moves =
            moved.map { Move(from: $0.from, to: $0.to) }
            + movedAndModified.map { Move(from: $0.from, to: $0.to, modified: true) }
        return CollectionChange(
            fromVersion: 0, toVersion: 0, deletions: deleted.sorted(), insertions: inserted.sorted(),
            modifications: all.sorted { $0.old < $1.old }, moves: moves.sorted { $0.from < $1.from })
    }

    /// The same change with its versions and its full-reevaluation mark cleared, to compare with
    /// ``expected(deleted:inserted:modified:modifications:moved:movedAndModified:)``.
    public var withoutVersions: CollectionChange {
        var change = self
        change.fromVersion = 0
        change.toVersion = 0
        change.wasFullyReevaluated = false
        return change
    }
}

extension SectionedChange {
    /// A change to compare with one sectioned results reported (with ``withoutVersions``), in the
    /// terms of ``CollectionChange/expected(deleted:inserted:modified:modifications:moved:movedAndModified:)``.
    public static func expected(
        deletedSections: [Int] = [], insertedSections: [Int] = [], deleted: [IndexPath] = [],
        inserted: [IndexPath] = [], modified: [IndexPath] = [],
        modifications: [(old: IndexPath, new: IndexPath)] = [],
        moved: [(from: IndexPath, to: IndexPath)] = [],
        movedAndModified: [(from: IndexPath, to: IndexPath)] = []
    ) -> SectionedChange {
        let all = modified.map { Modification(old: $0, new: $0) } + modifications.map(Modification.init)
        let moves =
            moved.map { Move(from: $0.from, to: $0.to) }
            + movedAndModified.map { Move(from: $0.from, to: $0.to, modified: true) }
        return SectionedChange(
            fromVersion: 0, toVersion: 0, sectionDeletions: deletedSections.sorted(),
            sectionInsertions: insertedSections.sorted(), deletions: deleted.sorted(),
            insertions: inserted.sorted(),
            modifications: all.sorted { $0.old < $1.old }, moves: moves.sorted { $0.from < $1.from })
    }

    /// The same change with its versions and its full-reevaluation mark cleared.
    public var withoutVersions: SectionedChange {
        var change = self
        change.fromVersion = 0
        change.toVersion = 0
        change.wasFullyReevaluated = false
        return change
    }
}

extension StorageUpdate {
    /// An update to compare with one a storage delivered (`==` compares the ordered section and item
    /// changes).
    ///
    /// ```swift
    /// #expect(update == .expected(sections: [(.insert, 1)], items: [(.delete, IndexPath(item: 2, section: 0))]))
    /// ```
    /// Moves are given with ``expected(sections:items:sectionMoves:itemMoves:)``'s move lists, and
    /// follow the other changes of their kind.
    public static func expected(
        sections: [(ChangeType, Int)] = [], items: [(ChangeType, IndexPath)] = [],
        sectionMoves: [(from: Int, to: Int)] = [], itemMoves: [(from: IndexPath, to: IndexPath)] = []
    ) -> StorageUpdate {
        let update = StorageUpdate()
        update.sectionChanges =
            sections.map { ($0.0, [$0.1]) } + sectionMoves.map { (.move, [$0.from, $0.to]) }
        update.objectChanges = items.map { ($0.0, [$0.1]) } + itemMoves.map { (.move, [$0.from, $0.to]) }
        return update
    }
}
