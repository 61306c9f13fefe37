import Testing

@testable import LodeStore
@testable import LodeText

/// The query syntax: what parses to what, and where a bad query is wrong.
@Suite struct TextQueryTests {
    func parse(_ text: String) throws -> TextQuery.Expression { try TextQuery(text).expression }

    @Test func parsesTheSyntax() throws {
        #expect(try parse("swift") == .word("swift"))
        #expect(try parse("swift lmdb") == .all([.word("swift"), .word("lmdb")]))
        #expect(try parse("swift AND lmdb") == .all([.word("swift"), .word("lmdb")]))
        #expect(
            try parse("swift OR rust store")
                == .all([.any([.word("swift"), .word("rust")]), .word("store")]))
        #expect(try parse("store -draft") == .all([.word("store"), .not(.word("draft"))]))
        #expect(try parse("\"live results\"") == .phrase("live results"))
        #expect(try parse("stor*") == .prefix("stor"))
        #expect(try parse("\"live res\"*") == .prefix("live res"))
        #expect(
            try parse("(swift OR rust) -(draft OR old)")
                == .all([.any([.word("swift"), .word("rust")]), .not(.any([.word("draft"), .word("old")]))]))
        #expect(try parse("e-mail") == .word("e-mail"))
        #expect(try parse("or and") == .all([.word("or"), .word("and")]))
        #expect(try parse("\"OR\"") == .phrase("OR"))
    }

    @Test func descriptionReadsBackAsTheSameQuery() throws {
        for text in ["swift", "a b", "a OR b c", "a -b", "\"x y\"", "pre*", "(a OR b) -(c d)", "\"AND\" x"] {
            let query = try TextQuery(text)
            #expect(try TextQuery(query.description) == query, "\(text) → \(query)")
        }
    }

    @Test(arguments: [
        ("", 0, "empty"),
        ("   ", 0, "empty"),
        ("\"open", 0, "quote is not closed"),
        ("a \"b", 2, "quote is not closed"),
        ("(a b", 0, "\"(\" is not closed"),
        ("a b)", 3, "closes no group"),
        ("()", 0, "parentheses are empty"),
        ("OR a", 0, "OR needs a word before it"),
        ("a OR", 2, "OR needs a word after it"),
        ("a OR OR b", 2, "OR needs a word after it"),
        ("AND a", 0, "AND needs a word before it"),
        ("a -", 2, "must be followed"),
        ("-a", 0, "every part is excluded"),
        ("-a -b", 0, "every part is excluded"),
        ("a OR -b", 5, "exclusion cannot be one of the alternatives"),
        ("--a", 1, "exclusion cannot be excluded"),
        ("*", 0, "must end a word"),
        ("a *", 2, "must end a word"),
        ("ab*cd", 2, "must end a word"),
        ("\"a\"b", 3, "phrase must be followed"),
        ("\" \"", 0, "phrase is empty"),
    ])
    func aBadQueryNamesWhereAndWhy(text: String, position: Int, reason: String) {
        #expect {
            _ = try TextQuery(text)
        } throws: { error in
            guard let error = error as? TextQueryError else { return false }
            return error.position == position && error.reason.contains(reason) && error.query == text
        }
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "(", count: 200) + "a" + String(repeating: ")", count: 200)
        #expect(throws: TextQueryError.self) { try TextQuery(deep) }
        let fine = String(repeating: "(", count: 20) + "a" + String(repeating: ")", count: 20)
        #expect(try TextQuery(fine).expression == .word("a"))
    }

    @Test func aValueIsCheckedLikeText() {
        #expect(throws: TextQueryError.self) { try TextQuery(expression: .not(.word("a"))) }
        #expect(throws: TextQueryError.self) {
            try TextQuery(expression: .any([.word("a"), .not(.word("b"))]))
        }
        #expect(throws: TextQueryError.self) { try TextQuery(expression: .all([])) }
        #expect(throws: TextQueryError.self) { try TextQuery(expression: .word("")) }
    }
}
