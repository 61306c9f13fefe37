import CLMDB
import Foundation

/// The reads every transaction offers. A transaction exists only inside the closure that
/// ``Environment/read(_:)`` or ``Environment/write(_:)-jver`` passes it to; using it afterwards throws
/// ``LMDBError/Code/transactionNotActive``.
///
/// Values come back as copies (`[UInt8]`), or borrowed inside a closure with
/// ``withValue(forKey:in:_:)-(ContiguousBytes,_,_)``: bytes read from the map are valid only inside the transaction (and,
/// in a write transaction, only until its next write), so they never escape it.
public class Transaction {
    /// The environment this transaction belongs to.
    public let environment: Environment
    var handle: OpaquePointer?
    var cursors: [ObjectIdentifier: Cursor] = [:]
    /// Values of sealed databases opened by point reads, valid until the transaction ends (as bytes
    /// of the map are).
    private var openedArena: OpenedArena?

    /// The one value of a sealed database opened by ``transientValue(forKey:in:)``, valid until its
    /// next call.
    private var transientOpened: OpenedBuffer?

    var openedValues: OpenedArena {
        if let openedArena { return openedArena }
        let arena = OpenedArena()
        openedArena = arena
        return arena
    }

    /// The bytes of opened values this transaction keeps until it ends (the values of sealed
    /// databases its point reads opened; tests check it stays bounded).
    package var keptOpenedBytes: Int { openedArena?.usedBytes ?? 0 }

    package init(environment: Environment, handle: OpaquePointer) {
        self.environment = environment
        self.handle = handle
    }

    /// True for write transactions.
    public var isWritable: Bool { false }

    /// The handle, or an error when the transaction can no longer be used.
    func activeHandle(_ operation: @autoclosure () -> String) throws(LMDBError) -> OpaquePointer {
        LockWatch.check(entering: "LMDB (\(operation()))")
        guard let handle else {
            throw LMDBError(
                .transactionNotActive, operation: operation(),
                message: "the transaction has ended; use it only inside its closure")
        }
        return handle
    }

    /// Closes the cursors (before the handle is committed, aborted or reset).
    func closeCursors() {
        for cursor in cursors.values { cursor.closeHandle() }
        cursors.removeAll()
        openedArena?.release()
        transientOpened?.release()
    }

    /// The snapshot this transaction reads (for a write transaction: the id its commit will have).
    public var id: Int {
        guard let handle else { return 0 }
        return Int(mdb_txn_id(handle))
    }

    // MARK: Reading

    /// The value stored under `key`, copied out of the map, or `nil` when the key is absent. In a
    /// dup-sort database this is the first (smallest) value.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` for a key LMDB cannot hold).
    public func get(_ key: some ContiguousBytes, in database: Database) throws -> [UInt8]? {
        try key.withUnsafeBytes { try copiedValue(forKeyBytes: $0, in: database) }
    }

    /// ``get(_:in:)-(ContiguousBytes,_)`` for a key in a byte array, without the generic bytes
    /// protocol on the path.
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``.
    public func get(_ key: [UInt8], in database: Database) throws -> [UInt8]? {
        try key.withUnsafeBytes { try copiedValue(forKeyBytes: $0, in: database) }
    }

    /// The value under `keyBytes`, copied: read transiently (a sealed value is opened into memory
    /// the next transient read reuses, not kept until the transaction ends).
    private func copiedValue(forKeyBytes keyBytes: UnsafeRawBufferPointer, in database: Database) throws
        -> [UInt8]?
    {
        try transientValue(forKey: keyBytes, in: database).map { Array($0) }
    }

    /// Calls `body` with the bytes stored under `key`, borrowed from the map, or returns `nil` when
    /// the key is absent. The buffer is valid only inside `body`.
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``, and whatever `body` throws.
    public func withValue<R>(
        forKey key: some ContiguousBytes, in database: Database,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        try key.withUnsafeBytes { try withValue(forKeyBytes: $0, in: database, body) }
    }

    /// ``withValue(forKey:in:_:)-(ContiguousBytes,_,_)`` for a key in a byte array: the same,
    /// without the generic bytes protocol (and its unspecialized calls) on a path taken per object.
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``, and whatever `body` throws.
    public func withValue<R>(
        forKey key: [UInt8], in database: Database, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        try key.withUnsafeBytes { try withValue(forKeyBytes: $0, in: database, body) }
    }

    /// The value under the key whose bytes are `keyBytes`, handed to `body`.
    func withValue<R>(
        forKeyBytes keyBytes: UnsafeRawBufferPointer, in database: Database,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        guard let value = try valueInPlace(forKey: keyBytes, in: database) else { return nil }
        return try body(value)
    }

    /// The value under the key whose bytes are `keyBytes`, where it lies in the map: valid until the
    /// transaction ends or, in a write transaction, until its next write. (No generic result: the
    /// store's unspecialized code reading one object by key would look up an optional's metadata.)
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``.
    package func valueInPlace(forKey keyBytes: UnsafeRawBufferPointer, in database: Database) throws
        -> UnsafeRawBufferPointer?
    {
        try value(forKey: keyBytes, in: database, transient: false)
    }

