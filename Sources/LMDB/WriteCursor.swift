import CLMDB
import Foundation

/// A cursor of a write transaction: moves like a ``Cursor`` and can also put and delete.
public final class WriteCursor: Cursor {
    var writeTransaction: WriteTransaction { transaction as! WriteTransaction }

    /// Stores `value` under `key` and leaves the cursor on the new entry. ``PutFlags/append`` makes bulk
    /// loads of sorted keys fast.
    ///
    /// - Throws: as ``WriteTransaction/put(_:forKey:in:flags:)-(ContiguousBytes,_,_,_)``.
    public func put(_ value: some ContiguousBytes, forKey key: some ContiguousBytes, flags: PutFlags = [])
        throws
    {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) in
                func operation() -> String { "mdb_cursor_put in \(database)" }
                let environment = transaction.environment
                try environment.checkKey(keyBytes.count, operation())
                guard let sealing = database.sealing else {
                    try environment.checkValue(valueBytes.count, in: database, operation())
                    try putStored(valueBytes, forKey: keyBytes, flags: flags)
                    return
                }
                try writeTransaction.withSealed(valueBytes, forKey: keyBytes, in: database, sealing: sealing)
                {
                    value, key in
                    try environment.checkValue(value.count, in: database, operation())
                    try putStored(value, forKey: key, flags: sealing.storableFlags(flags, in: database))
                }
            }
        }
    }

    /// Puts bytes as LMDB stores them (already sealed, in a sealed database).
    private func putStored(
        _ valueBytes: UnsafeRawBufferPointer, forKey keyBytes: UnsafeRawBufferPointer, flags: PutFlags
    ) throws {
        func operation() -> String { "mdb_cursor_put in \(database)" }
        let rc = try writeTransaction.perform(operation()) { _ in
            guard let cursor = handle else { return EINVAL }
            var keyValue = MDB_val(keyBytes)
            var dataValue = MDB_val(valueBytes)
            return mdb_cursor_put(cursor, &keyValue, &dataValue, flags.rawValue)
        }
        if rc == MDB_KEYEXIST {
            throw LMDBError(.keyExists, operation: operation(), message: "the key is already in \(database)")
        }
        try check(rc, operation())
        writeTransaction.log.recordPut(
            database.handle, flags: flags.rawValue, key: keyBytes, value: valueBytes)
        trackedKey = Array(keyBytes)
        trackedValue = database.allowsDuplicates ? Array(valueBytes) : nil
    }

    /// Deletes the entry the cursor is on (or, with `allDuplicates`, every value of its key) and moves
    /// to the entry that followed it, which it returns (`nil` at the end).
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    @discardableResult
    public func deleteCurrent(allDuplicates: Bool = false) throws -> Entry? {
        guard let current = try current() else {
            throw LMDBError(
                .notFound, operation: "delete in \(database)", message: "the cursor is not on an entry")
        }
        // Delete by key (and value) rather than with mdb_cursor_del: repeated dup-sort cursor deletes
        // are buggy in LMDB 0.9.24 (ITS#9376), then re-seek the entry that followed.
        if database.sealing != nil, let key = trackedKey {
            return try deleteCurrentStored(key: key, value: trackedValue, allDuplicates: allDuplicates)
        }
        if allDuplicates || !database.allowsDuplicates {
            try writeTransaction.delete(current.key, in: database)
            return try seekAfter(key: current.key)
        }
        try writeTransaction.delete(current.key, value: current.value, in: database)
        if try seek(key: current.key, atLeastValue: current.value) != nil { return try self.current() }
        return try seekAfter(key: current.key)
    }

    /// `deleteCurrent` in a sealed database: deletes the stored entry and re-seeks in stored order
    /// (the order the walk follows).
    private func deleteCurrentStored(key: [UInt8], value: [UInt8]?, allDuplicates: Bool) throws -> Entry? {
        try key.withUnsafeBytes { keyBytes -> Entry? in
            if let value, !allDuplicates {
                return try value.withUnsafeBytes { valueBytes -> Entry? in
                    _ = try writeTransaction.deleteStored(keyBytes, value: valueBytes, in: database)
                    if try storedMove(MDB_GET_BOTH_RANGE, key: keyBytes, value: valueBytes) != nil {
                        return try current()
                    }
                    return try seekAfterStored(key: keyBytes)
                }
            } else {
                _ = try writeTransaction.deleteStored(keyBytes: keyBytes, in: database)
                return try seekAfterStored(key: keyBytes)
            }
        }
    }

    private func seekAfterStored(key: UnsafeRawBufferPointer) throws -> Entry? {
        guard let (found, _) = try storedMove(MDB_SET_RANGE, key: key) else {
            trackedKey = nil
            trackedValue = nil
            return nil
        }
        if UnsafeRawBufferPointer(start: found.mv_data, count: found.mv_size).elementsEqual(key) {
            guard try storedMove(MDB_NEXT_NODUP) != nil else { return nil }
        }
        return try current()
    }

    private func seekAfter(key: [UInt8]) throws -> Entry? {
        guard let found = try seek(atLeast: key) else {
            trackedKey = nil
            trackedValue = nil
            return nil
        }
        if found.key == key { return try nextKey() }
        return found
    }
}
