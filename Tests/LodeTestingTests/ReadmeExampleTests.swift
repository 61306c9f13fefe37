import Foundation
import Lode
import LodeTesting
import ModelStorage
import Testing

// The README's "Testing with Lode" examples, word for word (`Todo` and `ip` are in
// LodeTestingTests.swift).

@Test func completingATodoMovesItIntoAnotherList() throws {
    let store = try Store.temporary(types: [Todo.self])  // on /dev/shm; gone when released
    try store.write { tx in
        try tx.insert(Todo(id: 1, title: "milk", rank: 1, list: "home"))
        try tx.insert(Todo(id: 2, title: "report", rank: 2, list: "work"))
        try tx.insert(Todo(id: 3, title: "call", rank: 3, list: "home"))
    }
    let byList = store.objects(Todo.self).sorted(by: \.rank).sectioned(by: \.list)
    var table = try ListMirror(byList)  // a headless table view showing the sections

    let change = try store.change(of: byList) { tx in
        try tx.update(Todo.self, key: 1) { $0.list = "work" }
    }
    #expect(change.withoutVersions == .expected(movedAndModified: [(from: ip(0, 0), to: ip(0, 1))]))
    try table.replay(change, against: byList)  // valid as a batch update, and equal to a fresh read
}

@Test func aDryRunReadsItsOwnWritesAndLeavesNothing() throws {
    let store = try Store.temporary(types: [Todo.self])
    let counted = try store.write(rollingBack: true) { tx in
        try tx.insert(Todo(id: 1, title: "milk", rank: 1, list: "home"))
        try? tx.savepoint { tx in  // rolls back alone when it throws
            try tx.insert(Todo(id: 2, title: "report", rank: 2, list: "work"))
            throw CancellationError()
        }
        return try tx.count(Todo.self)  // 1: reads inside see the write so far
    }
    #expect(counted == 1)
    #expect(try store.objects(Todo.self).fetch().isEmpty)  // nothing was committed
}

@Test func anEditOfAMemoryStorageGivesItsUpdate() throws {
    let storage = MemoryStorage()
    storage.addItems(["milk"])
    var table = ListMirror(storage, as: String.self)
    let update = try storage.update { storage.addItems(["eggs"], toSection: 1) }
    #expect(update == .expected(sections: [(.insert, 1)]))
    try table.replay(update, against: storage)
}
