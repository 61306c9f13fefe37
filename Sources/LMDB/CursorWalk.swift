import CLMDB

/// A read transaction's cursor over a database stored in clear, stepped forward from inlinable code:
/// the walk a generated record reader compiles into its own loop, one `mdb_cursor_get` per entry
/// with no call through the cursor's class, no closure and no check that does not change from one
/// entry to the next (those are made once, by the cursor when it makes one).
///
/// A walk is valid while its cursor is open and its transaction active, on the transaction's
/// thread: the code that makes one uses it within the cursor's scope.
public struct CursorWalk {
    /// The cursor's LMDB handle.
    @usableFromInline let handle: OpaquePointer
    /// Whether the cursor is on the walk's first entry, not read yet.
    @usableFromInline var positioned: Bool
    /// The database, named in errors.
    @usableFromInline let database: Database

    init(handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
        positioned = true
    }

    /// The key and value of the next entry (the one the cursor is on, the first time), where they
    /// lie in the map; nil after the last.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails.
    @inlinable @inline(__always)
    public mutating func next() throws(LMDBError) -> (
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    )? {
        var key = MDB_val()
        var value = MDB_val()
        let rc = mdb_cursor_get(handle, &key, &value, positioned ? MDB_GET_CURRENT : MDB_NEXT)
        positioned = false
        guard rc == MDB_SUCCESS else {
            if rc == MDB_NOTFOUND { return nil }
            throw failure(rc)
        }
        return (
            UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
            UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        )
    }

    /// The error LMDB's `rc` stands for.
    @usableFromInline
    func failure(_ rc: Int32) -> LMDBError {
        LMDBError(returnCode: rc, operation: "mdb_cursor_get in \(database)")
    }
}

extension Cursor {
    /// A walk from the entry the cursor is on, or nil when the cursor cannot be stepped that way: a
    /// write transaction's cursor (which tracks its position), a sealed database (whose entries are
    /// opened), a closed cursor or an ended transaction. Such a cursor is stepped by
    /// its entry-by-entry steps.
    package func walk() -> CursorWalk? {
        guard !tracksPosition, database.sealing == nil, let handle, transaction.handle != nil else {
            return nil
        }
        LockWatch.check(entering: "LMDB (mdb_cursor_get in \(database))")
        return CursorWalk(handle: handle, database: database)
    }
}
