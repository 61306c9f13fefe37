import CLMDB
import Foundation

/// A position in one database of a transaction: moves in key order, seeks, and walks duplicates.
///
/// Every move returns the entry it lands on as a copy, or `nil` when there is none (the end, a
/// missing key). A cursor lives until ``close()`` or the end of its transaction, whichever comes
/// first.
public class Cursor {
    /// One key/value pair, copied out of the map.
    public struct Entry: Equatable, Hashable, Sendable {
        /// The key bytes.
        public var key: [UInt8]
        /// The value bytes.
        public var value: [UInt8]

        /// Makes an entry.
        public init(key: [UInt8], value: [UInt8]) {
            self.key = key
            self.value = value
        }
    }

    /// The transaction the cursor belongs to.
    public let transaction: Transaction
    /// The database the cursor walks.
    public let database: Database
    var handle: OpaquePointer?
    /// In a write transaction: the key (and, with duplicates, the value) the cursor is on, so it can be
    /// put back there after the transaction is rebuilt on a grown map.
    var trackedKey: [UInt8]?
    var trackedValue: [UInt8]?

    /// The error that ended an iteration of ``entries(from:reverse:)`` early, if any.
    public private(set) var iterationError: LMDBError?

    init(transaction: Transaction, database: Database, handle: OpaquePointer) {
        self.transaction = transaction
        self.database = database
        self.handle = handle
        tracksPosition = transaction.isWritable
    }

    /// Whether the cursor keeps its position's key (a write transaction's cursor).
    let tracksPosition: Bool
    /// The current entry of a sealed database, opened.
    lazy var opened = OpenedBuffer()

