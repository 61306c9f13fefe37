import Foundation
import LMDB
import LodeCodec

extension Transaction {
    /// Every type in the store's catalog, by name.
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, and ``LodeError/notAStore(path:reason:)`` for a catalog entry that does not decode.
    public func storedTypes() throws -> [StoredType] {
        let names = try lmdb.allEntries(in: store.catalog).map { String(decoding: $0.key, as: UTF8.self) }
        return try names.map { try storedType(named: $0) }
    }

    /// The catalog's description of the type stored as `name`.
    /// - Throws: ``LodeError/typeNotFound(_:)`` when the catalog has no such type.
    public func storedType(named name: String) throws -> StoredType {
        guard let entry = try catalogEntry(named: name) else { throw LodeError.typeNotFound(name) }
        let records = try database(named: entry.name, kind: .plain)
        let indexes = try entry.indexes.map { index in
            let database = try self.database(
                named: CatalogEntry.databaseName(type: entry.name, index: index.name),
                kind: index.unique ? .plain : .duplicates)
            return StoredIndex(
                name: index.name, fields: index.fields, isUnique: index.unique,
                entryCount: try lmdb.count(in: database))
        }
        var stored = entry.storedType
        stored.indexes = indexes
        for position in stored.links.indices {
            let database = try self.database(
                named: stored.links[position].databaseName(of: entry.name), kind: .duplicates)
            stored.links[position].entryCount = try lmdb.count(in: database)
        }
        let inspector = AttachedIndexInspection.inspector
        stored.textIndexes = try (entry.attachedIndexes ?? []).map { index in
            try inspector?.describe(index, of: entry.name, in: self)
                ?? StoredTextIndex(name: index.name, fields: index.fields, tokenizer: index.tokenizer)
        }
        stored.objectCount = try lmdb.count(in: records)
        return stored
    }

    /// One index of a stored type.
    /// - Throws: ``LodeError/typeNotFound(_:)`` or ``LodeError/indexNotFound(type:index:)``.
    public func storedIndex(named index: String, of type: String) throws -> StoredIndex {
        guard let found = try storedType(named: type).indexes.first(where: { $0.name == index }) else {
            throw LodeError.indexNotFound(type: type, index: index)
        }
        return found
    }

    package func database(named name: String, kind: Database.Kind) throws -> Database {
        do {
            return try openDatabase(name, kind: kind)
        } catch let error as LMDBError where error.code == .notFound {
            throw LodeError.notAStore(
                path: store.path, reason: "the catalog names database \"\(name)\", which is missing")
        }
    }
}

/// One stored record read without its Swift type.
public struct StoredRecord: Sendable, Equatable {
    /// The primary key, key-encoded (the key of the record in its database).
    public var key: [UInt8]
    /// The record's bytes as stored.
    public var bytes: [UInt8]

    /// Checks that `lode-dump load` (`WriteTransaction.restore(_:records:appending:)`, in `LodeInspection`) would restore the record
    /// as it is: one CBOR map with text field names each used once, holding the primary-key field of
    /// `type`, whose key encoding is the key the record is stored under, and with every index value
    /// encodable.
    /// Returns the record decoded, so a caller that checks it need not decode it again.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming what is wrong.
    @discardableResult
    public func checkRestorable(as type: StoredType) throws -> CBORValue {
        let label = KeyDescription.describe(key)
        do throws(UntypedRecord.Problem) {
            let record = try UntypedRecord(bytes: bytes, type: type)
            guard record.primaryKey == key else {
                throw UntypedRecord.Problem(
                    field: type.primaryKey,
                    reason:
                        "the record's \(type.primaryKey) is \(record.primaryKeyValue.json), not the key it is stored under"
                )
            }
            for index in type.indexes { _ = try record.indexKey(index) }
            return record.value
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: type.name, key: label, field: error.field, reason: error.reason)
        }
    }

    /// The record decoded as a CBOR value.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for bytes that are not one
    ///   CBOR item, or that hold an item of indefinite length (no reader of the library's reads one).
    public func value(type: String) throws -> CBORValue {
        do throws(UntypedRecord.Problem) {
            return try UntypedRecord.decode(bytes)
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: type, key: KeyDescription.describe(key), field: error.field, reason: error.reason)
        }
    }
}

