import Foundation

/// A headless list that applies a ``StorageUpdate`` the way `UITableView.performBatchUpdates` does,
/// and throws on anything a table view would reject. Tests of change-producing code replay every
/// update on a mirror and compare it with the data: if they agree after every batch, a real table
/// view would have animated the same changes without an inconsistency exception.
///
/// The rules it enforces:
/// - deletions and reloads use old indices, insertions new indices, moves go from old to new;
/// - every index is in range on its side, and no index is used twice on a side (a row cannot be both
///   deleted and moved, moved and reloaded, or inserted twice);
/// - rows are not inserted into inserted sections, nor deleted from deleted ones (they come and go
///   with their section), and rows are not moved out of a deleted section or into an inserted one;
/// - after the batch, the number of sections and the number of rows in every section equal what the
///   data source reports.
///
/// Inserted and reloaded rows take their values from the data source, as a table view asks its data
/// source for those cells; every other row keeps the value it had, so a storage that changes an item
/// without reporting it leaves the mirror different from the data.
public struct ListMirror<Item> {
    /// The rows of each section, as the mirror sees them.
    public private(set) var sections: [[Item]]

    /// A mirror showing `sections`.
    public init(sections: [[Item]]) { self.sections = sections }

    /// The reason an update was rejected.
    public struct Inconsistency: Error, CustomStringConvertible, Equatable {
        /// What is wrong, in a table view's words.
        public let description: String
    }

    private static func fail(_ message: String) -> Inconsistency { Inconsistency(description: message) }

