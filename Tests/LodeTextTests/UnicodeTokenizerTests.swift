import Foundation
import Testing

@testable import LodeStore
@testable import LodeText

/// What the default tokenizer makes of text: the terms a search matches.
@Suite struct UnicodeTokenizerTests {
    let tokenizer = UnicodeTokenizer()

    func terms(_ text: String) -> [String] { tokenizer.tokens(in: text).map(\.term) }
    func queryTerms(_ text: String) -> [String] { tokenizer.queryTokens(in: text).map(\.term) }

    @Test func foldsCaseDiacriticsAndWidth() {
        #expect(terms("Café CAFÉ cafe") == ["cafe", "cafe", "cafe"])
        #expect(terms("Straße") == ["strasse"])
        #expect(terms("e\u{301}cole ÉCOLE") == ["ecole", "ecole"])
        #expect(terms("ﬁne Ｆｕｌｌ") == ["fine", "full"])
        #expect(terms("Zürich naïve") == ["zurich", "naive"])
        #expect(terms("ΣΟΦΙΑ Москва") == ["σοφια", "москва"])
    }

    @Test func splitsOnEverythingButLettersNumbersAndMarks() {
        #expect(terms("don't e-mail 3.14 mp3 2024!") == ["don", "t", "e", "mail", "3", "14", "mp3", "2024"])
        #expect(terms("") == [])
        #expect(terms("  --- !!! ") == [])
        #expect(terms("a\u{FFFD}b") == ["a", "b"])
        // A combining mark with no letter before it belongs to no word.
        #expect(terms("\u{301} x") == ["x"])
    }

    @Test func rangesPointIntoTheText() {
        let text = "Hello, Café 東京都!"
        let tokens = tokenizer.tokens(in: text)
        #expect(tokens.map { String(text[$0.range]) } == ["Hello", "Café", "東京", "京都", "都"])
    }

    @Test func ideographsArePairsAndTheLastCharacter() {
        #expect(terms("東京都") == ["東京", "京都", "都"])
        #expect(terms("日") == ["日"])
        #expect(terms("iPhone用ケース") == ["iphone", "用ケ", "ケー", "ース", "ス"])
        // A query's run: its pairs; one character: every term it begins.
        #expect(queryTerms("東京都") == ["東京", "京都"])
        let single = tokenizer.queryTokens(in: "都")
        #expect(single.map(\.term) == ["都"] && single[0].matchesPrefix)
    }

    @Test func longWordsAreCutAtACharacterBoundary() {
        let long = String(repeating: "é", count: 100)  // 200 bytes, folded to 100 "e"
        #expect(terms(long) == [String(repeating: "e", count: 100)])
        let wide = String(repeating: "ж", count: 100)  // 200 bytes unfolded
        let cut = terms(wide)
        #expect(cut.count == 1 && cut[0].utf8.count == 128 && cut[0] == String(repeating: "ж", count: 64))
    }

    @Test func aLargeDocumentTokenizes() {
        let text = String(repeating: "lode stores live results ", count: 40_000)  // 1 MB
        let document = TextDocument(texts: [[text]], tokenizer: tokenizer)
        #expect(document.length == 160_000)
        #expect(document.terms["lode"]?.count == 40_000)
        #expect(document.terms["results"]?.last == 159_999)
    }
}
