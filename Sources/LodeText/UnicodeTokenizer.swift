import Foundation
import LodeCodec
import LodeStore
import Synchronization

import struct LMDB.Database

/// Lode's default ``TextTokenizer``: words by Unicode general category, folded for case, diacritics
/// and width; Chinese, Japanese and Korean text by overlapping pairs of characters.
///
/// - A word is a run of letters, numbers and combining marks (general categories L, N and M); every
///   other character separates words, so `don't` is `don` and `t`, `e-mail` is `e` and `mail`, and
///   `3.14` is `3` and `14` — the rule of SQLite's `unicode61` tokenizer. There are no stop words.
/// - Each character of a word is folded on its own: lowercased, its diacritics removed and its width
///   made normal (`Café` → `cafe`, `Straße` → `strasse`, `ＡＢＣ` → `abc`, `e` + U+0301 → `e`).
/// - Han ideographs, kana and Hangul make runs of their own. A run of one character is one term; a
///   longer run is indexed as its overlapping pairs (`東京都` → `東京`, `京都`) and its last character
///   alone, so a query of any length finds it: a query's run of two or more characters is searched
///   as the phrase of its pairs, and one character as every term that begins with it.
/// - Terms longer than ``TextToken/maximumTermBytes`` are cut there.
///
/// Its ``identifier`` is `"unicode/1"`.
public struct UnicodeTokenizer: TextTokenizer {
    /// The default tokenizer.
    public init() {}

    /// `"unicode/1"`.
    public var identifier: String { "unicode/1" }

    /// The tokens of a document's text.
    public func tokens(in text: String) -> [TextToken] { Self.tokenize(text, query: false) }

    /// The tokens of a query's text: as a document's, except that a run of ideographs is searched by
    /// its pairs alone, and one ideograph by prefix.
    public func queryTokens(in text: String) -> [TextToken] { Self.tokenize(text, query: true) }

    /// The terms of a document's text as UTF-8 bytes, in order, without their ranges: what the index's
    /// writer needs, without a `String` per word.
    func forEachTerm(in text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var text = text
        text.makeContiguousUTF8()
        withoutActuallyEscaping(body) { body in
            _ = text.utf8.withContiguousStorageIfAvailable { bytes in
                var tokenizer = Run(text: text, bytes: bytes, query: false, sink: body)
                tokenizer.run()
            }
        }
    }

    // MARK: Tokenizing

    private static func tokenize(_ text: String, query: Bool) -> [TextToken] {
        var text = text
        text.makeContiguousUTF8()
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            var tokenizer = Run(text: text, bytes: bytes, query: query, sink: nil)
            tokenizer.run()
            return tokenizer.tokens
        } ?? []
    }

    /// One pass over a text's UTF-8 bytes.
    private struct Run {
        let text: String
        let bytes: UnsafeBufferPointer<UInt8>
        let query: Bool
        /// Given: each term's bytes go there, and no tokens are made.
        let sink: ((UnsafeBufferPointer<UInt8>) -> Void)?
        var tokens: [TextToken] = []
        /// The folded term of the word being read, and where the word began (a byte offset).
        var term: [UInt8] = []
        var wordStart: Int?
        /// The ideographs of the run being read: each one's byte offsets.
        var ideographs: [(start: Int, end: Int)] = []

        init(
            text: String, bytes: UnsafeBufferPointer<UInt8>, query: Bool,
            sink: ((UnsafeBufferPointer<UInt8>) -> Void)?
        ) {
            self.text = text
            self.bytes = bytes
            self.query = query
            self.sink = sink
            term.reserveCapacity(32)
        }

        mutating func run() {
            var offset = 0
            let count = bytes.count
            while offset < count {
                let byte = bytes[offset]
                if byte < 0x80 {
                    // ASCII: letters and digits make words, lowercased here.
                    if !ideographs.isEmpty { flushIdeographs() }
                    if byte &- 0x61 < 26 || byte &- 0x30 < 10 {
                        if wordStart == nil { wordStart = offset }
                        term.append(byte)
                    } else if byte &- 0x41 < 26 {
                        if wordStart == nil { wordStart = offset }
                        term.append(byte | 0x20)
                    } else {
                        flushWord(end: offset)
                    }
                    offset += 1
                    continue
                }
                let (scalar, length) = decodeScalar(at: offset)
                switch ScalarClass.of(scalar) {
                case .separator:
                    flushWord(end: offset)
                    flushIdeographs()
                case .ideograph:
                    flushWord(end: offset)
                    ideographs.append((offset, offset + length))
                case .word(let folded):
                    flushIdeographs()
                    if wordStart == nil { wordStart = offset }
                    term.append(contentsOf: folded)
                case .mark(let folded):
                    // A combining mark belongs to the word before it; alone it separates nothing.
                    if wordStart != nil { term.append(contentsOf: folded) }
                }
                offset += length
            }
            flushWord(end: count)
            flushIdeographs()
        }

        func decodeScalar(at offset: Int) -> (Unicode.Scalar, Int) {
            let lead = UInt32(bytes[offset])
            let length: Int
            var value: UInt32
            if lead < 0xE0 {
                length = 2
                value = lead & 0x1F
            } else if lead < 0xF0 {
                length = 3
                value = lead & 0x0F
            } else {
                length = 4
                value = lead & 0x07
            }
            for next in 1..<length { value = value << 6 | UInt32(bytes[offset + next] & 0x3F) }
            return (Unicode.Scalar(value) ?? "\u{FFFD}", length)
        }

        func index(_ offset: Int) -> String.Index {
            text.utf8.index(text.utf8.startIndex, offsetBy: offset)
        }

        mutating func emit(_ bytes: UnsafeBufferPointer<UInt8>, start: Int, end: Int, prefix: Bool = false) {
            if let sink {
                guard !bytes.isEmpty else { return }
                if bytes.count <= TextToken.maximumTermBytes {
                    sink(bytes)
                } else {
                    var cut = TextToken.maximumTermBytes
                    while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
                    if cut > 0 { sink(UnsafeBufferPointer(rebasing: bytes[..<cut])) }
                }
                return
            }
            guard let term = Self.term(bytes) else { return }
            tokens.append(TextToken(term: term, range: index(start)..<index(end), matchesPrefix: prefix))
        }

        /// `bytes` as a term: cut to the longest whole characters that fit, nil when empty.
        static func term(_ bytes: some Collection<UInt8>) -> String? {
            guard !bytes.isEmpty else { return nil }
            if bytes.count <= TextToken.maximumTermBytes { return String(decoding: bytes, as: UTF8.self) }
            var cut = TextToken.maximumTermBytes
            let array = Array(bytes)
            // Back to the first byte of a character.
            while cut > 0 && array[cut] & 0xC0 == 0x80 { cut -= 1 }
            return cut == 0 ? nil : String(decoding: array[..<cut], as: UTF8.self)
        }

        mutating func flushWord(end: Int) {
            guard let start = wordStart else { return }
            // The buffer is moved out while it is read (no copy), then back, emptied, for the next word.
            var word: [UInt8] = []
            swap(&word, &term)
            word.withUnsafeBufferPointer { emit($0, start: start, end: end) }
            word.removeAll(keepingCapacity: true)
            swap(&word, &term)
            wordStart = nil
        }

        mutating func flushIdeographs() {
            guard !ideographs.isEmpty else { return }
            defer { ideographs.removeAll(keepingCapacity: true) }
            let run = ideographs
            func characters(_ first: Int, _ last: Int) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: bytes[run[first].start..<run[last].end])
            }
            if run.count == 1 {
                emit(characters(0, 0), start: run[0].start, end: run[0].end, prefix: query)
                return
            }
            for first in 0..<(run.count - 1) {
                emit(characters(first, first + 1), start: run[first].start, end: run[first + 1].end)
            }
            if !query {
                let last = run.count - 1
                emit(characters(last, last), start: run[last].start, end: run[last].end)
            }
        }
    }
}

