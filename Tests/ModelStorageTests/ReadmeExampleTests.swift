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

/// The README's views, reactions and anomalies example, word for word.
enum MappingReadme {
    struct Post {
        var title: String
        var pinned: Bool
    }

    final class PostCell: ModelTransfer {
        var text = ""
        func update(with post: Post) { text = post.title }
    }

    static func run() -> (text: String?, height: Double?, none: AnyObject?, manager: ListManager) {
        let manager = ListManager()  // a MemoryStorage and a mapping registry
        manager.register(PostCell.self, make: PostCell.init) { mapping in
            mapping.didSelect { post, indexPath in print("open", post.title) }  // (Model, IndexPath)
            mapping.willDisplay { cell, post, indexPath in cell.text += " ✓" }  // (View, Model, IndexPath)
            mapping.heightForCell { post, indexPath in post.pinned ? 88 : 44 }  // an answer: Double
        }
        manager.memoryStorage?.addItems([Post(title: "Hello", pinned: true)])
        let first = IndexPath(item: 0, section: 0)
        let cell = manager.makeView(forItemAt: first) as? PostCell  // made and configured: "Hello"
        manager.handle(.willDisplay, at: first, view: cell)  // "Hello ✓"
        manager.handle(.select, at: first)  // prints "open Hello"
        let height = manager.answer(.height, at: first)  // 88.0

        manager.memoryStorage?.addItem(42)  // nothing shows an Int:
        let none = manager.makeView(forItemAt: IndexPath(item: 1, section: 0))  // nil; on stderr, once:
        // ⚠️ [ViewModelMappingRegistry] no mapping shows a Int at [0, 1] (cell): register a view for it, …
        manager.anomalyHandler.silence(.noMapping)  // or silence(where:), or anomalyAction
        return (cell?.text, height, none, manager)
    }
}

@Suite struct ModelStorageReadmeTests {
    @Test func theMappingExampleRunsAsWritten() throws {
        var outcome: (text: String?, height: Double?, none: AnyObject?, manager: ListManager)?
        var printed = ""
        let warned = try capturingStandardError {
            printed = (try? capturingStandardOutput { outcome = MappingReadme.run() }) ?? ""
        }
        let result = try #require(outcome)
        #expect(result.text == "Hello ✓")
        #expect(result.height == 88)
        #expect(result.none == nil)
        #expect(printed.contains("open Hello\n"))
        #expect(
            warned.contains(
                "⚠️ [ViewModelMappingRegistry] no mapping shows a Int at [0, 1] (cell): register a view for it, or check the mapping's condition"
            ))
        // Silenced from then on.
        let again = try capturingStandardError {
            _ = result.manager.makeView(forItemAt: IndexPath(item: 1, section: 0))
        }
        #expect(!again.contains("no mapping shows a Int"))
    }

    @Test func theExampleRunsAsWritten() throws {
        let outcome = try ModelStorageReadme.run()
        #expect(
            outcome.log == ["sections: insert 0", "items: insert [0, 2], move [0, 1]→[0, 0], update [0, 0]"])
        #expect(outcome.rows == ["eggs", "oat milk", "bread"])
        #expect(outcome.replayed == [["eggs", "oat milk", "bread"]])
    }
}
