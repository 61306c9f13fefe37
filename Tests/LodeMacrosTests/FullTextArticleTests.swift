import Foundation
import Lode
import LodeMacros
import Testing

/// The Full-text search article's examples, word for word, run.
enum FullTextArticle {
    struct Note: Persistable {
        var id: UUID
        var title: String
        var body: String
        var tags: [String]
        static let schema = Schema<Note>(primaryKey: \.id, textIndexes: [.on(\.title, \.body, \.tags)])
    }

    @Suite struct Examples {
        @Test func theArticleSearchesRanksAndHighlights() throws {
            let store = try Store.temporary(types: [Note.self, Memo.self])
            try store.write { tx in
                try tx.insert(Note(id: UUID(), title: "Swift and LMDB", body: "a store", tags: ["swift"]))
                try tx.insert(Note(id: UUID(), title: "Rust draft", body: "not yet", tags: []))
                try tx.insert(Memo(id: 1, title: "Searchable", body: "by its marks"))
            }
            let hits = store.objects(Note.self).matching("swift OR rust -draft").limit(20)
            for note in try hits.fetch() { print(note.title) }

            let note = try #require(try hits.fetch().first)
            #expect(note.title == "Swift and LMDB")
            for highlight in try hits.highlights(in: note) {
                print(highlight.field, highlight.snippet(words: 10, open: "**", close: "**"))
            }
            #expect(try hits.highlights(in: note).map(\.field) == ["title", "tags"])
            #expect(try store.objects(Memo.self).matching("marks").count == 1)
        }
    }
}

@Model
struct Memo {
    var id: Int
    @Searchable var title: String
    @Searchable var body: String
}