/// What a non-ASCII character is to ``UnicodeTokenizer``, with its folded UTF-8 bytes.
enum ScalarClass: Sendable {
    case separator
    case ideograph
    case word([UInt8])
    case mark([UInt8])

    /// The class of `scalar`: from a table made once for the scripts most text uses (below U+2000),
    /// from a cache for the others.
    static func of(_ scalar: Unicode.Scalar) -> ScalarClass {
        let value = Int(scalar.value)
        if value < tableSize { return table[value] }
        if isIdeograph(scalar) { return .ideograph }
        if let known = cache.withLock({ $0[scalar.value] }) { return known }
        let made = classify(scalar)
        cache.withLock { cache in
            // A bounded cache: text in many rare scripts refolds some characters, never grows it.
            if cache.count >= 65_536 { cache.removeAll() }
            cache[scalar.value] = made
        }
        return made
    }

    static let tableSize = 0x2000
    private static let table: [ScalarClass] = (0..<tableSize).map { value in
        guard value >= 0x80, let scalar = Unicode.Scalar(UInt32(value)) else { return .separator }
        return classify(scalar)
    }
    private static let cache = Mutex<[UInt32: ScalarClass]>([:])

    /// Han ideographs, kana, Hangul and the CJK symbols that are letters.
    static func isIdeograph(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3040...0x30FF, 0x31F0...0x31FF, 0xFF66...0xFF9F: return true  // kana
        case 0x1100...0x11FF, 0x3130...0x318F, 0xAC00...0xD7AF: return true  // Hangul
        case 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x3FFFF: return true  // Han
        default: return scalar.properties.isIdeographic
        }
    }

    private static func classify(_ scalar: Unicode.Scalar) -> ScalarClass {
        if isIdeograph(scalar) { return .ideograph }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber:
            return .word(fold(scalar))
        case .nonspacingMark, .spacingMark, .enclosingMark:
            return .mark(fold(scalar))
        default:
            return .separator
        }
    }

    /// The scalar lowercased, without diacritics, of normal width; only the letters, numbers and
    /// spacing marks of the result are kept (what a search matches).
    private static func fold(_ scalar: Unicode.Scalar) -> [UInt8] {
        let folded = String(scalar).folding(
            options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
        var bytes: [UInt8] = []
        for kept in folded.unicodeScalars {
            if kept.value < 0x80 {
                let byte = UInt8(kept.value)
                if byte &- 0x61 < 26 || byte &- 0x30 < 10 {
                    bytes.append(byte)
                } else if byte &- 0x41 < 26 {
                    bytes.append(byte | 0x20)
                }
                continue
            }
            switch kept.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                .decimalNumber, .letterNumber, .otherNumber, .spacingMark, .enclosingMark:
                // Nonspacing marks (the diacritics the folding left, alone or combined) are dropped:
                // `e` + U+0301 matches `é`.
                bytes.append(contentsOf: Array(String(kept).lowercased().utf8))
            default:
                break
            }
        }
        return bytes
    }
}
