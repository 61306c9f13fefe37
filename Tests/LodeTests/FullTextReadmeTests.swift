import Foundation
import Lode
import Testing

/// The README's full-text example, word for word, run.
@Suite struct FullTextReadmeTests {
    struct Note: Persistable {
        var id: Int
        var title: String
        var body: String
        static let schema = Schema<Note>(primaryKey: \.id, textIndexes: [.on(\.title, \.body)])
    }

    @Test func theReadmeSearchRunsLiveAndHighlights() throws {
        let store = try Store.temporary(types: [Note.self])
        try store.write { tx in
            try tx.insert(Note(id: 1, title: "Café notes", body: "the live results of a store"))
            try tx.insert(Note(id: 2, title: "Tea draft", body: "storage"))
        }
        let hits = store.objects(Note.self).matching("café OR tea -draft \"live results\" stor*").limit(20)
        let live = try hits.live()  // each commit: the exact change, re-ranked rows moved
        let lines = try hits.fetch().map { try hits.highlights(in: $0).first?.snippet() ?? "" }
        #expect(lines == ["[Café] notes"])
        try store.write { tx in try tx.insert(Note(id: 3, title: "Tea", body: "live results stored")) }
        let change = try #require(try live.refresh())
        #expect(change.insertions.count == 1)
        #expect(try live.results.fetch().map(\.id).sorted() == [1, 3])
    }
}
