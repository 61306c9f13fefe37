import Foundation
import LMDB
import LodeCodec

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
        transaction.discardPendingText(postings)
        try transaction.lmdbWrite.empty(postings)
        try transaction.lmdbWrite.empty(keys)
    }
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
    /// The full-text indexes of `schema` that `entry` (the stored catalog entry) lists as they are
    /// declared, opened.
    func openTextIndexes<T>(of schema: Schema<T>, entry: CatalogEntry) throws -> [any AttachedIndex<T>] {
        var opened: [any AttachedIndex<T>] = []
        for index in schema.textIndexes {
            guard (entry.textIndexes ?? []).contains(CatalogEntry.TextIndexEntry(index)) else { continue }
            let postings = try openDatabase(
                TextIndexLayout.postingsDatabaseName(type: schema.typeName, index: index.name), kind: .plain)
            let keys = try openDatabase(
                TextIndexLayout.keysDatabaseName(type: schema.typeName, index: index.name), kind: .plain)
            opened.append(LiveTextIndex(definition: index, postings: postings, keys: keys))
        }
        return opened
    }

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
