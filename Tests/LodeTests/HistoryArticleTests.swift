import Foundation
import Lode
import LodeTestSupport
import Testing

/// The *History and undo* article's examples, word for word, run.
@Suite struct HistoryArticleTests {
    struct Note: Persistable, Equatable {
        var id: Int
        var title: String
        var body: String
        static let schema = Schema<Note>(primaryKey: \.id)
    }

    func follow(_ store: Store, from token: HistoryToken, until last: Int) async throws -> [Int] {
        var versions: [Int] = []
        for try await commit in store.historyUpdates(since: token) {
            versions.append(commit.version)  // apply the commit's changes where they are needed
            if commit.version >= last { break }
        }
        return versions
    }

    @Test func theArticleExamplesRun() async throws {
        let tmp = TemporaryDirectory("history-article")
        let url = tmp.url.appendingPathComponent("notes")
        let (store, saved) = try Self.keepAndRead(url)
        let last = try await store.read { $0.version }
        let followed = try await follow(store, from: saved, until: last)
        #expect(followed.count == 2 && followed.last == last)
        try Self.undoAndTravel(store)
    }

    static func keepAndRead(_ url: URL) throws -> (Store, HistoryToken) {
        let store = try Store(
            at: url, configuration: StoreConfiguration(history: .keep(versions: 10_000)), types: [Note.self])
        let saved = try store.read { $0.historyToken }

        try store.write { tx in
            tx.author = "alice"
            try tx.insert(Note(id: 1, title: "draft", body: "first words"))
        }
        try store.write { tx in try tx.update(Note.self, key: 1) { $0.title = "final" } }

        for commit in try store.read({ try $0.history(since: saved) }) {
            for change in commit.changes where change.kind == .update {
                let old = try change.value(of: "title", as: String.self, before: true)
                let new = try change.value(of: "title", as: String.self)
                print(commit.version, commit.author ?? "-", old ?? "", "→", new ?? "")
            }
        }
        let inserted = try store.read { try $0.history(of: Note.self, key: 1) }.first?.changes.first
        let note = try inserted?.object(as: Note.self)  // the object as it was inserted
        let update = try store.read { try $0.history(since: saved) }.last?.changes.first
        #expect(try update?.value(of: "title", as: String.self, before: true) == "draft")
        #expect(try update?.value(of: "title", as: String.self) == "final")
        #expect(note == Note(id: 1, title: "draft", body: "first words"))
        return (store, saved)
    }

    static func undoAndTravel(_ store: Store) throws {
        let undo = try UndoStack(store)
        try undo.write("Rename") { tx in try tx.update(Note.self, key: 1) { $0.title = "renamed" } }
        try undo.undo()  // the title is "final" again
        try undo.redo()  // and "renamed"
        #expect(try store.read { try $0.object(Note.self, key: 1)?.title } == "renamed")
        #expect(
            try store.read { try $0.history() }.suffix(2).map { $0.changes.first?.after["title"] } == [
                .text("final"), .text("renamed"),
            ])

        try undo.group("Import") {
            try undo.write("one") { tx in try tx.insert(Note(id: 2, title: "two", body: "")) }
            try undo.write("two") { tx in try tx.insert(Note(id: 3, title: "three", body: "")) }
        }
        try undo.undo()  // both notes go, as one step
        #expect(try store.read { try $0.count(Note.self) } == 1)

        // Another writer renames note 1 after the stack's rename: undo refuses, then skips it.
        try store.write { tx in try tx.update(Note.self, key: 1) { $0.title = "theirs" } }
        let before = try store.read { $0.version }
        do {
            try undo.undo()
        } catch LodeError.undoConflict(let action, let conflicts) {
            print(action, conflicts.map(\.description))
            try undo.undo(policy: .skipChanged)  // put back what nobody changed since
        }
        #expect(
            try store.read { $0.version } == before, "the refusal wrote nothing; the skip had nothing left")
        #expect(!undo.canUndo && undo.redoName == "Rename")
        #expect(try store.read { try $0.object(Note.self, key: 1)?.title } == "theirs")

        let version = try store.read { $0.version }
        try store.write { tx in try tx.update(Note.self, key: 1) { $0.title = "later" } }

        let then = try store.read { try $0.object(Note.self, key: 1, asOf: version) }
        let titles = try store.objects(Note.self).sorted(by: \.title).limit(10).fetch(asOf: version).map(
            \.title)
        #expect(then?.title == "theirs" && titles == ["theirs"])
    }
}
