import class LMDB.ReadSnapshot

/// How much of a member a consumer shows: rows of plain results, sections of sectioned ones.
package enum MemberShape: Equatable {
    case rows(Int)
    case sections(Int)

    /// The change that replaces everything of `old` by everything of this shape.
    func replacing(_ old: MemberShape, index: Int, from: Int, to: Int) -> LiveGroup.Change {
        switch (old, self) {
        case (.rows(let before), .rows(let after)):
            var change = CollectionChange(
                fromVersion: from, toVersion: to, deletions: Array(0..<before), insertions: Array(0..<after))
            change.wasFullyReevaluated = true
            return .results(index: index, change)
        case (.sections(let before), .sections(let after)):
            var change = SectionedChange(
                fromVersion: from, toVersion: to, sectionDeletions: Array(0..<before),
                sectionInsertions: Array(0..<after))
            change.wasFullyReevaluated = true
            return .sectioned(index: index, change)
        default:
            preconditionFailure("a group member does not change kind")
        }
    }
}

/// A member of a ``LiveGroup``.
package protocol LiveGroupMember: AnyObject {
    /// What the member shows at its version.
    var shape: MemberShape { get }

    /// Advances to `snapshot` and returns the member's change as the member at `index`, or nil when
    /// nothing it shows changed.
    func advanceMember(to snapshot: ReadSnapshot, index: Int) throws -> LiveGroup.Change?
}

extension LiveResults: LiveGroupMember {
    package var shape: MemberShape { .rows(rowCount) }

    package func advanceMember(to snapshot: ReadSnapshot, index: Int) throws -> LiveGroup.Change? {
        guard let change = try refresh(to: snapshot), !change.isEmpty || change.wasFullyReevaluated else {
            return nil
        }
        return .results(index: index, change)
    }
}

extension LiveSectionedResults: LiveGroupMember {
    package var shape: MemberShape { .sections(sectionCount) }

    package func advanceMember(to snapshot: ReadSnapshot, index: Int) throws -> LiveGroup.Change? {
        guard let (change, _) = try refresh(to: snapshot), !change.isEmpty || change.wasFullyReevaluated
        else {
            return nil
        }
        return .sectioned(index: index, change)
    }
}
