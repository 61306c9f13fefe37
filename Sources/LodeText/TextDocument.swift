import LodeCodec
import LodeStore

import struct LMDB.Database

/// The terms of a document (the texts of an object's indexed fields) and where they are.
package struct TextDocument {
    /// Each term's positions, ascending. A position counts tokens from the first field's start; each
    /// text of a field is one position apart from the next, so no phrase spans two.
    package var terms: [String: [Int32]]
    /// The number of tokens.
    package var length: Int

    /// A document of `terms` and `length` tokens.
    package init(terms: [String: [Int32]], length: Int) {
        self.terms = terms
        self.length = length
    }

    /// Tokenizes `texts` (per field, its texts) with `tokenizer`.
    package init(texts: [[String]], tokenizer: any TextTokenizer) {
        var terms: [String: [Int32]] = [:]
        var position: Int32 = 0
        var length = 0
        for field in texts {
            for text in field {
                let tokens = tokenizer.tokens(in: text)
                for token in tokens where !token.term.isEmpty && !token.term.utf8.contains(0) {
                    // Positions are 32-bit: a text past 2³¹ tokens is indexed up to there.
                    guard position < Int32.max - 1 else { break }
                    terms[Self.cut(token.term), default: []].append(position)
                    position &+= 1
                    length += 1
                }
                if position < Int32.max - 1 { position += 1 }
            }
        }
        self.terms = terms
        self.length = length
    }

    /// The document of a record read without its type: each field's text (an array's text elements;
    /// nothing for a missing field, `null` or another kind of value).
    package init(record: CBORValue, fields: [String], tokenizer: any TextTokenizer) {
        self.init(texts: Self.texts(of: record, fields: fields), tokenizer: tokenizer)
    }

    /// The texts of `fields` of a record read without its type (see ``init(record:fields:tokenizer:)``).
    package static func texts(of record: CBORValue, fields: [String]) -> [[String]] {
        var texts: [[String]] = []
        for field in fields {
            switch record.value(atPath: field) {
            case .text(let text)?: texts.append([text])
            case .array(let items)?:
                texts.append(
                    items.compactMap { if case .text(let text) = $0 { return text } else { return nil } })
            default: texts.append([])
            }
        }
        return texts
    }

    /// `term` cut to ``TextToken/maximumTermBytes`` at a character boundary (a tokenizer of the
    /// app's may make longer ones).
    package static func cut(_ term: String) -> String {
        guard term.utf8.count > TextToken.maximumTermBytes else { return term }
        var end = term.startIndex
        var bytes = 0
        for scalar in term.unicodeScalars {
            let size = UTF8.width(scalar)
            if bytes + size > TextToken.maximumTermBytes { break }
            bytes += size
            end = term.unicodeScalars.index(after: end)
        }
        return String(term.unicodeScalars[..<end])
    }
}