    func closeHandle() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
    }

    /// Closes the cursor now rather than at the end of the transaction.
    public func close() {
        guard handle != nil else { return }
        closeHandle()
        transaction.cursors[ObjectIdentifier(self)] = nil
    }

    func activeHandle(_ operation: @autoclosure () -> String) throws(LMDBError) -> OpaquePointer {
        _ = try transaction.activeHandle(operation())
        guard let handle else {
            throw LMDBError(
                .transactionNotActive, operation: operation(), message: "the cursor was closed")
        }
        return handle
    }

    /// Runs one `mdb_cursor_get`; returns the key and value the cursor is on afterwards, or `nil` on
    /// `MDB_NOTFOUND`. In a sealed database `key` and `value` are given as the caller knows them and
    /// the entry comes back opened, valid until the cursor's next move.
    func rawMove(
        _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil
    ) throws(LMDBError) -> (MDB_val, MDB_val)? {
        guard let sealing = database.sealing else { return try storedMove(op, key: key, value: value) }
        return try sealedMove(op, key: key, value: value, sealing: sealing)
    }

    /// `rawMove` in a sealed database.
    private func sealedMove(
        _ op: MDB_cursor_op, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer?,
        sealing: DatabaseSealing
    ) throws(LMDBError) -> (MDB_val, MDB_val)? {
        // Made only for an error: a scan steps here once per entry.
        func operation() -> String { "mdb_cursor_get in \(database)" }
        if op == MDB_SET_RANGE && sealing.hashesKeys { throw sealing.unordered(operation()) }
        if op == MDB_GET_BOTH_RANGE || (op == MDB_GET_BOTH && !database.allowsDuplicates) {
            throw sealing.unordered(operation())
        }
        var found: (MDB_val, MDB_val)?
        if let key {
            found = try sealing.withStoredKey(key) { (storedKey) throws(LMDBError) in
                guard let value else { return try storedMove(op, key: storedKey) }
                return try sealing.withSealed(
                    value, embeddedKey: nil, storedKey: storedKey, deterministic: true
                ) {
                    (sealed) throws(LMDBError) in try storedMove(op, key: storedKey, value: sealed)
                }
            }
        } else {
            found = try storedMove(op)
        }
        guard let (k, v) = found else { return nil }
        let storedKey = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
        let sealed = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        let buffer = opened.reserve(sealing.sealer.openedCapacity(sealedCount: sealed.count))
        let entry = try sealing.open(
            storedKey: storedKey, sealed: sealed, deterministic: database.allowsDuplicates, into: buffer,
            givenKey: key, operation())
        return (MDB_val(entry.key), MDB_val(entry.value))
    }

    /// Runs `body`, which throws only ``LMDBError``s (through closures that rethrow untyped).
    private func onlyLMDBErrors<R>(_ body: () throws -> R) throws(LMDBError) -> R {
        do {
            return try body()
        } catch let error as LMDBError {
            throw error
        } catch {
            throw LMDBError(.invalidArgument, operation: "mdb_cursor_get in \(database)", message: "\(error)")
        }
    }

    /// Runs one `mdb_cursor_get` with keys and values as LMDB stores them; returns the stored key and
    /// value the cursor is on afterwards, or `nil` on `MDB_NOTFOUND`.
    func storedMove(
        _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil
    ) throws(LMDBError) -> (MDB_val, MDB_val)? {
        let cursor = try activeHandle("mdb_cursor_get in \(database)")
        var keyValue = MDB_val(
            mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var dataValue = MDB_val(
            mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
        var rc = mdb_cursor_get(cursor, &keyValue, &dataValue, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get in \(database)")
        // These operations leave the key or the value out; read both from the new position.
        if op == MDB_FIRST_DUP || op == MDB_LAST_DUP || op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE
            || op == MDB_SET
        {
            rc = mdb_cursor_get(cursor, &keyValue, &dataValue, MDB_GET_CURRENT)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "mdb_cursor_get in \(database)")
        }
        if tracksPosition {
            trackedKey = Array(UnsafeRawBufferPointer(start: keyValue.mv_data, count: keyValue.mv_size))
            trackedValue =
                database.allowsDuplicates
                ? Array(UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size)) : nil
        }
        return (keyValue, dataValue)
    }

    func move(
        _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil
    ) throws(LMDBError) -> Entry? {
        guard let (k, v) = try rawMove(op, key: key, value: value) else { return nil }
        return Entry(
            key: Array(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)),
            value: Array(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)))
    }

    /// A step of ``entryInPlace(_:)``.
    package enum Step: Sendable {
        /// Stay on the current entry.
        case current
        /// Move to the next entry.
        case next
    }

    /// The key and value of the current entry or the next one, where
    /// they lie in the map: valid until the transaction ends or, in a write transaction, until its next
    /// write; nil when there is no such entry. (No closure and no generic result: a walk of a million
    /// records in the store's unspecialized code pays for both per record.)
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    package func entryInPlace(_ step: Step) throws -> (
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    )? {
        let op = step == .next ? MDB_NEXT : MDB_GET_CURRENT
        // A read transaction's step, the walk of a scan: one call into LMDB (nothing to track, the
        // same checks as `rawMove`).
        guard !tracksPosition, database.sealing == nil, let cursor = handle, transaction.handle != nil else {
            guard let (k, v) = try rawMove(op) else { return nil }
            return (
                UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
            )
        }
        LockWatch.check(entering: "LMDB (mdb_cursor_get in \(database))")
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        if rc != MDB_SUCCESS { try check(rc, "mdb_cursor_get in \(database)") }
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }

    /// The key of the current entry or the next one as it is stored (in a database whose keys are
    /// sealed, hashed), without opening its value: for a walk that passes over most entries by their
    /// key. Valid until the cursor's next move; nil when there is no such entry.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    package func storedKey(_ step: Step) throws -> UnsafeRawBufferPointer? {
        guard let (k, _) = try storedMove(step == .next ? MDB_NEXT : MDB_GET_CURRENT) else { return nil }
        return UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
    }

    /// Calls `body` with the key and value the cursor is on, borrowed from the map, without copying.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), and whatever `body` throws.
    public func withCurrent<R>(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws
        -> R?
    {
        guard let (k, v) = try rawMove(MDB_GET_CURRENT) else { return nil }
        return try body(
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Moves to the first entry and calls `body` with its key and value, borrowed from the map without
    /// copying; nil (and `body` not called) when the database is empty.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), and whatever `body` throws.
    public func withFirst<R>(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws
        -> R?
    {
        guard let (k, v) = try rawMove(MDB_FIRST) else { return nil }
        return try body(
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Moves to the next entry and calls `body` with its key and value, borrowed from the map without
    /// copying; nil (and `body` not called) at the end.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), and whatever `body` throws.
    public func withNext<R>(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws -> R?
    {
        guard let (k, v) = try rawMove(MDB_NEXT) else { return nil }
        return try body(
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Moves to `key` exactly and calls `body` with its value, borrowed from the map without copying;
    /// nil (and `body` not called) when the key is absent.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` for a key LMDB cannot hold), and whatever `body` throws.
    public func withValue<R>(at key: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws -> R)
        throws
        -> R?
    {
        let found = try key.withUnsafeBytes { bytes in
            try transaction.environment.checkKey(bytes.count, "seek in \(database)")
            return try rawMove(MDB_SET_KEY, key: bytes)
        }
        guard let (_, v) = found else { return nil }
        return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Moves to `key` exactly and calls `body` with its value, borrowed from the map without copying;
    /// nil (and `body` not called) when the key is absent. The key's bytes are read in place (no
    /// generic `ContiguousBytes` witness: for loops over many keys).
    ///
    /// - Throws: as ``withValue(at:_:)``.
    public func withValue<R>(
        atBytes key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R
    )
        throws -> R?
    {
        try transaction.environment.checkKey(key.count, "seek in \(database)")
        guard let (_, v) = try rawMove(MDB_SET_KEY, key: key) else { return nil }
        return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Moves to the first entry.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    @discardableResult public func first() throws -> Entry? { try move(MDB_FIRST) }
    /// Moves to the last entry (the last duplicate of the last key).
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func last() throws -> Entry? { try move(MDB_LAST) }
    /// Moves to the next entry (the next duplicate, or the first value of the next key); from an
    /// unpositioned cursor, the first.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func next() throws -> Entry? { try move(MDB_NEXT) }
    /// Moves to the previous entry; from an unpositioned cursor, the last.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func previous() throws -> Entry? { try move(MDB_PREV) }
    /// The entry the cursor is on.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    public func current() throws -> Entry? { try move(MDB_GET_CURRENT) }

    /// Moves to `key` exactly (its first value), or returns `nil` when it is absent.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` for a key LMDB cannot hold).
    @discardableResult public func seek(to key: some ContiguousBytes) throws -> Entry? {
        try key.withUnsafeBytes { (bytes) -> Entry? in
            try transaction.environment.checkKey(bytes.count, "seek in \(database)")
            return try move(MDB_SET_KEY, key: bytes)
        }
    }

    /// Moves to the first key `>= key`.
    ///
    /// - Throws: as ``seek(to:)``.
    @discardableResult public func seek(atLeast key: some ContiguousBytes) throws -> Entry? {
        try key.withUnsafeBytes { (bytes) -> Entry? in
            try transaction.environment.checkKey(bytes.count, "seek in \(database)")
            return try move(MDB_SET_RANGE, key: bytes)
        }
    }

    /// Moves to the last key `<= key`.
    ///
    /// - Throws: as ``seek(to:)``.
    @discardableResult public func seek(atMost key: some ContiguousBytes) throws -> Entry? {
        let bytes = key.withUnsafeBytes { Array($0) }
        if let found = try seek(atLeast: bytes) {
            if found.key == bytes {
                // The last duplicate of an exact match.
                return database.allowsDuplicates ? try lastDuplicate() : found
            }
            return try previous()
        }
        return try last()
    }

    // MARK: Duplicates

    /// In a dup-sort database: moves to the exact `key`/`value` pair.
    ///
    /// - Throws: as ``seek(to:)``, and `.invalidValueSize` for a value the database cannot hold.
    @discardableResult public func seek(key: some ContiguousBytes, value: some ContiguousBytes) throws
        -> Entry?
    {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) -> Entry? in
                try transaction.environment.checkKey(keyBytes.count, "seek in \(database)")
                return try move(MDB_GET_BOTH, key: keyBytes, value: valueBytes)
            }
        }
    }

    /// In a dup-sort database: moves to the first value `>= value` of `key`.
    ///
    /// - Throws: as ``seek(key:value:)``.
    @discardableResult public func seek(key: some ContiguousBytes, atLeastValue value: some ContiguousBytes)
        throws
        -> Entry?
    {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) -> Entry? in
                try transaction.environment.checkKey(keyBytes.count, "seek in \(database)")
                return try move(MDB_GET_BOTH_RANGE, key: keyBytes, value: valueBytes)
            }
        }
    }

    /// Moves to the first value of the current key.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func firstDuplicate() throws -> Entry? { try move(MDB_FIRST_DUP) }
    /// Moves to the last value of the current key.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func lastDuplicate() throws -> Entry? { try move(MDB_LAST_DUP) }
    /// Moves to the next value of the current key, or returns `nil` after its last one.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func nextDuplicate() throws -> Entry? { try move(MDB_NEXT_DUP) }
    /// Moves to the previous value of the current key.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func previousDuplicate() throws -> Entry? { try move(MDB_PREV_DUP) }
    /// Moves to the first value of the next key.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func nextKey() throws -> Entry? { try move(MDB_NEXT_NODUP) }
    /// Moves to the last value of the previous key.
    ///
    /// - Throws: as ``first()`` does: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the
    ///   transaction has ended or from another thread).
    @discardableResult public func previousKey() throws -> Entry? { try move(MDB_PREV_NODUP) }

    /// The number of values of the current key.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, or a database without duplicates).
    public func duplicateCount() throws -> Int {
        let cursor = try activeHandle("mdb_cursor_count in \(database)")
        var count = 0
        try check(mdb_cursor_count(cursor, &count), "mdb_cursor_count in \(database)")
        return count
    }

    /// In a dup-fixed database: every value of `key`, read a page at a time (`MDB_GET_MULTIPLE`).
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, or a database that is not dup-fixed).
    public func fixedDuplicates(forKey key: some ContiguousBytes) throws -> [[UInt8]] {
        guard let width = database.fixedValueWidth else {
            throw LMDBError(
                .incompatible, operation: "fixedDuplicates in \(database)",
                message: "\(database) is not a dup-fixed database")
        }
        guard try seek(to: key) != nil else { return [] }
        var result: [[UInt8]] = []
        var op = MDB_GET_MULTIPLE
        while let (_, chunk) = try rawMove(op) {
            let bytes = UnsafeRawBufferPointer(start: chunk.mv_data, count: chunk.mv_size)
            var offset = 0
            while offset + width <= bytes.count {
                result.append(Array(bytes[offset..<offset + width]))
                offset += width
            }
            op = MDB_NEXT_MULTIPLE
        }
        return result
    }

    // MARK: Sequence

    /// The entries from the first key `>= start` (`<= start` when `reverse`) to the end, as a Swift
    /// sequence of copies. An error ends the iteration early and is kept in ``iterationError``.
    public func entries(from start: [UInt8]? = nil, reverse: Bool = false) -> Entries {
        entries(from: start, reverse: reverse, closeWhenDone: false)
    }

    func entries(from start: [UInt8]?, reverse: Bool, closeWhenDone: Bool) -> Entries {
        Entries(cursor: self, start: start, reverse: reverse, closeWhenDone: closeWhenDone)
    }

    /// A sequence of the cursor's entries; see ``Cursor/entries(from:reverse:)``.
    public struct Entries: Sequence, IteratorProtocol {
        let cursor: Cursor
        let start: [UInt8]?
        let reverse: Bool
        let closeWhenDone: Bool
        var started = false

        /// The next entry, or `nil` at the end (or after an error).
        public mutating func next() -> Entry? {
            let result: Entry?
            do {
                if !started {
                    started = true
                    if let start {
                        result = reverse ? try cursor.seek(atMost: start) : try cursor.seek(atLeast: start)
                    } else {
                        result = reverse ? try cursor.last() : try cursor.first()
                    }
                } else {
                    result = reverse ? try cursor.previous() : try cursor.next()
                }
            } catch {
                cursor.iterationError = error as? LMDBError
                result = nil
            }
            if result == nil && closeWhenDone { cursor.close() }
            return result
        }
    }
}
