import Foundation
import Lode
import LodeTestSupport
import Testing

/// The README's history example, word for word, run.
@Suite struct HistoryReadmeTests {
    struct Note: Persistable, Equatable {
        var id: Int
        var title: String
        static let schema = Schema<Note>(primaryKey: \.id)
    }

    @Test func theReadmeExampleReadsWhatChangedAfterAToken() throws {
        let tmp = TemporaryDirectory("history-readme")
        let url = tmp.url.appendingPathComponent("notes")
        let store = try Store(
            at: url, configuration: StoreConfiguration(history: .keep(age: .seconds(7 * 86_400))),
            types: [Note.self])
        let token = try store.read { $0.historyToken }  // save it: read what changed after it, later

        try store.write { tx in
            tx.author = "alice"
            try tx.insert(Note(id: 1, title: "draft"))
        }
        for commit in try store.read({ try $0.history(since: token) }) {
            for change in commit.changes {
                print(commit.author ?? "-", change.kind, change.after["title"] ?? .null)
            }
        }
        let history = try store.read { try $0.history(since: token) }
        #expect(history.count == 1)
        #expect(history.first?.author == "alice")
        #expect(history.first?.changes.first?.after["title"] == .text("draft"))

        let undo = try UndoStack(store)
        try undo.write("Rename") { tx in try tx.update(Note.self, key: 1) { $0.title = "final" } }
        let version = try store.read { $0.version }
        try undo.undo()  // "draft" again: an ordinary commit, which live results deliver
        let then = try store.read { try $0.object(Note.self, key: 1, asOf: version) }  // "final"
        #expect(then?.title == "final")
        #expect(try store.read { try $0.object(Note.self, key: 1)?.title } == "draft")
    }
}
