import CLMDB
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A read-write transaction. See ``Environment/write(_:)-jver``.
///
/// Everything a read transaction offers, plus puts, deletes, emptying and dropping databases, write
/// cursors and child transactions. Every successful change is also recorded, so that when the map
/// fills up in the middle of the closure the layer can abort, grow the map and replay the changes on
/// a fresh transaction, and the closure carries on without noticing (it runs only once).
public final class WriteTransaction: Transaction {
    let parent: WriteTransaction?
    var child: WriteTransaction?
    // Unchecked: a write transaction is used by one thread (each put would otherwise pay a dynamic
    // exclusivity check).
    @exclusivity(unchecked) var log = WriteLog()
    /// Databases opened in this transaction (and committed children), published at commit.
    var openedDatabases: [Database] = []
    let owner: pthread_t
    /// The id the root transaction was begun with: replay is only correct on the same snapshot.
    let baseID: Int

    init(environment: Environment, handle: OpaquePointer, parent: WriteTransaction?) {
        self.parent = parent
        self.owner = pthread_self()
        self.baseID = Int(mdb_txn_id(handle))
        super.init(environment: environment, handle: handle)
    }

    /// True.
    override public var isWritable: Bool { true }

    var root: WriteTransaction { parent?.root ?? self }

    override func activeHandle(_ operation: @autoclosure () -> String) throws(LMDBError) -> OpaquePointer {
        LockWatch.check(entering: "LMDB (\(operation()))")
        guard let handle else {
            throw LMDBError(
                .transactionNotActive, operation: operation(),
                message: "the write transaction has ended; use it only inside its closure")
        }
        guard pthread_equal(owner, pthread_self()) != 0 else {
            throw LMDBError(
                .transactionNotActive, operation: operation(),
                message: "a write transaction must be used on the thread that began it")
        }
        guard child == nil else {
            throw LMDBError(
                .transactionNotActive, operation: operation(),
                message: "the transaction has an active child; use the child until its closure returns")
        }
        return handle
    }

    /// Runs an LMDB call, and when it reports `MDB_MAP_FULL`, grows the map, rebuilds the transaction
    /// from the log and runs the call again.
    func perform(
        _ operation: @autoclosure () -> String, _ call: (OpaquePointer) -> Int32
    ) throws -> Int32 {
        var attempt = 0
        while true {
            let rc = call(try activeHandle(operation()))
            guard rc == MDB_MAP_FULL else { return rc }
            attempt += 1
            try root.rebuildAfterMapFull(operation: operation(), attempt: attempt)
        }
    }

    // MARK: Writing

