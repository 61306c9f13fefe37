import Foundation
import ModelStorage
import Testing

/// The list mirror is the oracle of every "replays exactly" test: these show it refuses each kind of
/// bad update a table view would refuse, so those tests can fail.
@Suite struct ListMirrorTests {
    typealias Change = (ChangeType, [IndexPath])

    static func path(_ section: Int, _ item: Int) -> IndexPath { IndexPath(item: item, section: section) }

    /// One bad update: the lists before, the data source after, the changes, and a phrase the
    /// inconsistency must contain.
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var before: [[String]]
        var after: [[String]]
        var sections: [(ChangeType, [Int])] = []
        var rows: [(ChangeType, [IndexPath])] = []
        var expected: String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "section delete with two indices", before: [["a"]], after: [],
            sections: [(.delete, [0, 1])],
            expected: "needs one index"),
        Case(
            name: "section delete out of range", before: [["a"]], after: [["a"]], sections: [(.delete, [3])],
            expected: "only 1 sections before"),
        Case(
            name: "section deleted and reloaded", before: [["a"], ["b"]], after: [["a"]],
            sections: [(.delete, [1]), (.update, [1])], expected: "used twice on the old side"),
        Case(
            name: "section insert with no index", before: [], after: [["a"]], sections: [(.insert, [])],
            expected: "a section insert needs one index"),
        Case(
            name: "section insert out of range", before: [], after: [["a"]], sections: [(.insert, [2])],
            expected: "only 1 sections after"),
        Case(
            name: "section inserted twice", before: [], after: [["a"], ["b"]],
            sections: [(.insert, [0]), (.insert, [0])], expected: "inserted or moved to twice"),
        Case(
            name: "section move with one index", before: [["a"], ["b"]], after: [["b"], ["a"]],
            sections: [(.move, [0])], expected: "a section move needs [from, to]"),
        Case(
            name: "section move out of range", before: [["a"]], after: [["a"]], sections: [(.move, [0, 4])],
            expected: "attempt to move section 0 to 4"),
        Case(
            name: "section moved from twice", before: [["a"], ["b"]], after: [["b"], ["a"]],
            sections: [(.move, [0, 1]), (.move, [0, 0])], expected: "section 0 is used twice"),
        Case(
            name: "section moved to twice", before: [["a"], ["b"]], after: [["b"], ["a"]],
            sections: [(.move, [0, 1]), (.move, [1, 1])], expected: "section 1 is inserted or moved to twice"),
        Case(
            name: "section counts do not add up", before: [["a"]], after: [["a"], ["b"]],
            expected: "invalid number of sections"),
        Case(
            name: "row delete with two paths", before: [["a", "b"]], after: [["a"]],
            rows: [(.delete, [path(0, 0), path(0, 1)])], expected: "a row delete needs one index path"),
        Case(
            name: "row delete in a missing section", before: [["a"]], after: [["a"]],
            rows: [(.delete, [path(2, 0)])], expected: "does not exist before the update"),
        Case(
            name: "row delete in a deleted section", before: [["a"], ["b"]], after: [["a"]],
            sections: [(.delete, [1])], rows: [(.delete, [path(1, 0)])], expected: "which is being deleted"),
        Case(
            name: "row delete past the end", before: [["a"]], after: [[]], rows: [(.delete, [path(0, 1)])],
            expected: "only contains 1 rows before"),
        Case(
            name: "row reload in a reloaded section", before: [["a"]], after: [["b"]],
            sections: [(.update, [0])], rows: [(.update, [path(0, 0)])], expected: "which is itself reloaded"),
        Case(
            name: "row deleted twice", before: [["a", "b"]], after: [["b"]],
            rows: [(.delete, [path(0, 0)]), (.delete, [path(0, 0)])], expected: "is used twice"),
        Case(
            name: "row moved and reloaded (a view cannot do both in one batch)", before: [["a", "b"]],
            after: [["b", "A"]], rows: [(.move, [path(0, 0), path(0, 1)]), (.update, [path(0, 0)])],
            expected: "is used twice"),
        Case(
            name: "row insert with no path", before: [["a"]], after: [["a", "b"]], rows: [(.insert, [])],
            expected: "a row insert needs one index path"),
        Case(
            name: "row insert in a missing section", before: [["a"]], after: [["a"]],
            rows: [(.insert, [path(1, 0)])], expected: "does not exist after the update"),
        Case(
            name: "row insert into an inserted section", before: [], after: [["a"]],
            sections: [(.insert, [0])], rows: [(.insert, [path(0, 0)])], expected: "which is being inserted"),
        Case(
            name: "row insert past the end", before: [["a"]], after: [["a", "b"]],
            rows: [(.insert, [path(0, 5)])], expected: "only contains 2 rows after"),
        Case(
            name: "row inserted twice", before: [[]], after: [["a"]],
            rows: [(.insert, [path(0, 0)]), (.insert, [path(0, 0)])], expected: "inserted or moved to twice"),
        Case(
            name: "row move with one path", before: [["a", "b"]], after: [["b", "a"]],
            rows: [(.move, [path(0, 0)])], expected: "a row move needs [from, to]"),
        Case(
            name: "row moved to an occupied target", before: [["a", "b"]], after: [["b", "a"]],
            rows: [(.move, [path(0, 0), path(0, 1)]), (.insert, [path(0, 1)])],
            expected: "inserted or moved to twice"),
        Case(
            name: "row counts do not add up", before: [["a", "b"]], after: [["a", "b", "c"]],
            expected: "invalid number of rows in section 0"),
    ]

    @Test(arguments: cases)
    func aBadUpdateIsRefusedWithItsReason(_ bad: Case) {
        var mirror = ListMirror(sections: bad.before)
        let update = StorageUpdate()
        for change in bad.sections { update.sectionChanges.append(change) }
        for change in bad.rows { update.objectChanges.append(change) }
        do {
            try mirror.apply(update, dataSource: bad.after)
            Issue.record("\(bad.name): the mirror accepted it")
        } catch {
            #expect(error.description.contains(bad.expected), "\(bad.name): \(error.description)")
        }
        #expect(mirror.sections == bad.before, "\(bad.name): a refused update changed the mirror")
    }

    /// An update that is valid but incomplete (a move left out) leaves the mirror different from the
    /// data source: the replay tests compare the two and catch it.
    @Test func aValidButWrongUpdateLeavesTheMirrorDifferentFromTheData() throws {
        var mirror = ListMirror(sections: [["a", "b", "c"]])
        let update = StorageUpdate()
        update.objectChanges.append((.update, [Self.path(0, 0)]))  // should have been a move 0 → 2
        try mirror.apply(update, dataSource: [["b", "c", "a"]])
        #expect(mirror.sections != [["b", "c", "a"]])
        var right = ListMirror(sections: [["a", "b", "c"]])
        let move = StorageUpdate()
        move.objectChanges.append((.move, [Self.path(0, 0), Self.path(0, 2)]))
        try right.apply(move, dataSource: [["b", "c", "a"]])
        #expect(right.sections == [["b", "c", "a"]])
    }
}
