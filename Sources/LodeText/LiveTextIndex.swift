import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// A declared full-text index that exists on disk and matches the schema (fields and tokenizer),
/// with its two databases: the full-text kind of ``AttachedIndex``.
package struct LiveTextIndex<Object>: AttachedIndex {
    /// The declaration.
    package let definition: TextIndex<Object>
    /// Terms → postings blocks, document numbers → keys, the lengths and the statistics.
    package let postings: Database
    /// Primary keys → document numbers.
    package let keys: Database

    package var name: String { definition.name }
    package var fields: [String] { definition.fields }

    package func objectChanged(key: [UInt8], old: Object?, new: Object?, in transaction: WriteTransaction)
        throws
    {
        try transaction.indexText(self, key: key, old: old, new: new)
    }

    package func undecodableObjectDeleted(key: [UInt8], in transaction: WriteTransaction) throws {
        try transaction.removeTextEntries(self, key: key)
    }

    package func typeEmptied(in transaction: WriteTransaction) throws {
        transaction.discardDeferredIndexWrites(of: postings)
        try transaction.lmdbWrite.empty(postings)
        try transaction.lmdbWrite.empty(keys)
    }
}

extension TextIndex: AttachedIndexDefinition {
    package var builderIdentifier: String { tokenizer.identifier }

    package var declarationProblem: String? {
        if let bad = unsupported.first {
            return
                "field \"\(bad.field)\" of full-text index \"\(name)\" is \(bad.type), not String, String?, [String] or [String]?"
        }
        if tokenizer.identifier.isEmpty {
            return "the tokenizer of full-text index \"\(name)\" has an empty identifier"
        }
        return nil
    }

    package func open(type: String, in transaction: Transaction) throws -> any AttachedIndex<Object> {
        LiveTextIndex(
            definition: self,
            postings: try transaction.openDatabase(
                TextIndexLayout.postingsDatabaseName(type: type, index: name), kind: .plain),
            keys: try transaction.openDatabase(
                TextIndexLayout.keysDatabaseName(type: type, index: name), kind: .plain))
    }

    package func create(type: String, in transaction: WriteTransaction) throws -> any AttachedIndex<Object> {
        if transaction.store.isEncrypted {
            // Its terms would be keys LMDB sorts, and a search walks them in order: hashed, they
            // could not be found by prefix nor walked block by block.
            throw LodeError.textIndexUnavailable(
                type: type, index: name,
                reason:
                    "full-text indexes are not available in an encrypted store (their terms are sorted keys)")
        }
        return LiveTextIndex(
            definition: self,
            postings: try transaction.lmdbWrite.database(
                named: TextIndexLayout.postingsDatabaseName(type: type, index: name), kind: .plain),
            keys: try transaction.lmdbWrite.database(
                named: TextIndexLayout.keysDatabaseName(type: type, index: name), kind: .plain))
    }
}

extension Schema {
    /// Makes a schema with full-text indexes.
    /// - Parameters:
    ///   - name: the type's name in the store; defaults to the Swift type name.
    ///   - primaryKey: the property that identifies an object.
    ///   - indexes: secondary indexes (`.on`, `.unique`, compound `.on(a, b)`).
    ///   - textIndexes: full-text indexes (`.on(\.title, \.body)`), searched with
    ///     `results.matching(_:)`.
    ///   - links: the ``Link`` properties and their delete rules (`.to(\.project, onDelete: .cascade)`,
    ///     `.toMany(\.tags)`).
    ///   - version: a number recorded in the catalog.
    ///   - defaults: values for fields older records lack (`.field(\.priority, 0)`).
    ///   - originalNames: fields renamed since an earlier version, each with the name that version
    ///     stored it under (`["title": "name"]`); see ``originalNames``.
    public init<Key: Codable>(
        name: String? = nil, primaryKey: KeyPath<Object, Key>, indexes: [Index<Object>] = [],
        textIndexes: [TextIndex<Object>], links: [Relationship<Object>] = [], version: Int = 1,
        defaults: [FieldDefault<Object>] = [], originalNames: [String: String] = [:]
    ) {
        TextIndexInspector.register()
        self.init(
            name: name, primaryKey: primaryKey, indexes: indexes, attachedIndexes: textIndexes, links: links,
            version: version, defaults: defaults, originalNames: originalNames)
    }

    /// The full-text indexes.
    public var textIndexes: [TextIndex<Object>] { attachedIndexes.compactMap { $0 as? TextIndex<Object> } }

    /// The full-text index named `name`.
    public func textIndex(named name: String) -> TextIndex<Object>? { textIndexes.first { $0.name == name } }
}

extension PendingText: DeferredIndexWrites {
    func flush(in transaction: WriteTransaction) throws { try transaction.flushText(self) }
}

extension TypeState {
    /// The full-text indexes that exist on disk and match the schema.
    package var textIndexes: [LiveTextIndex<T>] { attachedIndexes.compactMap { $0 as? LiveTextIndex<T> } }

    /// The full-text index named `name`, when it exists on disk and matches the schema.
    package func textIndex(named name: String) -> LiveTextIndex<T>? {
        for index in attachedIndexes {
            if let text = index as? LiveTextIndex<T>, text.name == name { return text }
        }
        return nil
    }
}

extension Transaction {
    /// The postings of a block of `term` whose key names `base`.
    /// - Throws: ``LodeError/textIndexDamaged(type:index:reason:)`` when they do not read.
    package func decodePostingBlock(
        _ bytes: UnsafeRawBufferPointer, base: Int, term: String, in postings: Database
    ) throws -> [PostingBlock.Posting] {
        do {
            return try PostingBlock(decoding: bytes, base: base).postings
        } catch {
            throw textIndexDamaged(postings, "the postings of term \"\(term)\" do not read: \(error.reason)")
        }
    }

    /// ``LodeError/textIndexDamaged(type:index:reason:)`` for the full-text index whose postings are
    /// `postings`.
    package func textIndexDamaged(_ postings: Database, _ reason: String) -> LodeError {
        let name = postings.name ?? ""
        let parts = name.components(separatedBy: ".@text:")
        return .textIndexDamaged(
            type: parts.first ?? name,
            index: parts.count > 1 ? parts[1...].joined(separator: ".@text:") : name,
            reason: reason)
    }
}