    /// Stores `value` under `key`. Without flags an existing value is replaced (in a dup-sort database
    /// the value is added to the key's set). With ``PutFlags/noOverwrite`` an existing key throws
    /// ``LMDBError/Code/keyExists`` and nothing changes.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails: `.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` or `.invalidValueSize` for bytes the database cannot hold,
    ///   `.keyExists` as above, `.mapFull` only when the map cannot grow, and `.diskFull`.
    public func put(
        _ value: some ContiguousBytes, forKey key: some ContiguousBytes, in database: Database,
        flags: PutFlags = []
    ) throws {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) in
                try put(valueBytes, forKey: keyBytes, in: database, flags: flags)
            }
        }
    }

    /// ``put(_:forKey:in:flags:)-(ContiguousBytes,_,_,_)`` for a value and key in byte arrays,
    /// without the generic bytes protocol (and its unspecialized calls) on a path taken per object.
    ///
    /// - Throws: as ``put(_:forKey:in:flags:)-(ContiguousBytes,_,_,_)``.
    public func put(_ value: [UInt8], forKey key: [UInt8], in database: Database, flags: PutFlags = []) throws
    {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { try put($0, forKey: keyBytes, in: database, flags: flags) }
        }
    }

    /// ``put(_:forKey:in:flags:)-(ContiguousBytes,_,_,_)`` for a value already in memory (a record
    /// in the encoder's buffer) and a key in a byte array.
    ///
    /// - Throws: as ``put(_:forKey:in:flags:)-(ContiguousBytes,_,_,_)``.
    public func put(
        _ value: UnsafeRawBufferPointer, forKey key: [UInt8], in database: Database, flags: PutFlags = []
    ) throws {
        try key.withUnsafeBytes { try put(value, forKey: $0, in: database, flags: flags) }
    }

    func put(
        _ valueBytes: UnsafeRawBufferPointer, forKey keyBytes: UnsafeRawBufferPointer, in database: Database,
        flags: PutFlags
    ) throws {
        func operation() -> String { "mdb_put in \(database)" }
        try environment.checkKey(keyBytes.count, operation())
        guard let sealing = database.sealing else {
            try environment.checkValue(valueBytes.count, in: database, operation())
            try putStored(valueBytes, forKey: keyBytes, in: database, flags: flags)
            return
        }
        try withSealed(valueBytes, forKey: keyBytes, in: database, sealing: sealing) { value, key in
            try environment.checkValue(value.count, in: database, operation())
            try putStored(value, forKey: key, in: database, flags: sealing.storableFlags(flags, in: database))
        }
    }

    /// Calls `body` with the bytes LMDB stores for `valueBytes` under `keyBytes` in a sealed
    /// database: the value sealed (carrying the key when the key is hashed), and the stored key.
    func withSealed<R>(
        _ valueBytes: UnsafeRawBufferPointer, forKey keyBytes: UnsafeRawBufferPointer, in database: Database,
        sealing: DatabaseSealing, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        try sealing.withStoredKey(keyBytes) { stored in
            try sealing.withSealed(
                valueBytes, embeddedKey: sealing.hashesKeys && !database.allowsDuplicates ? keyBytes : nil,
                storedKey: stored, deterministic: database.allowsDuplicates
            ) { try body($0, stored) }
        }
    }

    /// Puts bytes as LMDB stores them (already sealed, in a sealed database).
    func putStored(
        _ valueBytes: UnsafeRawBufferPointer, forKey keyBytes: UnsafeRawBufferPointer, in database: Database,
        flags: PutFlags
    ) throws {
        func operation() -> String { "mdb_put in \(database)" }
        let rc = try perform(operation()) { txn in
            var keyValue = MDB_val(keyBytes)
            var dataValue = MDB_val(valueBytes)
            return mdb_put(txn, database.handle, &keyValue, &dataValue, flags.rawValue)
        }
        if rc == MDB_KEYEXIST {
            throw LMDBError(
                .keyExists, operation: operation(),
                message: flags.contains(.noDuplicateData)
                    ? "the key/value pair is already in \(database)" : "the key is already in \(database)")
        }
        try check(rc, operation())
        log.recordPut(database.handle, flags: flags.rawValue, key: keyBytes, value: valueBytes)
    }

    /// Removes `key` and all its values. Returns false when the key was absent.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` for a key LMDB cannot hold).
    @discardableResult
    public func delete(_ key: some ContiguousBytes, in database: Database) throws -> Bool {
        try key.withUnsafeBytes { try delete(keyBytes: $0, in: database) }
    }

    /// ``delete(_:in:)-(ContiguousBytes,_)`` for a key in a byte array, without the generic bytes
    /// protocol on the path.
    ///
    /// - Throws: as ``delete(_:in:)-(ContiguousBytes,_)``.
    @discardableResult
    public func delete(_ key: [UInt8], in database: Database) throws -> Bool {
        try key.withUnsafeBytes { try delete(keyBytes: $0, in: database) }
    }

    private func delete(keyBytes: UnsafeRawBufferPointer, in database: Database) throws -> Bool {
        func operation() -> String { "mdb_del in \(database)" }
        try environment.checkKey(keyBytes.count, operation())
        if let sealing = database.sealing, sealing.hashesKeys {
            return try sealing.withStoredKey(keyBytes) { try deleteStored(keyBytes: $0, in: database) }
        }
        return try deleteStored(keyBytes: keyBytes, in: database)
    }

    /// Deletes a key as LMDB stores it.
    func deleteStored(keyBytes: UnsafeRawBufferPointer, in database: Database) throws -> Bool {
        func operation() -> String { "mdb_del in \(database)" }
        let rc = try perform(operation()) { txn in
            var keyValue = MDB_val(keyBytes)
            return mdb_del(txn, database.handle, &keyValue, nil)
        }
        if rc == MDB_NOTFOUND { return false }
        try check(rc, operation())
        log.recordDelete(database.handle, key: keyBytes, value: nil)
        return true
    }

    /// Removes one `key`/`value` pair from a dup-sort database (in a plain database: the key, if its
    /// value is `value`). Returns false when the pair was absent.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread, `.invalidKeySize` for a key LMDB cannot hold).
    @discardableResult
    public func delete(
        _ key: some ContiguousBytes, value: some ContiguousBytes, in database: Database
    ) throws -> Bool {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) -> Bool in
                try delete(keyBytes, value: valueBytes, in: database)
            }
        }
    }

    /// Removes one `key`/`value` pair, as ``delete(_:value:in:)-(ContiguousBytes,_,_)``, from byte
    /// arrays (no generic `ContiguousBytes` witness: for loops over many entries).
    ///
    /// - Throws: as ``delete(_:value:in:)-(ContiguousBytes,_,_)``.
    @discardableResult
    public func delete(_ key: [UInt8], value: [UInt8], in database: Database) throws -> Bool {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { (valueBytes) -> Bool in
                try delete(keyBytes, value: valueBytes, in: database)
            }
        }
    }

    func delete(
        _ keyBytes: UnsafeRawBufferPointer, value valueBytes: UnsafeRawBufferPointer, in database: Database
    ) throws -> Bool {
        func operation() -> String { "mdb_del in \(database)" }
        try environment.checkKey(keyBytes.count, operation())
        guard let sealing = database.sealing else {
            return try deleteStored(keyBytes, value: valueBytes, in: database)
        }
        guard database.allowsDuplicates else {
            // A plain database: the pair is there when the key's value opens to `valueBytes`.
            guard let stored = try transientValue(forKey: keyBytes, in: database),
                stored.elementsEqual(valueBytes)
            else { return false }
            return try delete(keyBytes: keyBytes, in: database)
        }
        return try withSealed(valueBytes, forKey: keyBytes, in: database, sealing: sealing) { value, key in
            try deleteStored(key, value: value, in: database)
        }
    }

    /// Deletes a key/value pair as LMDB stores them.
    func deleteStored(
        _ keyBytes: UnsafeRawBufferPointer, value valueBytes: UnsafeRawBufferPointer, in database: Database
    ) throws -> Bool {
        func operation() -> String { "mdb_del in \(database)" }
        let rc = try perform(operation()) { txn in
            var keyValue = MDB_val(keyBytes)
            var dataValue = MDB_val(valueBytes)
            return mdb_del(txn, database.handle, &keyValue, &dataValue)
        }
        if rc == MDB_NOTFOUND { return false }
        try check(rc, operation())
        log.recordDelete(database.handle, key: keyBytes, value: valueBytes)
        return true
    }

    /// Removes every entry of `database`, keeping the database.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func empty(_ database: Database) throws {
        func operation() -> String { "mdb_drop (empty) \(database)" }
        try check(try perform(operation()) { mdb_drop($0, database.handle, 0) }, operation())
        log.recordDrop(database.handle, name: database.name, delete: false)
    }

    /// Deletes a named database and its name. The ``Database`` value must not be used afterwards; a
    /// later ``database(named:kind:create:)`` makes a new one.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func drop(_ database: Database) throws {
        guard let name = database.name else {
            throw LMDBError(
                .invalidArgument, operation: "mdb_drop main database",
                message: "the main database cannot be dropped; use empty(_:)")
        }
        func operation() -> String { "mdb_drop \(database)" }
        // mdb_drop with delete closes the handle, which must not race with mdb_dbi_open elsewhere; the
        // map growth that MDB_MAP_FULL needs happens outside that lock.
        var attempt = 0
        while true {
            let txn = try activeHandle(operation())
            let rc = environment.dbiLock.withLock { () -> Int32 in
                let rc = mdb_drop(txn, database.handle, 1)
                if rc == 0 { environment.forgetDatabase(named: name) }
                return rc
            }
            if rc == MDB_MAP_FULL {
                attempt += 1
                try root.rebuildAfterMapFull(operation: operation(), attempt: attempt)
                continue
            }
            try check(rc, operation())
            break
        }
        var level: WriteTransaction? = self
        while let current = level {
            current.openedDatabases.removeAll { $0.name == name }
            level = current.parent
        }
        log.recordDrop(database.handle, name: name, delete: true)
    }

    /// Opens (and, with `create`, creates) a named database inside this transaction. It becomes
    /// available to other transactions when this one commits. See
    /// ``Environment/database(named:kind:create:)``.
    ///
    /// - Throws: as ``Environment/database(named:kind:create:)``.
    public func database(named name: String, kind: Database.Kind? = nil, create: Bool = true) throws
        -> Database
    {
        if let known = try environment.knownDatabase(named: name, kind: kind) { return known }
        var level: WriteTransaction? = self
        while let current = level {
            if let opened = current.openedDatabases.first(where: { $0.name == name }) {
                try Environment.checkKind(opened, requested: kind)
                return opened
            }
            level = current.parent
        }
        let txn = try activeHandle("mdb_dbi_open \(name)")
        return try environment.dbiLock.withLock { () -> Database in
            let flags = (create ? UInt32(MDB_CREATE) : 0) | (kind ?? .plain).flags
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn, name, flags, &dbi)
            if rc == MDB_NOTFOUND {
                throw LMDBError(
                    .notFound, operation: "open database", message: "no database named \"\(name)\"")
            }
            try check(rc, "mdb_dbi_open \(name)")
            let database = try environment.describeDatabase(name: name, dbi: dbi, txn: txn, requested: kind)
            log.recordOpen(dbi, name: name, flags: flags)
            openedDatabases.append(database)
            return database
        }
    }

    /// Opens a cursor that can also write; see ``Transaction/cursor(in:)``.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread).
    public func writeCursor(in database: Database) throws -> WriteCursor {
        try makeCursor(in: database) as! WriteCursor
    }

    // MARK: Child transactions

    /// Runs `body` in a child transaction: its changes join this transaction when `body` returns, and
    /// are discarded when it throws (this transaction carries on). This transaction cannot be used
    /// until `body` returns. Unavailable with write-map durability modes.
    ///
    /// - Throws: ``LMDBError`` when LMDB fails (`.transactionNotActive` once the transaction has ended or
    ///   from another thread), `.nestedTransactionsUnavailable` in a write-map durability mode, and whatever
    ///   `body` throws (the child's writes are rolled back).
    public func nested<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        guard !environment.options.durability.usesWriteMap else {
            throw LMDBError(
                .nestedTransactionsUnavailable, operation: "mdb_txn_begin (child)",
                message: "nested transactions are not available with write-map durability (MDB_WRITEMAP)")
        }
        let parentHandle = try activeHandle("mdb_txn_begin (child)")
        var childHandle: OpaquePointer?
        try check(mdb_txn_begin(environment.handle, parentHandle, 0, &childHandle), "mdb_txn_begin (child)")
        let child = WriteTransaction(environment: environment, handle: childHandle!, parent: self)
        self.child = child
        let result: R
        do {
            result = try body(child)
        } catch {
            child.abortChild()
            self.child = nil
            throw error
        }
        do {
            try child.commitChild()
        } catch {
            child.abortChild()
            self.child = nil
            throw error
        }
        self.child = nil
        log.append(child.log)
        openedDatabases.append(contentsOf: child.openedDatabases)
        return result
    }

    func abortChild() {
        closeCursors()
        if let handle { mdb_txn_abort(handle) }
        handle = nil
    }

    func commitChild() throws {
        var attempt = 0
        while true {
            let txn = try activeHandle("mdb_txn_commit (child)")
            closeCursors()
            let rc = mdb_txn_commit(txn)
            handle = nil  // freed by the commit, whatever it returned
            if rc == MDB_MAP_FULL {
                attempt += 1
                try root.rebuildAfterMapFull(operation: "mdb_txn_commit (child)", attempt: attempt)
                continue
            }
            try check(rc, "mdb_txn_commit (child)")
            return
        }
    }

    // MARK: Root commit and abort (called by the environment)

    func commitRoot() throws {
        var attempt = 0
        while true {
            let txn = try activeHandle("mdb_txn_commit")
            closeCursors()
            let rc = mdb_txn_commit(txn)
            handle = nil
            if rc == MDB_MAP_FULL {
                attempt += 1
                try rebuildAfterMapFull(operation: "mdb_txn_commit", attempt: attempt)
                continue
            }
            if rc == EIO || rc == ENOSPC,
                let full = environment.diskFullError(operation: "mdb_txn_commit", rc)
            {
                throw full
            }
            try check(rc, "mdb_txn_commit")
            return
        }
    }

    func abortRoot() {
        var level: WriteTransaction? = self
        while let current = level {
            current.closeCursors()
            level = current.child
        }
        if let handle { mdb_txn_abort(handle) }
        level = self
        while let current = level {
            current.handle = nil
            level = current.child
        }
    }

    // MARK: Map growth

    /// Called on the root when any level hit `MDB_MAP_FULL`: aborts the whole chain, grows the map,
    /// begins a new root on the same snapshot, replays every level's log, and puts cursors back.
    func rebuildAfterMapFull(operation: String, attempt: Int) throws {
        precondition(parent == nil)
        guard attempt <= 24 else {
            throw LMDBError(
                .mapFull, operation: operation,
                message: "the map is full and growing it \(attempt - 1) times did not make room")
        }
        var levels: [WriteTransaction] = [self]
        while let next = levels.last!.child { levels.append(next) }
        // LMDB frees a write transaction's cursors when it ends: forget the handles, keep positions.
        for level in levels {
            for cursor in level.cursors.values { cursor.handle = nil }
        }
        if let handle { mdb_txn_abort(handle) }
        for level in levels { level.handle = nil }

        let environment = self.environment
        try environment.growAfterMapFull(operation: operation)
        environment.testHookBeforeReplay?()

        var newRoot: OpaquePointer?
        let rc = mdb_txn_begin(environment.handle, nil, 0, &newRoot)
        if rc == MDB_MAP_RESIZED {
            // Another process grew the map past ours meanwhile, so it also committed: a conflict.
            throw LMDBError(
                .writeConflictDuringGrowth, operation: operation,
                message: "another process committed while the map was growing; nothing was written, retry")
        }
        try check(rc, "mdb_txn_begin (after map growth)")
        guard Int(mdb_txn_id(newRoot!)) == baseID else {
            mdb_txn_abort(newRoot)
            throw LMDBError(
                .writeConflictDuringGrowth, operation: operation,
                message: "another process committed while the map was growing; nothing was written, retry")
        }
        handle = newRoot
        environment.countReplay()
        for (index, level) in levels.enumerated() {
            if index > 0 {
                var childHandle: OpaquePointer?
                try check(
                    mdb_txn_begin(environment.handle, levels[index - 1].handle, 0, &childHandle),
                    "mdb_txn_begin (child, after map growth)")
                level.handle = childHandle
            }
            if let failure = level.log.replay(on: level.handle!) {
                switch failure {
                case .lmdb(let code, _) where code == MDB_MAP_FULL:
                    try rebuildAfterMapFull(operation: operation, attempt: attempt + 1)
                    return
                case .lmdb(let code, let replayOperation):
                    abortRoot()
                    throw LMDBError(returnCode: code, operation: replayOperation)
                case .handleMismatch(let name):
                    abortRoot()
                    throw LMDBError(
                        .writeConflictDuringGrowth, operation: operation,
                        message: "database \"\(name)\" was reopened under another handle while the map grew")
                }
            }
        }
        for level in levels {
            for cursor in level.cursors.values { try cursor.reopen(on: level.handle!) }
        }
    }
}

extension MDB_val {
    init(_ bytes: UnsafeRawBufferPointer) {
        self.init(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    }
}

extension Cursor {
    /// Opens a new handle on `txn` and puts the cursor back where it was.
    func reopen(on txn: OpaquePointer) throws {
        var cursorHandle: OpaquePointer?
        try check(mdb_cursor_open(txn, database.handle, &cursorHandle), "mdb_cursor_open (after map growth)")
        handle = cursorHandle
        guard let key = trackedKey else { return }
        try key.withUnsafeBytes { (keyBytes) in
            if let value = trackedValue {
                try value.withUnsafeBytes { (valueBytes) in
                    _ = try storedMove(MDB_GET_BOTH, key: keyBytes, value: valueBytes)
                }
            } else {
                _ = try storedMove(MDB_SET, key: keyBytes)
            }
        }
    }
}
