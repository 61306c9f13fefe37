import Foundation
import Testing

@testable import LodeQuery
@testable import LodeStore
@testable import LodeText

/// A search's matches can be shown: ranges in the object's text, and snippets around them.
@Suite struct TextHighlightTests {
    struct Post: Persistable {
        var id: Int
        var title: String
        var tags: [String]
        static let schema = Schema<Post>(primaryKey: \.id, textIndexes: [.on(\.title, \.tags)])
    }

    func marked(_ highlight: TextHighlight) -> String { highlight.snippet(words: 100, open: "<", close: ">") }

    @Test func rangesCoverWordsPrefixesAndPhrasesNotExclusions() throws {
        let store = try Store.temporary(types: [Post.self])
        let post = Post(
            id: 1, title: "Café culture: live results, stored LIVE — and the résumé of a store",
            tags: ["café", "misc"])
        try store.write { tx in try tx.insert(post) }
        let results = store.objects(Post.self).matching("cafe \"live results\" stor* -(misc draft)")
        let object = try #require(try results.first)
        let highlights = try results.highlights(in: object)
        #expect(highlights.map(\.field) == ["title", "tags"])
        #expect(
            marked(highlights[0])
                == "<Café> culture: <live results>, <stored> LIVE — and the résumé of a <store>")
        #expect(marked(highlights[1]) == "<café>")
        // A word of an exclusion is not highlighted (the object matches: it has no "draft"), and
        // "LIVE" alone is not the phrase.
        #expect(!highlights.contains { $0.text == "misc" })
    }

    @Test func snippetsCutAroundTheFirstMatch() throws {
        let words = (1...40).map { "w\($0)" }
        var text = words
        text[25] = "needle"
        let highlight = TextHighlight(
            field: "body", text: text.joined(separator: " "),
            ranges: [text.joined(separator: " ").range(of: "needle")!])
        #expect(highlight.snippet(words: 6) == "…w24 w25 [needle] w27 w28 w29…")
        #expect(highlight.snippet(words: 100).hasPrefix("w1 w2"))
        let start = TextHighlight(
            field: "body", text: "needle in a haystack", ranges: ["needle in a haystack".range(of: "needle")!]
        )
        #expect(start.snippet(words: 2, open: "*", close: "*") == "*needle* in…")
    }

    @Test func ideographsHighlightTheirRun() throws {
        let store = try Store.temporary(types: [Post.self])
        try store.write { tx in try tx.insert(Post(id: 1, title: "我住在東京都。", tags: [])) }
        let results = store.objects(Post.self).matching("東京都")
        let highlights = try results.highlights(in: try #require(try results.first))
        #expect(highlights.map(marked) == ["我住在<東京都>。"])
        #expect(throws: LodeError.self) {
            try store.objects(Post.self).highlights(in: Post(id: 2, title: "", tags: []))
        }
    }
}
