import LodeCodec

/// A full-text index of a ``Persistable`` type: the words of one or more text properties, kept in
/// the same transaction as the objects and searched with a ``TextQuery`` (`results.matching(…)`).
///
/// ```swift
/// static let schema = Schema<Note>(primaryKey: \.id, textIndexes: [.on(\.title, \.body)])
/// ```
///
/// The properties may be `String`, `String?`, `[String]` or `[String]?`. The index is built for the
/// objects a store already holds when it is first declared, rebuilt when its fields or tokenizer
/// change, and dropped when it is removed from the schema. Its tokenizer's identifier is recorded
/// with it.
public struct TextIndex<Object>: @unchecked Sendable {
    // @unchecked: immutable; key paths and the closure are never mutated, but are not marked Sendable.
    /// The index name (the field names joined with `+` unless set).
    public let name: String
    /// The indexed fields.
    public let fields: [String]
    /// What splits the fields' text into terms.
    public let tokenizer: any TextTokenizer
    /// The property of each field, with a description of its type when it is not text (the schema
    /// is refused then).
    package let keyPaths: [PartialKeyPath<Object>]
    let unsupported: [(field: String, type: String)]
    /// The texts of each field of an object (none for `nil`, each element of an array).
    package let texts: (Object) -> [[String]]

    /// A full-text index over `keyPaths`, each a `String`, `String?`, `[String]` or `[String]?`
    /// property, split into terms by `tokenizer`.
    public static func on(
        _ keyPaths: PartialKeyPath<Object>..., name: String? = nil,
        tokenizer: any TextTokenizer = UnicodeTokenizer()
    ) -> TextIndex {
        TextIndex(keyPaths: keyPaths, name: name, tokenizer: tokenizer)
    }

    init(keyPaths: [PartialKeyPath<Object>], name: String?, tokenizer: any TextTokenizer) {
        let fields = keyPaths.map(fieldName(of:))
        self.fields = fields
        self.name = name ?? fields.joined(separator: "+")
        self.tokenizer = tokenizer
        self.keyPaths = keyPaths
        var readers: [(Object) -> [String]] = []
        var unsupported: [(field: String, type: String)] = []
        for (keyPath, field) in zip(keyPaths, fields) {
            if let path = keyPath as? KeyPath<Object, String> {
                readers.append { [$0[keyPath: path]] }
            } else if let path = keyPath as? KeyPath<Object, String?> {
                readers.append { $0[keyPath: path].map { [$0] } ?? [] }
            } else if let path = keyPath as? KeyPath<Object, [String]> {
                readers.append { $0[keyPath: path] }
            } else if let path = keyPath as? KeyPath<Object, [String]?> {
                readers.append { $0[keyPath: path] ?? [] }
            } else {
                unsupported.append((field, "\(type(of: keyPath).valueType)"))
                readers.append { _ in [] }
            }
        }
        self.unsupported = unsupported
        self.texts = { object in readers.map { $0(object) } }
    }
}

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
