import Foundation
import Lode
import LodeTesting
import ModelStorage
import XCTest

/// The same helpers from an XCTest case: they throw, so `XCTAssertNoThrow` / `try` in a throwing
/// test method report a replay that a table view would reject.
final class LodeTestingXCTests: XCTestCase {
    func testTheChangeOfACommitAndItsReplay() throws {
        let store = try threeTodos()
        let byRank = store.objects(Todo.self).sorted(by: \.rank)
        var mirror = try ListMirror(byRank)
        let change = try store.change(of: byRank) { tx in
            try tx.insert(Todo(id: 4, title: "bread", rank: 0, list: "home"))
        }
        XCTAssertEqual(change.withoutVersions, .expected(inserted: [0]))
        XCTAssertNoThrow(try mirror.replay(change, against: byRank))
        XCTAssertThrowsError(try mirror.replay(.expected(deleted: [0]), against: byRank)) { error in
            XCTAssert(error is ListMirror<ObjectID>.Inconsistency)
        }
    }

    func testARolledBackWriteAndASavepoint() throws {
        let store = try threeTodos()
        let count = try store.write(rollingBack: true) { tx in
            try tx.savepoint { tx in _ = try tx.delete(Todo.self, key: 1) }
            return try tx.count(Todo.self)
        }
        XCTAssertEqual(count, 2)
        XCTAssertEqual(try store.objects(Todo.self).fetch().count, 3)
    }

    func testAStorageUpdate() throws {
        let storage = MemoryStorage()
        let update = try storage.update { storage.addItems([1, 2]) }
        XCTAssertEqual(update, .expected(sections: [(.insert, 0)]))
    }
}