    /// Applies `update`. `dataSource` is what the data source reports after the update.
    ///
    /// - Complexity: O(*r* + *s* · *c*) for *r* rows, *s* sections and *c* changes.
    /// - Throws: ``Inconsistency`` naming what a table view would reject: an index path used twice, a row or
    ///   section out of range, or a section whose row count does not add up; the mirror is left as it was.
    public mutating func apply(_ update: StorageUpdate, dataSource: [[Item]]) throws(Inconsistency) {
        let oldCount = sections.count
        let newCount = dataSource.count

        // Sections.
        var deletedSections = Set<Int>()
        var insertedSections = Set<Int>()
        var reloadedSections = Set<Int>()
        var sectionMoveTargets: [Int: Int] = [:]  // new → old
        var usedOld = Set<Int>()
        var usedNew = Set<Int>()
        for (type, payload) in update.sectionChanges {
            switch type {
            case .delete, .update:
                guard payload.count == 1 else {
                    throw Self.fail("a section \(type.rawValue) needs one index, got \(payload)")
                }
                let index = payload[0]
                guard index >= 0 && index < oldCount else {
                    throw Self.fail(
                        "attempt to \(type.rawValue) section \(index), but there are only \(oldCount) sections before the update"
                    )
                }
                guard usedOld.insert(index).inserted else {
                    throw Self.fail("section \(index) is used twice on the old side (delete, move or reload)")
                }
                if type == .delete { deletedSections.insert(index) } else { reloadedSections.insert(index) }
            case .insert:
                guard payload.count == 1 else {
                    throw Self.fail("a section insert needs one index, got \(payload)")
                }
                let index = payload[0]
                guard index >= 0 && index < newCount else {
                    throw Self.fail(
                        "attempt to insert section \(index), but there are only \(newCount) sections after the update"
                    )
                }
                guard usedNew.insert(index).inserted else {
                    throw Self.fail("section \(index) is inserted or moved to twice")
                }
                insertedSections.insert(index)
            case .move:
                guard payload.count == 2 else {
                    throw Self.fail("a section move needs [from, to], got \(payload)")
                }
                let (from, to) = (payload[0], payload[1])
                guard from >= 0 && from < oldCount, to >= 0 && to < newCount else {
                    throw Self.fail(
                        "attempt to move section \(from) to \(to) with \(oldCount) sections before and \(newCount) after"
                    )
                }
                guard usedOld.insert(from).inserted else {
                    throw Self.fail("section \(from) is used twice on the old side")
                }
                guard usedNew.insert(to).inserted else {
                    throw Self.fail("section \(to) is inserted or moved to twice")
                }
                sectionMoveTargets[to] = from
            }
        }
        guard oldCount - deletedSections.count + insertedSections.count == newCount else {
            throw Self.fail(
                "invalid number of sections: \(newCount) after the update, but \(oldCount) before, "
                    + "plus \(insertedSections.count) inserted, minus \(deletedSections.count) deleted")
        }
        // New section j comes from old section sourceOf[j], or is inserted (nil).
        var sourceOf = [Int?](repeating: nil, count: newCount)
        var remaining = (0..<oldCount).filter {
            !deletedSections.contains($0) && !sectionMoveTargets.values.contains($0)
        }
        .makeIterator()
        for index in 0..<newCount {
            if insertedSections.contains(index) { continue }
            if let from = sectionMoveTargets[index] {
                sourceOf[index] = from
            } else {
                sourceOf[index] = remaining.next()
            }
        }

        // Rows.
        var deletedRows = Set<IndexPath>()
        var reloadedRows = Set<IndexPath>()
        var insertedRows = Set<IndexPath>()
        var movedIn: [IndexPath: IndexPath] = [:]  // new → old
        var movedOut = Set<IndexPath>()
        func checkOld(_ path: IndexPath, _ what: String) throws(Inconsistency) {
            guard path.count == 2, path.section >= 0, path.section < oldCount else {
                throw Self.fail(
                    "attempt to \(what) row \(path) in a section that does not exist before the update")
            }
            guard !deletedSections.contains(path.section) else {
                throw Self.fail(
                    "attempt to \(what) row \(path.item) of section \(path.section), which is being deleted")
            }
            guard path.item >= 0 && path.item < sections[path.section].count else {
                throw Self.fail(
                    "attempt to \(what) row \(path.item) from section \(path.section), which only contains \(sections[path.section].count) rows before the update"
                )
            }
        }
        func checkNew(_ path: IndexPath, _ what: String) throws(Inconsistency) {
            guard path.count == 2, path.section >= 0, path.section < newCount else {
                throw Self.fail(
                    "attempt to \(what) row \(path) in a section that does not exist after the update")
            }
            guard !insertedSections.contains(path.section) else {
                throw Self.fail(
                    "attempt to \(what) row \(path.item) into section \(path.section), which is being inserted"
                )
            }
            guard path.item >= 0 && path.item < dataSource[path.section].count else {
                throw Self.fail(
                    "attempt to \(what) row \(path.item) into section \(path.section), which only contains \(dataSource[path.section].count) rows after the update"
                )
            }
        }
        var oldSide = Set<IndexPath>()
        var newSide = Set<IndexPath>()
        for (type, payload) in update.objectChanges {
            switch type {
            case .delete, .update:
                guard payload.count == 1 else {
                    throw Self.fail("a row \(type.rawValue) needs one index path, got \(payload)")
                }
                try checkOld(payload[0], type == .delete ? "delete" : "reload")
                if type == .update && reloadedSections.contains(payload[0].section) {
                    throw Self.fail(
                        "attempt to reload row \(payload[0].item) of section \(payload[0].section), which is itself reloaded"
                    )
                }
                guard oldSide.insert(payload[0]).inserted else {
                    throw Self.fail(
                        "row \(payload[0].item) of section \(payload[0].section) is used twice (delete, move or reload)"
                    )
                }
                if type == .delete { deletedRows.insert(payload[0]) } else { reloadedRows.insert(payload[0]) }
            case .insert:
                guard payload.count == 1 else {
                    throw Self.fail("a row insert needs one index path, got \(payload)")
                }
                try checkNew(payload[0], "insert")
                guard newSide.insert(payload[0]).inserted else {
                    throw Self.fail(
                        "row \(payload[0].item) of section \(payload[0].section) is inserted or moved to twice"
                    )
                }
                insertedRows.insert(payload[0])
            case .move:
                guard payload.count == 2 else {
                    throw Self.fail("a row move needs [from, to], got \(payload)")
                }
                try checkOld(payload[0], "move")
                try checkNew(payload[1], "move")
                guard oldSide.insert(payload[0]).inserted else {
                    throw Self.fail(
                        "row \(payload[0].item) of section \(payload[0].section) is used twice (delete, move or reload)"
                    )
                }
                guard newSide.insert(payload[1]).inserted else {
                    throw Self.fail(
                        "row \(payload[1].item) of section \(payload[1].section) is inserted or moved to twice"
                    )
                }
                movedOut.insert(payload[0])
                movedIn[payload[1]] = payload[0]
            }
        }

        // Build the new sections.
        var result: [[Item]] = []
        result.reserveCapacity(newCount)
        for newIndex in 0..<newCount {
            guard let oldIndex = sourceOf[newIndex] else {
                result.append(dataSource[newIndex])
                continue
            }
            if reloadedSections.contains(oldIndex) {
                result.append(dataSource[newIndex])
                continue
            }
            let old = sections[oldIndex]
            let keptRows = (0..<old.count).filter {
                let path = IndexPath(item: $0, section: oldIndex)
                return !deletedRows.contains(path) && !movedOut.contains(path)
            }
            let incoming =
                insertedRows.filter { $0.section == newIndex }.count
                + movedIn.keys.filter { $0.section == newIndex }.count
            let expected = dataSource[newIndex].count
            guard keptRows.count + incoming == expected else {
                let deleted = deletedRows.filter { $0.section == oldIndex }.count
                let out = movedOut.filter { $0.section == oldIndex }.count
                let inserted = insertedRows.filter { $0.section == newIndex }.count
                let moved = movedIn.keys.filter { $0.section == newIndex }.count
                throw Self.fail(
                    "invalid number of rows in section \(newIndex): the data source reports \(expected) after the update, "
                        + "but there were \(old.count) before, plus \(inserted) inserted and \(moved) moved in, "
                        + "minus \(deleted) deleted and \(out) moved out")
            }
            var rows: [Item] = []
            rows.reserveCapacity(expected)
            var kept = keptRows.makeIterator()
            for row in 0..<expected {
                let path = IndexPath(item: row, section: newIndex)
                if insertedRows.contains(path) {
                    rows.append(dataSource[newIndex][row])
                } else if let source = movedIn[path] {
                    rows.append(sections[source.section][source.item])
                } else {
                    let oldRow = kept.next()!
                    let oldPath = IndexPath(item: oldRow, section: oldIndex)
                    rows.append(reloadedRows.contains(oldPath) ? dataSource[newIndex][row] : old[oldRow])
                }
            }
            result.append(rows)
        }
        sections = result
        if internalChecksEnabled { checkInvariants(shapedLike: dataSource) }
    }

