import LodeCodec
import LodeStore

import struct LMDB.Database

/// A full-text query: what a ``TextIndex`` is searched for.
///
/// Written as text in a small syntax (``init(_:)``), or built as a value (``init(expression:)``):
///
/// | Syntax | Matches |
/// |---|---|
/// | `swift lmdb` | objects with both words (terms side by side are all required) |
/// | `swift AND lmdb` | the same (`AND` may be written) |
/// | `swift OR rust` | objects with either; `OR` binds tighter than the implicit AND: `swift OR rust store` is `(swift OR rust) store` |
/// | `-draft` | excludes objects with the word; the rest of the query must still require a word |
/// | `"live results"` | the words next to each other, in order |
/// | `stor*` | any word that begins with `stor` |
/// | `( … )` | grouping: `(swift OR rust) -draft` |
///
/// Words are matched after the index's tokenizer folds them, as the documents' words were: with
/// ``UnicodeTokenizer``, `Café` finds `cafe`. A word the tokenizer splits (`e-mail`) is searched as
/// the phrase of its parts. `AND` and `OR` are operators only in capitals; quote them to search for
/// them. A syntax error names its position and what is wrong (``TextQueryError``), and never matches
/// something else.
public struct TextQuery: Sendable, Hashable, CustomStringConvertible {
    /// A query as a value.
    public indirect enum Expression: Sendable, Hashable {
        /// A word (several words, when the tokenizer splits it, as a phrase).
        case word(String)
        /// Words next to each other, in order.
        case phrase(String)
        /// Every word that begins with the text (the last word of it, when the tokenizer splits it).
        case prefix(String)
        /// Objects that match every one (the implicit AND).
        case all([Expression])
        /// Objects that match any one.
        case any([Expression])
        /// Objects that do not match: allowed only among the parts of ``all(_:)`` beside one that is not
        /// an exclusion.
        case not(Expression)
    }

    /// The query.
    public let expression: Expression

    /// Parses `text` (see the syntax above).
    /// - Throws: ``TextQueryError`` with the position (a character offset) and the reason.
    public init(_ text: String) throws(TextQueryError) {
        var parser = TextQueryParser(text)
        expression = try parser.parse()
    }

    /// The query `expression`.
    /// - Throws: ``TextQueryError`` when an exclusion stands alone or among alternatives, or a part is
    ///   empty (position 0: the value has no text to point into).
    public init(expression: Expression) throws(TextQueryError) {
        if let reason = Self.problem(in: expression) {
            throw TextQueryError(query: "\(Self.text(of: expression))", position: 0, reason: reason)
        }
        self.expression = expression
    }

    /// Why `expression` cannot be searched, if it cannot.
    static func problem(in expression: Expression) -> String? {
        switch expression {
        case .word(let text), .phrase(let text), .prefix(let text):
            return text.isEmpty ? "a word is empty" : nil
        case .all(let parts):
            if parts.isEmpty { return "a group is empty" }
            if parts.allSatisfy({ if case .not = $0 { return true } else { return false } }) {
                return "every part of the query is excluded: a query needs a word to search for"
            }
            return parts.lazy.compactMap { part -> String? in
                if case .not(let inner) = part {
                    if case .not = inner { return "an exclusion is excluded" }
                    return problem(in: inner)
                }
                return problem(in: part)
            }.first
        case .any(let parts):
            if parts.isEmpty { return "a group is empty" }
            if parts.contains(where: { if case .not = $0 { return true } else { return false } }) {
                return "an exclusion cannot be one of the alternatives of OR"
            }
            return parts.lazy.compactMap(problem(in:)).first
        case .not:
            return "every part of the query is excluded: a query needs a word to search for"
        }
    }

    /// The query in the syntax ``init(_:)`` reads.
    public var description: String { Self.text(of: expression) }

    static func text(of expression: Expression, grouped: Bool = false) -> String {
        switch expression {
        case .word(let text):
            return isBare(text) ? text : "\"" + text.replacingQuotes + "\""
        case .phrase(let text): return "\"" + text.replacingQuotes + "\""
        case .prefix(let text):
            return (isBare(text) ? text : "\"" + text.replacingQuotes + "\"") + "*"
        case .all(let parts):
            let joined = parts.map { text(of: $0, grouped: true) }.joined(separator: " ")
            return grouped && parts.count > 1 ? "(" + joined + ")" : joined
        case .any(let parts):
            let joined = parts.map { text(of: $0, grouped: true) }.joined(separator: " OR ")
            return grouped && parts.count > 1 ? "(" + joined + ")" : joined
        case .not(let inner): return "-" + text(of: inner, grouped: true)
        }
    }

    /// True when `text` reads back as the same word unquoted.
    private static func isBare(_ text: String) -> Bool {
        !text.isEmpty && text != "AND" && text != "OR" && !text.hasPrefix("-")
            && !text.contains(where: { $0.isWhitespace || "\"()*".contains($0) })
    }
}

extension String {
    /// The text with its double quotes as spaces (a phrase cannot hold one; both separate words).
    fileprivate var replacingQuotes: String { replacing("\"", with: " ") }
}