extension Transaction {
    /// The records of the type stored as `type`, in primary-key order, starting at the first key
    /// `>= start` — or, `reverse`, in descending order from the last key `<= start` — at most `limit`
    /// of them. In an encrypted store (records under hashed keys) every record is read to find them.
    /// - Throws: ``LodeError/typeNotFound(_:)`` when the catalog has no such type.
    public func storedRecords(
        of type: String, from start: [UInt8]? = nil, reverse: Bool = false, limit: Int = .max
    ) throws -> [StoredRecord] {
        let records = try recordsDatabase(of: type)
        var result: [StoredRecord] = []
        guard limit > 0 else { return [] }
        if !records.isOrdered {
            // Records stored under hashed keys (an encrypted store): every one is read, and those
            // from `start` on are put in primary-key order.
            try lmdb.forEachEntry(in: records) { item in
                if let start,
                    reverse
                        ? start.lexicographicallyPrecedes(item.key)
                        : item.key.lexicographicallyPrecedes(start)
                {
                    return true
                }
                result.append(StoredRecord(key: item.key, bytes: item.value))
                return true
            }
            result.sort {
                reverse ? $1.key.lexicographicallyPrecedes($0.key) : $0.key.lexicographicallyPrecedes($1.key)
            }
            return Array(result.prefix(limit))
        }
        try lmdb.forEachEntry(in: records, from: start, reverse: reverse) { item in
            result.append(StoredRecord(key: item.key, bytes: item.value))
            return result.count < limit
        }
        return result
    }

    /// The record of the type stored as `type` whose key-encoded primary key is `key`, or nil.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold, and
    ///   ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when LMDB
    ///   fails.
    public func storedRecord(of type: String, key: [UInt8]) throws -> StoredRecord? {
        try lmdb.get(key, in: try recordsDatabase(of: type)).map { StoredRecord(key: key, bytes: $0) }
    }

    /// The records database of a cataloged type: looked up without counting anything, as these
    /// accessors run once per record a tool reads.
    func recordsDatabase(of type: String) throws -> Database {
        guard let entry = try catalogEntry(named: type) else { throw LodeError.typeNotFound(type) }
        return try database(named: entry.name, kind: .plain)
    }
}

extension Transaction {
    /// Calls `body` with the entries of the index `index` of the type stored as `type`, in index
    /// order from the first index key `>= start` — or, `reverse`, in descending order (the primary
    /// keys of one index key too) from the last entry whose key is `<= start` — each index key (as
    /// stored) with the primary key it points at, until `body` returns false.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` or ``LodeError/indexNotFound(type:index:)``; in an
    ///   encrypted store, whose indexes keep hashed keys, ``EncryptionError/unorderedIndex(type:index:)``;
    ///   ``LodeError/storage(_:)`` when LMDB fails during the walk (which stops there: an index is
    ///   never cut short quietly), and what `body` throws.
    public func forEachStoredIndexEntry(
        of type: String, index: String, from start: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ key: [UInt8], _ primaryKey: [UInt8]) throws -> Bool
    ) throws {
        let database = try indexDatabase(of: type, index: index)
        guard database.isOrdered else {
            throw LodeError.encryption(path: store.path, .unorderedIndex(type: type, index: index))
        }
        do {
            try lmdb.forEachEntry(in: database, from: start, reverse: reverse) { try body($0.key, $0.value) }
        } catch let error as LMDBError {
            throw LodeError(storage: error)
        }
    }

    /// Calls `body` with the primary key of each entry of the index `index` of the type stored as
    /// `type` whose index key is exactly `key` (the field values key-encoded), until `body` returns
    /// false. In an encrypted store too, whose indexes find exact keys by their keyed hash; the
    /// primary keys come in no particular order there (in primary-key order in a plain store). A key
    /// longer than an index keeps is found by its stored form (FORMAT.md, "Length limits"), which
    /// other long keys may share: check the records.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` or ``LodeError/indexNotFound(type:index:)``;
    ///   ``LodeError/storage(_:)`` when LMDB fails (a sealed entry that does not open among them), and
    ///   what `body` throws.
    public func forEachStoredIndexEntry(
        of type: String, index: String, exactly key: [UInt8], _ body: (_ primaryKey: [UInt8]) throws -> Bool
    ) throws {
        let database = try indexDatabase(of: type, index: index)
        do {
            var going = true
            try IndexKeyLimit.stored(key).withUnsafeBytes { key in
                try lmdb.forEachValue(forKey: key, in: database) { value in
                    if going { going = try body(Array(value)) }
                }
            }
        } catch let error as LMDBError {
            throw LodeError(storage: error)
        }
    }

    /// The database of the index `index` of the type stored as `type`.
    private func indexDatabase(of type: String, index: String) throws -> Database {
        guard let entry = try catalogEntry(named: type) else { throw LodeError.typeNotFound(type) }
        guard let found = entry.indexes.first(where: { $0.name == index }) else {
            throw LodeError.indexNotFound(type: type, index: index)
        }
        return try database(
            named: CatalogEntry.databaseName(type: type, index: index),
            kind: found.unique ? .plain : .duplicates)
    }
}
