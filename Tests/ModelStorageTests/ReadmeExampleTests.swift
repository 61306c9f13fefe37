import Foundation
import ModelStorage
import Testing

/// The README's ModelStorage example, word for word, compiled and run here.
enum ModelStorageReadme {
    final class PrintingTable: StorageUpdating {
        var log: [String] = []
        var updates: [StorageUpdate] = []
        func storageDidPerformUpdate(_ update: StorageUpdate) {
            updates.append(update)
            // A view does this inside performBatchUpdates: apply the data, then animate the changes.
            update.applyDeferredDatasourceUpdates()
            log.append(update.description)
        }
        func storageNeedsReloading() { log.append("reload") }
    }

    static func run() throws -> (log: [String], rows: [String], replayed: [[String]]) {
        let storage = MemoryStorage()
        let table = PrintingTable()
        storage.delegate = table

        storage.addItems(["milk", "eggs"])
        try storage.performUpdates {  // one update for the whole block
            storage.addItem("bread")
            try storage.moveItem(at: IndexPath(item: 1, section: 0), to: IndexPath(item: 0, section: 0))
            try storage.replaceItem("milk", with: "oat milk")
        }
        print(table.log)
        // ["sections: insert 0", "items: insert [0, 2], move [0, 1]→[0, 0], update [0, 0]"]

        // Replaying the last update on a headless list gives what a table view would show.
        var mirror = ListMirror(sections: [["milk", "eggs"]])
        let rows = (0..<storage.numberOfItems(inSection: 0)).map {
            storage.item(at: IndexPath(item: $0, section: 0)) as! String
        }
        try mirror.apply(table.updates.last!, dataSource: [rows])
        print(mirror.sections)  // [["eggs", "oat milk", "bread"]]
        return (table.log, rows, mirror.sections)
    }
}

@Suite struct ModelStorageReadmeTests {
    @Test func theExampleRunsAsWritten() throws {
        let outcome = try ModelStorageReadme.run()
        #expect(
            outcome.log == ["sections: insert 0", "items: insert [0, 2], move [0, 1]→[0, 0], update [0, 0]"])
        #expect(outcome.rows == ["eggs", "oat milk", "bread"])
        #expect(outcome.replayed == [["eggs", "oat milk", "bread"]])
    }
}