    /// ``valueInPlace(forKey:in:)`` for a caller done with the bytes before it reads the next value
    /// this way (one that decodes an object at once): in a sealed database the value is opened into
    /// memory the next such read reuses, instead of memory kept until the transaction ends (a
    /// transaction reading a million objects by key would keep every one's plaintext). In a clear
    /// database, the same bytes of the map.
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``.
    package func transientValue(forKey keyBytes: UnsafeRawBufferPointer, in database: Database) throws
        -> UnsafeRawBufferPointer?
    {
        try value(forKey: keyBytes, in: database, transient: true)
    }

    private func value(forKey keyBytes: UnsafeRawBufferPointer, in database: Database, transient: Bool)
        throws -> UnsafeRawBufferPointer?
    {
        let txn = try activeHandle("mdb_get in \(database)")
        var value = MDB_val()
        try environment.checkKey(keyBytes.count, "mdb_get in \(database)")
        if let sealing = database.sealing {
            return try sealedValue(
                forKey: keyBytes, in: database, sealing: sealing, transient: transient, txn: txn)
        }
        var keyValue = MDB_val(
            mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
        let rc = mdb_get(txn, database.handle, &keyValue, &value)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_get in \(database)")
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    /// `valueInPlace` in a sealed database: the value opened into memory that lives as long as the
    /// transaction, or (`transient`) until the next transient read.
    private func sealedValue(
        forKey keyBytes: UnsafeRawBufferPointer, in database: Database, sealing: DatabaseSealing,
        transient: Bool, txn: OpaquePointer
    ) throws -> UnsafeRawBufferPointer? {
        return try sealing.withStoredKey(keyBytes) { storedKey -> UnsafeRawBufferPointer? in
            var keyValue = MDB_val(
                mv_size: storedKey.count, mv_data: UnsafeMutableRawPointer(mutating: storedKey.baseAddress))
            var value = MDB_val()
            let rc = mdb_get(txn, database.handle, &keyValue, &value)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "mdb_get in \(database)")
            let sealed = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
            let capacity = sealing.sealer.openedCapacity(sealedCount: sealed.count)
            let buffer: UnsafeMutableRawBufferPointer
            if transient {
                if transientOpened == nil { transientOpened = OpenedBuffer() }
                buffer = UnsafeMutableRawBufferPointer(
                    rebasing: transientOpened!.reserve(capacity)[0..<capacity])
            } else {
                buffer = openedValues.allocate(capacity)
            }
            return try sealing.open(
                storedKey: storedKey, sealed: sealed, deterministic: database.allowsDuplicates, into: buffer,
                givenKey: keyBytes, "mdb_get in \(database)"
            ).value
        }
    }

    /// True when `key` is present.
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``.
    public func contains(_ key: some ContiguousBytes, in database: Database) throws -> Bool {
        try withValue(forKey: key, in: database) { _ in true } ?? false
    }

    /// Every value of `key` in a dup-sort database, in order (one value, or none, in a plain one).
    ///
    /// - Throws: as ``get(_:in:)-(ContiguousBytes,_)``.
    public func values(forKey key: some ContiguousBytes, in database: Database) throws -> [[UInt8]] {
        try withCursor(in: database) { cursor -> [[UInt8]] in
            guard let first = try cursor.seek(to: key) else { return [] }
            guard database.allowsDuplicates else { return [first.value] }
            var result = [first.value]
            while let next = try cursor.nextDuplicate() { result.append(next.value) }
            return result
        }
    }

    /// Calls `body` with each value stored under `key` (every duplicate, in order, in a dup-sort
    /// database), where it lies in the map: valid until the transaction ends or, in a write
    /// transaction, until its next write. Nothing is copied.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), and what `body` throws (the walk stops there).
    package func forEachValue(
        forKey key: UnsafeRawBufferPointer, in database: Database,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try withCursor(in: database) { cursor in
            var current = try cursor.rawMove(MDB_SET_KEY, key: key)
            while let (_, value) = current {
                try body(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
                guard database.allowsDuplicates else { return }
                current = try cursor.rawMove(MDB_NEXT_DUP)
            }
        }
    }

    /// The number of values stored under `key`: 0 or 1, or the number of duplicates in a dup-sort
    /// database. Nothing is copied.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    package func valueCount(forKey key: UnsafeRawBufferPointer, in database: Database) throws -> Int {
        try withCursor(in: database) { cursor in
            guard try cursor.rawMove(MDB_SET_KEY, key: key) != nil else { return 0 }
            return database.allowsDuplicates ? try cursor.duplicateCount() : 1
        }
    }

    /// The B-tree figures of `database` as this transaction sees it.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func statistics(of database: Database) throws(LMDBError) -> DatabaseStatistics {
        let txn = try activeHandle("mdb_stat \(database)")
        var stat = MDB_stat()
        try check(mdb_stat(txn, database.handle, &stat), "mdb_stat \(database)")
        return DatabaseStatistics(stat)
    }

