/// The row lists a batch update is made of — deletions at old positions, insertions at new ones,
/// modifications and moves from old to new — shared by ``CollectionChange`` (positions are `Int`s)
/// and ``SectionedChange`` (positions are `IndexPath`s): their order, and the rule that no position
/// is used twice on either side.
protocol BatchRowChanges: CustomStringConvertible {
    /// A row's position.
    associatedtype Position: Comparable & Hashable
    /// A modified row.
    associatedtype Modification
    /// A moved row.
    associatedtype Move

    var deletions: [Position] { get set }
    var insertions: [Position] { get set }
    var modifications: [Modification] { get set }
    var moves: [Move] { get set }

    /// The old and new position of a modification.
    static func positions(of modification: Modification) -> (old: Position, new: Position)
    /// The old and new position of a move.
    static func positions(of move: Move) -> (old: Position, new: Position)
}

extension BatchRowChanges {
    /// Sorts the row lists the documented way: ascending, modifications and moves by old position.
    mutating func sortRows() {
        deletions.sort()
        insertions.sort()
        modifications.sort { Self.positions(of: $0).old < Self.positions(of: $1).old }
        moves.sort { Self.positions(of: $0).old < Self.positions(of: $1).old }
    }

    /// The old positions the rows use (deleted, moved from, modified) and the new ones (inserted,
    /// moved to, modified).
    var usedPositions: (old: [Position], new: [Position]) {
        let modified = modifications.map(Self.positions(of:))
        let moved = moves.map(Self.positions(of:))
        return (
            deletions + moved.map(\.old) + modified.map(\.old),
            insertions + moved.map(\.new) + modified.map(\.new)
        )
    }

    /// True when no old position and no new position is used twice.
    var rowsUseEachPositionOnce: Bool {
        let (old, new) = usedPositions
        return Set(old).count == old.count && Set(new).count == new.count
    }

    /// True when every row list is in ascending order without repeats.
    var rowsAreInOrder: Bool {
        deletions.isStrictlyAscending && insertions.isStrictlyAscending
            && modifications.map { Self.positions(of: $0).old }.isStrictlyAscending
            && moves.map { Self.positions(of: $0).old }.isStrictlyAscending
    }

    /// Checks the invariants (with `LODE_INTERNAL_CHECKS`, after every change Lode makes): well formed
    /// as `wellFormed` says and every list in order. Stops the program naming the change.
    func checkInvariants(wellFormed: Bool) {
        precondition(wellFormed, "\(Self.self): a position is used twice: \(self)")
        precondition(rowsAreInOrder, "\(Self.self): a list is out of order: \(self)")
    }
}

extension Array where Element: Comparable {
    /// True when each element is greater than the one before it.
    var isStrictlyAscending: Bool { zip(self, dropFirst()).allSatisfy { $0 < $1 } }
}