    /// Checks the mirror's invariant after an update applied (with `LODE_INTERNAL_CHECKS`): it shows
    /// as many sections as the data source, each with as many rows. Stops the program naming the
    /// first section that differs.
    func checkInvariants(shapedLike dataSource: [[Item]]) {
        precondition(
            sections.count == dataSource.count,
            "ListMirror: \(sections.count) sections after an update, the data source has \(dataSource.count)")
        for (index, (shown, expected)) in zip(sections, dataSource).enumerated() {
            precondition(
                shown.count == expected.count,
                "ListMirror: section \(index) shows \(shown.count) rows, the data source has \(expected.count)"
            )
        }
    }

    /// Applies `update` and checks that the mirror then shows exactly `dataSource` — what a table
    /// view would show against what its data source says. The mismatch is an ``Inconsistency`` that
    /// names the first section that differs.
    ///
    /// - Throws: as ``apply(_:dataSource:)``, and ``Inconsistency`` naming the first section that then
    ///   differs from `dataSource`.
    public mutating func replay(_ update: StorageUpdate, dataSource: [[Item]]) throws(Inconsistency)
    where Item: Equatable {
        try apply(update, dataSource: dataSource)
        guard sections != dataSource else { return }
        let section =
            zip(sections, dataSource).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(sections.count, dataSource.count)
        let shown = sections.indices.contains(section) ? "\(sections[section])" : "nothing"
        let expected = dataSource.indices.contains(section) ? "\(dataSource[section])" : "nothing"
        throw Self.fail(
            "after \(update) section \(section) shows \(shown), but the data source has \(expected)")
    }

    /// Replaces everything, as `reloadData` does.
    public mutating func reload(_ dataSource: [[Item]]) { sections = dataSource }
}
