import LodeCodec
import LodeStore

import struct LMDB.Database

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
        TextIndexInspector.register()
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
