import Foundation
import Lode
import LodeTesting
import ModelStorage
import Testing

/// A to-do of a list, ordered by rank.
struct Todo: Persistable, Equatable {
    var id: Int
    var title: String
    var rank: Int
    var list: String
    static let schema = Schema<Todo>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.list)])
}

/// A store of three to-dos in two lists.
func threeTodos() throws -> Store {
    let store = try Store.temporary(types: [Todo.self])
    try store.write { tx in
        try tx.insert(Todo(id: 1, title: "milk", rank: 1, list: "home"))
        try tx.insert(Todo(id: 2, title: "report", rank: 2, list: "work"))
        try tx.insert(Todo(id: 3, title: "call", rank: 3, list: "home"))
    }
    return store
}

func ip(_ item: Int, _ section: Int) -> IndexPath { IndexPath(item: item, section: section) }

@Suite struct LodeTestingTests {
    @Test func theChangeACommitMakesIsThreeLines() throws {
        let store = try threeTodos()
        let byRank = store.objects(Todo.self).sorted(by: \.rank)
        let change = try store.change(of: byRank) { tx in try tx.update(Todo.self, key: 3) { $0.rank = 0 } }
        #expect(change.withoutVersions == .expected(movedAndModified: [(from: 2, to: 0)]))
    }

    @Test func thisCommitMovesThatRowIntoThatSection() throws {
        let store = try threeTodos()
        let byList = store.objects(Todo.self).sorted(by: \.rank).sectioned(by: \.list)
        var mirror = try ListMirror(byList)
        let change = try store.change(of: byList) { tx in
            try tx.update(Todo.self, key: 1) { $0.list = "work" }
        }
        #expect(change.withoutVersions == .expected(movedAndModified: [(from: ip(0, 0), to: ip(0, 1))]))
        try mirror.replay(change, against: byList)  // a table view would accept it, and show the data
        #expect(mirror.sections.map(\.count) == [1, 2])
    }

    @Test func insertionsDeletionsAndModificationsReplayAgainstAFreshRead() throws {
        let store = try threeTodos()
        let home = store.objects(Todo.self).filter(#Predicate { $0.list == "home" }).sorted(by: \.rank)
        var mirror = try ListMirror(home)
        let change = try store.change(of: home) { tx in
            try tx.insert(Todo(id: 4, title: "bread", rank: 2, list: "home"))
            _ = try tx.delete(Todo.self, key: 1)
            try tx.update(Todo.self, key: 3) { $0.title = "call Ada" }
        }
        #expect(
            change.withoutVersions
                == .expected(deleted: [0], inserted: [0], modifications: [(old: 1, new: 1)]))
        try mirror.replay(change, against: home)
        // An empty change for a write the results do not see.
        let none = try store.change(of: home) { tx in try tx.update(Todo.self, key: 2) { $0.rank = 7 } }
        #expect(none.isEmpty)
        #expect(none.toVersion > none.fromVersion)
    }

    @Test func aWrongChangeDoesNotReplay() throws {
        let store = try threeTodos()
        let byRank = store.objects(Todo.self).sorted(by: \.rank)
        var mirror = try ListMirror(byRank)
        try store.write { tx in try tx.insert(Todo(id: 4, title: "bread", rank: 9, list: "home")) }
        #expect(throws: ListMirror<ObjectID>.Inconsistency.self) {
            try mirror.replay(.expected(inserted: [0]), against: byRank)  // it went to the end
        }
        var again = try ListMirror(byRank)
        #expect(throws: ListMirror<ObjectID>.Inconsistency.self) {
            try again.replay(.expected(), against: byRank)  // the count is wrong
        }
    }

    @Test func aLiveResultsStorageUpdateIsTakenSynchronously() throws {
        let store = try threeTodos()
        let storage = LiveResultsStorage(store: store, observesCommits: false)
        try storage.addSections(from: store.objects(Todo.self).sorted(by: \.rank).sectioned(by: \.list))
        var mirror = ListMirror(storage)
        let update = try #require(
            try store.update(of: storage) { tx in try tx.update(Todo.self, key: 2) { $0.list = "home" } })
        #expect(
            update
                == .expected(
                    sections: [(.delete, 1)], items: [(.insert, ip(1, 0))]))
        try mirror.replay(update, against: storage)
        #expect(
            try store.update(of: storage) { tx in try tx.update(Todo.self, key: 2) { $0.title = "x" } } != nil
        )
        let following = LiveResultsStorage(store: store)
        #expect(throws: LodeTestingError.storageFollowsCommits) { try store.update(of: following) { _ in } }
    }

    @Test func aMemoryStorageEditGivesItsUpdateAndTheDelegateStillGetsIt() throws {
        let storage = MemoryStorage()
        storage.addItems(["a", "b"])
        var mirror = ListMirror(storage, as: String.self)
        let update = try storage.update {
            try storage.performUpdates {
                storage.addItem("c")
                try storage.moveItem(at: ip(0, 0), to: ip(1, 0))
            }
        }
        #expect(
            update == .expected(items: [(.insert, ip(2, 0))], itemMoves: [(from: ip(1, 0), to: ip(0, 0))]))
        try mirror.replay(update, against: storage)
        #expect(mirror.sections == [["b", "a", "c"]])

        final class Counting: StorageUpdating {
            var updates = 0
            var reloads = 0
            func storageDidPerformUpdate(_ update: StorageUpdate) {
                updates += 1
                update.applyDeferredDatasourceUpdates()
            }
            func storageNeedsReloading() { reloads += 1 }
        }
        let view = Counting()
        storage.delegate = view
        let events = storage.events {
            storage.addItem("d")
            storage.setItems(["z"], forSection: 1)
        }
        #expect(events.count == 2)
        #expect(view.updates == 1 && view.reloads == 1)
        #expect(storage.delegate === view)
        #expect(throws: LodeTestingError.notOneUpdate(2)) {
            _ = try storage.update {
                storage.addItem("e")
                storage.addItem("f")
            }
        }
    }
}
