import Foundation
import LMDB
import LodeCodec

/// Index entries of the objects a write transaction stores and deletes.
extension WriteTransaction {
    func indexKey<T>(_ index: TypeState<T>.LiveIndex, of object: T) throws -> [UInt8] {
        IndexKeyLimit.stored(try index.definition.keyBytes(object))
    }

    /// The stored index keys of `object`, one per index of its type, in index order.
    func indexKeys<T>(of object: T, state: TypeState<T>) throws -> [[UInt8]] {
        let slots = state.indexSlots
        guard !slots.isEmpty else { return [] }
        return try withUnsafePointer(to: object) { pointer in
            var keys: [[UInt8]] = []
            keys.reserveCapacity(slots.count)
            for slot in slots { keys.append(IndexKeyLimit.stored(try slot.key.bytes(pointer))) }
            return keys
        }
    }

    func putIndexEntry<T>(
        _ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8], object: T
    ) throws {
        if index.definition.isUnique {
            do {
                try lmdbWrite.put(primaryKey, forKey: key, in: index.database, flags: .noOverwrite)
            } catch let error as LMDBError where error.code == .keyExists {
                throw LodeError.uniqueViolation(
                    type: T.schema.typeName, index: index.definition.name,
                    value: index.definition.valueDescription(object))
            }
        } else {
            try lmdbWrite.put(primaryKey, forKey: key, in: index.database)
        }
    }

    /// Throws if a unique index already maps `key` to another object.
    func checkUnique<T>(_ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8], object: T)
        throws
    {
        guard index.definition.isUnique, let owner = try lmdb.get(key, in: index.database),
            owner != primaryKey
        else {
            return
        }
        throw LodeError.uniqueViolation(
            type: T.schema.typeName, index: index.definition.name,
            value: index.definition.valueDescription(object))
    }

    func removeIndexEntry<T>(_ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8])
        throws
    {
        try removeIndexEntry(
            in: index.database, unique: index.definition.isUnique, key: key, primaryKey: primaryKey)
    }

    /// Removes the entry `key → primaryKey` of an index (in a unique one, only if `key` is the
    /// object's: another object may hold the value now).
    func removeIndexEntry(in database: Database, unique: Bool, key: [UInt8], primaryKey: [UInt8]) throws {
        if unique {
            if try lmdb.get(key, in: database) == primaryKey { try lmdbWrite.delete(key, in: database) }
        } else {
            try lmdbWrite.delete(key, value: primaryKey, in: database)
        }
    }

    /// How the entries of the indexes a newer version of the type declared (``TypeState/keptIndexes``)
    /// move when the record under `key` goes from `old` to `new` (nil: none), read from the records
    /// without a Swift type; a unique one that another object holds the new value of throws, before
    /// anything is written.
    func keptIndexMoves<T>(
        _ state: TypeState<T>, key: [UInt8], old: [UInt8]?, new: UnsafeRawBufferPointer?
    ) throws -> [(database: Database, unique: Bool, old: [UInt8]?, new: [UInt8]?)] {
        guard let type = state.keptType else { return [] }
        func read(_ bytes: [UInt8], wasStored: Bool) throws -> UntypedRecord {
            do {
                return try UntypedRecord(bytes: bytes, type: type)
            } catch {
                if wasStored {
                    throw LodeError.recordDoesNotDecode(
                        type: state.typeName, key: KeyDescription.describe(key), field: error.field,
                        reason: error.reason)
                }
                throw LodeError.recordDoesNotEncode(
                    type: state.typeName, reason: "field \(error.field): \(error.reason)")
            }
        }
        let before = try old.map { try read($0, wasStored: true) }
        let after = try new.map { try read(Array($0), wasStored: false) }
        var moves: [(database: Database, unique: Bool, old: [UInt8]?, new: [UInt8]?)] = []
        for index in state.keptIndexes {
            func indexKey(_ record: UntypedRecord?) throws -> [UInt8]? {
                do {
                    return try record?.indexKey(index.stored)
                } catch {
                    throw LodeError.recordDoesNotEncode(
                        type: state.typeName, reason: "field \(error.field): \(error.reason)")
                }
            }
            let (oldKey, newKey) = (try indexKey(before), try indexKey(after))
            guard oldKey != newKey else { continue }
            if index.stored.isUnique, let newKey, let owner = try lmdb.get(newKey, in: index.database),
                owner != key
            {
                throw LodeError.uniqueViolation(
                    type: state.typeName, index: index.stored.name,
                    value: after.map { record in
                        index.stored.fields.map { record.value.value(atPath: $0)?.json ?? "null" }
                            .joined(separator: ", ")
                    } ?? "")
            }
            moves.append((index.database, index.stored.isUnique, oldKey, newKey))
        }
        return moves
    }

    /// Moves the entries `keptIndexMoves(_:key:old:new:)` found.
    func apply(_ moves: [(database: Database, unique: Bool, old: [UInt8]?, new: [UInt8]?)], key: [UInt8])
        throws
    {
        for move in moves {
            if let old = move.old {
                try removeIndexEntry(in: move.database, unique: move.unique, key: old, primaryKey: key)
            }
            if let new = move.new {
                try lmdbWrite.put(key, forKey: new, in: move.database, flags: move.unique ? .noOverwrite : [])
            }
        }
    }
}