    /// The number of entries in `database` (every value counts in a dup-sort database).
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func count(in database: Database) throws(LMDBError) -> Int {
        try statistics(of: database).entries
    }

    /// How many pages LMDB's free list holds as this transaction sees it: pages earlier transactions
    /// freed, which later writes reuse (once no reader still sees them) before the file grows. Only a
    /// read-only transaction reads it (LMDB refuses a write transaction a cursor on its free list).
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`EINVAL` in a write transaction;
    ///   `.transactionNotActive` once the transaction has ended or from another thread).
    public func freePageCount() throws(LMDBError) -> Int {
        let txn = try activeHandle("mdb_cursor_open (free list)")
        var cursor: OpaquePointer?
        // The free list is LMDB's database 0 (FREE_DBI): each entry a transaction id and the pages it
        // freed, as a count followed by the page numbers.
        try check(mdb_cursor_open(txn, 0, &cursor), "mdb_cursor_open (free list)")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var pages = 0
        var operation = MDB_FIRST
        while true {
            let status = mdb_cursor_get(cursor, &key, &value, operation)
            if status == MDB_NOTFOUND { break }
            try check(status, "mdb_cursor_get (free list)")
            if value.mv_size >= MemoryLayout<Int>.size, let data = value.mv_data {
                pages += data.loadUnaligned(as: Int.self)
            }
            operation = MDB_NEXT
        }
        return pages
    }

    // MARK: Cursors

    func makeCursor(in database: Database) throws(LMDBError) -> Cursor {
        let txn = try activeHandle("mdb_cursor_open \(database)")
        var cursorHandle: OpaquePointer?
        try check(mdb_cursor_open(txn, database.handle, &cursorHandle), "mdb_cursor_open \(database)")
        let cursor =
            isWritable
            ? WriteCursor(transaction: self, database: database, handle: cursorHandle!)
            : Cursor(transaction: self, database: database, handle: cursorHandle!)
        cursors[ObjectIdentifier(cursor)] = cursor
        return cursor
    }

    /// Opens a cursor over `database`; it stays usable until ``Cursor/close()`` or the end of the
    /// transaction.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func cursor(in database: Database) throws(LMDBError) -> Cursor {
        try makeCursor(in: database)
    }

    /// Calls `body` with a cursor over `database`, closed when `body` returns.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), and whatever `body` throws.
    public func withCursor<R>(
        in database: Database, _ body: (Cursor) throws -> R
    ) throws -> R {
        let cursor = try makeCursor(in: database)
        defer { cursor.close() }
        return try body(cursor)
    }

    /// Calls `body` with each entry of `database` (copies), in key order (or reverse order) from the
    /// first key `>= start` (`<= start` in reverse), until it returns false. Unlike
    /// ``entries(in:from:reverse:)``, an error stops the walk by throwing. In an encrypted store an
    /// entry that does not open is passed to `broken` when given (with its error, which names its
    /// stored key) and the walk goes on; without `broken` it throws.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails or an entry does not open, and what `body` or `broken`
    ///   throw.
    package func forEachEntry(
        in database: Database, from start: [UInt8]? = nil, reverse: Bool = false,
        broken: ((LMDBError) throws -> Void)? = nil, _ body: (Cursor.Entry) throws -> Bool
    ) throws {
        try withCursor(in: database) { cursor in
            var first = true
            while true {
                let entry: Cursor.Entry?
                do {
                    if first, let start {
                        entry = reverse ? try cursor.seek(atMost: start) : try cursor.seek(atLeast: start)
                    } else if first {
                        entry = reverse ? try cursor.last() : try cursor.first()
                    } else {
                        entry = reverse ? try cursor.previous() : try cursor.next()
                    }
                } catch let error as LMDBError where error.code == .sealBroken && broken != nil {
                    // The cursor stands on the entry that did not open: the walk goes on from it.
                    first = false
                    try broken!(error)
                    continue
                }
                first = false
                guard let entry, try body(entry) else { return }
            }
        }
    }

    /// Every entry of `database` from `start` (as ``forEachEntry(in:from:reverse:broken:_:)``
    /// walks them), copied into an array: for small databases (the catalog, the names of the
    /// databases). An error throws, never ends the list early.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails or an entry does not open.
    package func allEntries(in database: Database, from start: [UInt8]? = nil) throws -> [Cursor.Entry] {
        var entries: [Cursor.Entry] = []
        try forEachEntry(in: database, from: start) {
            entries.append($0)
            return true
        }
        return entries
    }

    /// The entries of `database` in key order (or reverse order), starting at the first key `>= start`
    /// (`<= start` in reverse), as a Swift sequence of copies. Every duplicate is its own entry.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func entries(
        in database: Database, from start: [UInt8]? = nil, reverse: Bool = false
    ) throws(LMDBError) -> Cursor.Entries {
        try makeCursor(in: database).entries(from: start, reverse: reverse, closeWhenDone: true)
    }
}
