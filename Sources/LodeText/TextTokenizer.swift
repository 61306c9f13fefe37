import LodeCodec
import LodeStore

import struct LMDB.Database

/// One word of a text, as a ``TextTokenizer`` finds it: the term the index keeps (folded) and where
/// the word is in the text.
public struct TextToken: Sendable, Hashable {
    /// The term: the word as the index keeps and matches it (case and diacritics folded by
    /// ``UnicodeTokenizer``). Never empty; a term longer than ``maximumTermBytes`` is cut there.
    public var term: String
    /// Where the word is in the text the tokenizer was given.
    public var range: Range<String.Index>
    /// In a query: true when the term matches every term it begins (a prefix search). Only a
    /// tokenizer's ``TextTokenizer/queryTokens(in:)`` sets it.
    public var matchesPrefix: Bool

    /// A token for `term`, found at `range`.
    public init(term: String, range: Range<String.Index>, matchesPrefix: Bool = false) {
        self.term = term
        self.range = range
        self.matchesPrefix = matchesPrefix
    }

    /// The longest term an index keeps, in UTF-8 bytes: a longer one is cut at the last whole
    /// character that fits (in documents and queries alike, so they still match).
    public static let maximumTermBytes = 128
}

/// Splits text into the terms a full-text index keeps (see ``TextIndex``).
///
/// Lode's default is ``UnicodeTokenizer``. A replacement (a stemmer, a tokenizer for a language
/// without spaces) conforms to this protocol; its ``identifier`` is recorded in the store with the
/// index, and a store whose index another tokenizer built is re-indexed when it is opened, never
/// searched with terms that do not match.
public protocol TextTokenizer: Sendable {
    /// A name and version recorded with the index (for example `"unicode/1"`). Change it whenever
    /// the terms the tokenizer makes for the same text change.
    var identifier: String { get }

    /// The tokens of a document's text, in order. A term must not be empty or contain U+0000 (such
    /// tokens are skipped).
    func tokens(in text: String) -> [TextToken]

    /// The tokens of a word or phrase of a query, in order. The default is ``tokens(in:)``; a
    /// tokenizer whose document terms overlap (character n-grams) says here how a query matches them.
    func queryTokens(in text: String) -> [TextToken]
}

extension TextTokenizer {
    /// The tokens of a query's text: those of a document.
    public func queryTokens(in text: String) -> [TextToken] { tokens(in: text) }
}
