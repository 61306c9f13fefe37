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
}
