import CLMDB
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open LMDB environment: a directory holding `data.mdb` and `lock.mdb`, shared by every process
/// that opens it.
///
/// There is one `Environment` per directory per process: ``open(at:options:)`` hands back the one
/// already open (opening a second `MDB_env` on the same files and closing it would silently drop the
/// first one's locks). The environment closes when the last reference to it goes away.
///
/// Transactions are closures. ``read(_:)`` takes a reset read transaction from a pool; ``write(_:)-jver``
/// runs one write transaction on the calling thread, commits it when the closure returns and aborts
/// it when the closure throws. The map grows by itself when a write fills it.
public final class Environment: @unchecked Sendable {
    // @unchecked: each mutable property names the lock that guards it; the handle is used by LMDB
    // from any thread (`MDB_NOTLS`), transactions serialized by the writer and resize locks.
    /// The directory, with symbolic links resolved.
    public let path: String
    /// The options the environment was opened with.
    public let options: EnvironmentOptions
    /// The longest key (and dup-sort value) LMDB accepts: 511 bytes.
    public let maxKeySize: Int
    /// The page size in bytes.
    public let pageSize: Int
    /// How many stale reader slots (left by processes that died) were cleared when this environment
    /// opened.
    public let staleReadersClearedAtOpen: Int
    /// True when a system crash (a power cut) happened while a process had this environment open in
    /// a mode that does not sync every commit: the data file may be damaged, so read it only after
    /// checking its pages (``checkPages(maxProblems:)``), then call ``forgetSystemCrash()``. Lode's `Store` does
    /// both by itself.
    public var sawSystemCrashWhileUnsynced: Bool { crashedSessionsLock.withLock { !crashedSessions.isEmpty } }
    /// Why this process trusts the data file (reads it without checking its pages first), or why not.
    /// A file is trusted when this process created it, when it is the file this library last closed
    /// cleanly here, unchanged since (`.clean-close`, docs/FORMAT.md), when another process that
    /// trusts it has it open, or once ``checkPages(maxProblems:)`` found every page sound. Anything
    /// else — a copy, a restored backup, a download, a file another program wrote, a file a process
    /// was writing when it was killed or the power went — is not: check its pages before reading it
    /// (Lode's `Store` does, by default).
    public var fileTrust: FileTrust { trustLock.withLock { trust } }
    /// The markers of the sessions the system crash interrupted.
    /// Under `crashedSessionsLock` (a pthread mutex, which ThreadSanitizer sees: `Synchronization.Mutex`
    /// waits on a raw futex on Linux).
    nonisolated(unsafe) private var crashedSessions: [String]
    private let crashedSessionsLock = Lock()
    /// This process's marker while it writes without syncing every commit.
    private let unsyncedMarker: String?
    /// Why this process trusts the data file, or why not; under `trustLock`.
    nonisolated(unsafe) private var trust: FileTrust
    /// The record of a clean close this process found or wrote last (a close that finds the file
    /// as it describes need not write it again); under `trustLock`.
    nonisolated(unsafe) private var recorded: CloseRecord?
    private let trustLock = Lock()
    /// The lock this process holds on `.clean-close.lock` once it trusts the file (nil when the
    /// file cannot be opened: others then check a file this process trusts).
    private let trustHold: TrustLock?

    let handle: OpaquePointer
    let resizeLock = ResizeLock()
    let writerLock = Lock()
    let dbiLock = Lock()
    private let registryKey: EnvironmentRegistry.Key
    private var databases: [String: Database] = [:]  // dbiLock
    /// Seals the entries of an encrypted environment (installed by its opener before it opens any
    /// database but the main one and the clear ones).
    private var sealer: (any EntrySealer)?  // dbiLock
    /// The installed sealer's policy, read when it was installed.
    private var sealingPolicy: SealingPolicy?  // dbiLock
    private var generation = 0  // dbiLock
    private var pooledReadHandles: [OpaquePointer] = []  // poolLock
    private let poolLock = Lock()
    private let statsLock = Lock()
    private var growths = 0  // statsLock
    private var adoptions = 0  // statsLock
    private var replays = 0  // statsLock
    private let writerQueue: DispatchQueue
    /// The main (unnamed) database, which holds the names of the named ones.
    public let mainDatabase: Database

    /// Test hook: runs after a full map was grown and before the write is replayed.
    nonisolated(unsafe) var testHookBeforeReplay: (() -> Void)?

    // MARK: Opening

    /// Opens the environment in the directory at `path`, or returns the one already open in this
    /// process.
    ///
    /// - Throws: ``LMDBError`` with ``LMDBError/Code/pathNotFound`` when the directory is missing (and
    ///   `createDirectory` is off), ``LMDBError/Code/notADirectory`` for a file,
    ///   ``LMDBError/Code/invalid`` when `data.mdb` is not an LMDB file,
    ///   ``LMDBError/Code/notAnEnvironment`` for a read-only open of a directory without one, and
    ///   ``LMDBError/Code/incompatibleOptions`` when it is open read-only and read-write is asked.
    public static func open(at path: String, options: EnvironmentOptions = EnvironmentOptions()) throws
        -> Environment
    {
        let operation = "open \(path)"
        guard options.mapSize > 0, options.maxReaders > 0, options.maxDatabases >= 0,
            options.readTransactionPoolSize >= 0
        else {
            throw LMDBError(
                .invalidArgument, operation: operation,
                message: "map size and reader count must be positive, database and pool counts not negative")
        }
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            guard code == ENOENT else { throw LMDBError(returnCode: code, operation: operation) }
            guard options.createDirectory, !options.readOnly else {
                throw LMDBError(.pathNotFound, operation: operation, message: "no such directory: \(path)")
            }
            try DurableNames.createDirectory(path, mode: mode_t(options.directoryMode), operation: operation)
            guard stat(path, &info) == 0 else { throw LMDBError(returnCode: errno, operation: operation) }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LMDBError(
                .notADirectory, operation: operation,
                message:
                    "\(path) is a file, not a directory; an LMDB environment is a directory with data.mdb")
        }
        let dataFile = path + "/data.mdb"
        if options.readOnly && access(dataFile, F_OK) != 0 {
            throw LMDBError(
                .notAnEnvironment, operation: operation,
                message: "\(path) holds no LMDB environment (no data.mdb)")
        }
        guard let resolved = realpath(path, nil) else {
            throw LMDBError(returnCode: errno, operation: operation)
        }
        let resolvedPath = String(cString: resolved)
        free(resolved)
        let key = EnvironmentRegistry.Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        return try EnvironmentRegistry.shared.environment(for: key, options: options, path: resolvedPath) {
            try Environment(path: resolvedPath, options: options, key: key)
        }
    }

    /// Who else has the environment in the directory at `path` open: this process (an environment
    /// not yet closed; then another process is not looked for), another process (the shared lock
    /// every open holds on `lock.mdb`), or nobody.
    ///
    /// - Throws: ``LMDBError`` when the directory or its lock file cannot be examined.
    package static func openers(at path: String) throws -> (thisProcess: Bool, otherProcess: pid_t?) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw LMDBError(returnCode: errno, operation: "stat \(path)") }
        let key = EnvironmentRegistry.Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        let here = EnvironmentRegistry.shared.isOpen(key)
        // POSIX drops every lock a process holds on a file when it closes any descriptor of it: a
        // probe of `lock.mdb` would take this process's LMDB lock away, and the next process to open
        // the environment would think it alone and reset the reader table under this one's readers.
        if here { return (true, nil) }
        let fd = Glibc.open(path + "/lock.mdb", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return (here, nil) }
            throw LMDBError(returnCode: errno, operation: "open \(path)/lock.mdb")
        }
        defer { close(fd) }
        // LMDB holds a read lock on the first byte of the lock file in every process that has the
        // environment open; F_GETLK reports another process's lock (never this process's own).
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(fd, F_GETLK, &lock) == 0 else {
            throw LMDBError(returnCode: errno, operation: "fcntl F_GETLK \(path)/lock.mdb")
        }
        return (here, lock.l_type == Int16(F_UNLCK) ? nil : lock.l_pid)
    }

    private init(path: String, options: EnvironmentOptions, key: EnvironmentRegistry.Key) throws {
        let operation = "open \(path)"
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        guard let env else {
            throw LMDBError(.system(ENOMEM), operation: "mdb_env_create", message: "no handle")
        }
        func fail(_ rc: Int32) -> LMDBError {
            mdb_env_close(env)
            switch rc {
            case MDB_INVALID:
                return LMDBError(
                    .invalid, operation: operation,
                    message: "\(path)/data.mdb is not an LMDB data file (no valid meta page)")
            case MDB_VERSION_MISMATCH:
                return LMDBError(
                    .versionMismatch, operation: operation,
                    message: "\(path) was written by an incompatible LMDB version")
            case EAGAIN:
                return LMDBError(
                    .system(EAGAIN), operation: operation,
                    message: "\(path) is locked by another process that is opening or closing it; retry")
            case EACCES:
                return LMDBError(
                    .system(EACCES), operation: operation,
                    message: "permission denied for \(path) (readers need write access to lock.mdb)")
            default:
                return LMDBError(returnCode: rc, operation: operation)
            }
        }
        var rc = mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases))
        if rc != 0 { throw fail(rc) }
        rc = mdb_env_set_maxreaders(env, UInt32(options.maxReaders))
        if rc != 0 { throw fail(rc) }
        let existed = access(path + "/data.mdb", F_OK) == 0
        if !options.readOnly && !existed {
            // A new store appears whole (two valid meta pages, on disk) or not at all.
            do {
                try DurableNames.createDataFile(
                    in: path, mapSize: options.mapSize, fileMode: mode_t(options.fileMode),
                    operation: operation)
            } catch {
                mdb_env_close(env)
                throw error
            }
        }
        // A data file shorter than its pages is refused before LMDB maps it (see `DataFileHeader`).
        // The file as it is before LMDB opens it (a write-map open extends it), and the record of its
        // last clean close.
        var observed: (current: CloseRecord?, stored: CloseRecord?)?
        let dataFile = Glibc.open(path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        if dataFile >= 0 {
            defer { Glibc.close(dataFile) }
            do {
                let header = try DataFileHeader.refuseTruncated(
                    path + "/data.mdb", descriptor: dataFile, operation: operation)
                if options.keepsCloseRecord && existed {
                    observed = (
                        CloseRecord.current(descriptor: dataFile, pageSize: header?.pageSize ?? 4096),
                        CloseRecord.stored(in: path)
                    )
                }
            } catch {
                mdb_env_close(env)
                throw error
            }
        }
        let crashed = UnsyncedSessions.crashedSessions(in: path, removingStale: !options.readOnly)
        var flags = UInt32(MDB_NOTLS) | options.durability.flags
        if options.readOnly { flags |= UInt32(MDB_RDONLY) }
        if options.noReadAhead { flags |= UInt32(MDB_NORDAHEAD) }
        rc = mdb_env_open(env, path, flags, mdb_mode_t(options.fileMode))
        if rc != 0 { throw fail(rc) }

        var stat = MDB_stat()
        mdb_env_stat(env, &stat)
        let pageSize = Int(stat.ms_psize)
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        let wanted = (options.mapSize + pageSize - 1) / pageSize * pageSize
        if !options.readOnly && info.me_mapsize < wanted {
            rc = mdb_env_set_mapsize(env, wanted)
            if rc != 0 { throw fail(rc) }
        }
        var dead: Int32 = 0
        mdb_reader_check(env, &dead)
        // The marker of a session that writes without syncing is on disk before its first write.
        var marker: String?
        if !options.readOnly && options.durability.syncsLazily {
            do {
                marker = try UnsyncedSessions.begin(in: path, operation: operation)
            } catch {
                mdb_env_close(env)
                throw error
            }
        }

        self.handle = env
        self.path = path
        self.options = options
        self.pageSize = pageSize
        self.maxKeySize = Int(mdb_env_get_maxkeysize(env))
        self.staleReadersClearedAtOpen = Int(dead)
        self.crashedSessions = crashed
        self.unsyncedMarker = marker
        let trustHold =
            options.keepsCloseRecord
            ? TrustLock(directory: path, readOnly: options.readOnly, fileMode: mode_t(options.fileMode)) : nil
        let trust = Self.trust(existed: existed, observed: observed, options: options, lock: trustHold)
        self.trust = trust
        self.recorded = trust == .closedCleanly ? observed?.stored : nil
        self.trustHold = trustHold
        if trust.isTrusted { trustHold?.hold() }
        self.registryKey = key
        self.writerQueue = DispatchQueue(label: "lode.lmdb.writer \(path)")
        self.mainDatabase = Database(name: nil, kind: .plain, handle: MDB_dbi(1))  // MAIN_DBI
    }

    deinit {
        EnvironmentRegistry.shared.close(key: registryKey) {
            for txn in pooledReadHandles { mdb_txn_abort(txn) }
            pooledReadHandles.removeAll()
            var synced = true
            if let unsyncedMarker {
                // A clean close: everything on disk, then nothing left to suspect.
                synced = mdb_env_sync(handle, 1) == 0
                if synced { unlink(unsyncedMarker) }
            }
            // The record of a clean close, for a file this process trusted and left whole on disk
            // (read through LMDB's own descriptor; closing the environment writes nothing).
            var descriptor: Int32 = -1
            let closing =
                options.keepsCloseRecord && !options.readOnly && synced && trust.isTrusted
                    && mdb_env_get_fd(handle, &descriptor) == 0
                ? CloseRecord.current(descriptor: descriptor, pageSize: pageSize) : nil
            mdb_env_close(handle)
            if let closing { record(closing) }
            trustHold?.close()
        }
    }

    /// What this process trusts of the file at open (see ``fileTrust``), from the file as it was
    /// before LMDB opened it and the record of its last clean close.
    private static func trust(
        existed: Bool, observed: (current: CloseRecord?, stored: CloseRecord?)?, options: EnvironmentOptions,
        lock: TrustLock?
    ) -> FileTrust {
        guard options.keepsCloseRecord else { return .closedCleanly }
        guard existed, let (current, stored) = observed else { return .created }
        if let current, current == stored { return .closedCleanly }
        if lock?.isHeldElsewhere == true { return .openElsewhere }
        if let current, current.wasCheckedHere { return .checked }
        guard let stored, let current else {
            return .untrusted(reason: "there is no record of a clean close of it by this library here")
        }
        return .untrusted(reason: stored.difference(from: current))
    }

    /// Writes `current`, the record of the data file as it is now (see `CloseRecord`), unless the one
    /// this process found or wrote last says the same.
    private func record(_ current: CloseRecord) {
        guard trustLock.withLock({ recorded }) != current else { return }
        if current.write(in: path, fileMode: mode_t(options.fileMode)) {
            trustLock.withLock { recorded = current }
        }
    }

    /// Trusts the file from now on: every page of it was checked and found sound. A writable
    /// environment writes the record at once, so the next open need not check again.
    func trustAfterCheck() {
        let current =
            options.keepsCloseRecord ? CloseRecord.current(of: path + "/data.mdb", pageSize: pageSize) : nil
        if let current { CloseRecord.noteChecked(current) }
        let wasTrusted = trustLock.withLock {
            let was = trust.isTrusted
            if !was { trust = .checked }
            return was
        }
        guard !wasTrusted else { return }
        trustHold?.hold()
        if !options.readOnly, let current { record(current) }
    }

    // MARK: Read transactions

    /// Runs `body` in a read transaction: a consistent snapshot that later commits do not change.
    /// Several reads may run at once, on any threads, also alongside a write. Keep them short: an open
    /// snapshot keeps the pages it sees from being reused.
    ///
    /// - Throws: ``LMDBError`` when a read transaction cannot begin (`.readersFull` once every reader slot is
    ///   taken by live processes), and whatever `body` throws.
    @discardableResult
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try withMapAccess { reentrant in
            let txnHandle = try acquireReadHandle(reentrant: reentrant)
            let txn = ReadTransaction(environment: self, handle: txnHandle)
            defer {
                txn.closeCursors()
                txn.handle = nil
                releaseReadHandle(txnHandle)
            }
            return try body(txn)
        }
    }

    /// A renewed read handle from the pool, or a new one. Adopts a map grown by another process
    /// (`MDB_MAP_RESIZED`) and clears stale readers when the table is full. The resize lock is held
    /// shared on entry and on return.
    private func acquireReadHandle(reentrant: Bool) throws(LMDBError) -> OpaquePointer {
        var clearedReaders = false
        while true {
            let pooled = poolLock.withLock { pooledReadHandles.popLast() }
            var txn: OpaquePointer?
            var rc: Int32
            if let pooled {
                rc = mdb_txn_renew(pooled)
                if rc == 0 { return pooled }
                mdb_txn_abort(pooled)
            } else {
                rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                if rc == 0, let txn { return txn }
            }
            switch rc {
            case MDB_MAP_RESIZED where !reentrant:
                resizeLock.unlockShared()
                adoptMapSize()
                resizeLock.lockShared(reentrant: false)
            case MDB_READERS_FULL where !clearedReaders:
                clearedReaders = true
                var dead: Int32 = 0
                mdb_reader_check(handle, &dead)
            case MDB_MAP_RESIZED:
                throw LMDBError(
                    .mapResized, operation: "mdb_txn_begin (read)",
                    message: "another process grew the map; it cannot be adopted while this thread has a "
                        + "transaction open, so finish that one first")
            case MDB_READERS_FULL:
                throw LMDBError(
                    .readersFull, operation: "mdb_txn_begin (read)",
                    message:
                        "all \(options.maxReaders) reader slots are in use by live readers; raise maxReaders")
            default:
                throw LMDBError(returnCode: rc, operation: "mdb_txn_begin (read)")
            }
        }
    }

    private func releaseReadHandle(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = poolLock.withLock { () -> Bool in
            guard pooledReadHandles.count < options.readTransactionPoolSize else { return false }
            pooledReadHandles.append(txn)
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    // MARK: Write transactions

    /// Runs `body` in the write transaction: commits when it returns, aborts when it throws. Only one
    /// write runs at a time, across threads and processes; the others wait.
    ///
    /// The closure runs exactly once, on the calling thread, and must not leave it (it is synchronous
    /// and cannot `await`; async code uses the `async` overload). When the map fills up the layer grows
    /// it and replays the changes made so far, so the closure never sees `MDB_MAP_FULL`.
    ///
    /// - Throws: ``LMDBError/Code/nestedWrite`` when the thread is already inside a write (use
    ///   ``WriteTransaction/nested(_:)``), ``LMDBError/Code/writeInsideRead`` when it is inside a read of
    ///   this environment, ``LMDBError/Code/readOnly`` for a read-only environment; whatever `body`
    ///   throws, after aborting.
    @discardableResult
    @available(*, noasync, message: "a write transaction must not cross an await; use the async overload")
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        guard !options.readOnly else {
            throw LMDBError(.readOnly, operation: "write", message: "\(path) was opened read-only")
        }
        LockWatch.check(entering: "an LMDB write of \(path)")
        let thread = ThreadState.current
        let id = ObjectIdentifier(self)
        try refuseNestedWrite()
        if thread.reads(in: id) > 0 {
            throw LMDBError(
                .writeInsideRead, operation: "write",
                message: "this thread has a read transaction open on \(path); finish it before writing")
        }
        writerLock.lock()
        defer { writerLock.unlock() }
        // Before the thread counts as writing: the check reads the map as a first-level reader.
        try growIfNearlyFull()
        thread.setWriting(true, in: id)
        defer { thread.setWriting(false, in: id) }

        resizeLock.lockShared(reentrant: false)
        defer { resizeLock.unlockShared() }
        var txnHandle: OpaquePointer?
        while true {
            let rc = mdb_txn_begin(handle, nil, 0, &txnHandle)
            if rc == MDB_MAP_RESIZED {
                resizeLock.unlockShared()
                adoptMapSize()
                resizeLock.lockShared(reentrant: false)
                continue
            }
            try check(rc, "mdb_txn_begin (write)")
            break
        }
        let txn = WriteTransaction(environment: self, handle: txnHandle!, parent: nil)
        let result: R
        do {
            result = try body(txn)
            try txn.commitRoot()
        } catch {
            txn.abortRoot()
            throw error
        }
        if !txn.openedDatabases.isEmpty {
            dbiLock.withLock {
                for database in txn.openedDatabases { databases[database.name!] = database }
                generation += 1
            }
        }
        return result
    }

    /// Throws ``LMDBError/Code/nestedWrite`` when the calling thread is inside a write transaction of
    /// this environment: what a caller checks before it waits for a write that another thread runs.
    ///
    /// - Throws: ``LMDBError`` `.nestedWrite` when the calling thread has a write open on this environment,
    ///   `.writeInsideRead` when it has a read open.
    public func refuseNestedWrite() throws {
        if ThreadState.current.isWriting(in: ObjectIdentifier(self)) {
            throw LMDBError(
                .nestedWrite, operation: "write",
                message: "this thread already has a write transaction open on \(path); "
                    + "use nested(_:) on it for a child transaction")
        }
    }

    /// Runs `body` in a write transaction on the environment's writer thread, so an async caller never
    /// holds a write transaction across an `await`.
    ///
    /// - Throws: as the synchronous ``write(_:)``, and whatever `body` throws (the transaction is aborted).
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> R) async throws
        -> R
    {
        try await withCheckedThrowingContinuation { continuation in
            writerQueue.async {
                continuation.resume(with: Result { try self.writeOnQueue(body) })
            }
        }
    }

    @available(*, noasync)
    private func writeOnQueue<R>(_ body: (WriteTransaction) throws -> R) throws -> R { try write(body) }

    // MARK: Databases

    /// Opens a named database (or the main one when `name` is nil), creating it when `create` is set and
    /// it is missing. Handles are opened once and kept for the environment's life.
    ///
    /// `kind` says how values are stored; `nil` accepts whatever the database has. An existing
    /// database of another kind throws ``LMDBError/Code/incompatible``, a missing one without `create`
    /// throws ``LMDBError/Code/notFound``. A handle not yet open is opened in a write transaction of
    /// its own (in a read-only environment, a read transaction), so inside a write closure use
    /// ``WriteTransaction/database(named:kind:create:)`` instead, and open databases before a read
    /// that needs them: a transaction sees only the handles open when it began.
    ///
    /// - Throws: ``LMDBError`` `.notFound` for a missing database when `create` is false, `.readOnly` when
    ///   creating one in a read-only environment, `.incompatible` for a `kind` that differs from the
    ///   stored one.
    public func database(named name: String?, kind: Database.Kind? = nil, create: Bool = true) throws
        -> Database
    {
        LockWatch.check(entering: "LMDB (opening database \(name ?? "main") of \(path))")
        guard let name else {
            try Environment.checkKind(mainDatabase, requested: kind)
            return mainDatabase
        }
        try Environment.checkName(name)
        if let known = try knownDatabase(named: name, kind: kind) { return known }
        if !options.readOnly {
            // Handles are opened inside a write transaction: `mdb_dbi_open` must never run in two
            // transactions of one process at once, and the writer lock guarantees it. A write that
            // only opens existing databases writes nothing.
            return try write { try $0.database(named: name, kind: kind, create: create) }
        }
        // Read-only: no write transaction ever runs in this process; open the existing database in a
        // dedicated read transaction whose commit keeps the handle.
        return try read { pooledTxn -> Database in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin (open database)")
            return try dbiLock.withLock { () throws -> Database in
                if let known = databases[name] {
                    mdb_txn_abort(txn)
                    try Environment.checkKind(known, requested: kind)
                    return known
                }
                var dbi: MDB_dbi = 0
                let rc = mdb_dbi_open(txn, name, 0, &dbi)
                if rc != 0 {
                    mdb_txn_abort(txn)
                    if rc == MDB_NOTFOUND {
                        throw LMDBError(
                            .notFound, operation: "open database", message: "no database named \"\(name)\"")
                    }
                    throw LMDBError(returnCode: rc, operation: "mdb_dbi_open \(name)")
                }
                let database: Database
                do {
                    database = try describeDatabase(name: name, dbi: dbi, txn: txn!, requested: kind)
                } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                try check(mdb_txn_commit(txn), "mdb_txn_commit (open database)")
                databases[name] = database
                generation += 1
                return database
            }
        }
    }

    /// Counts the times new database handles became available. A transaction can use only the
    /// handles that were open when it began, so a snapshot taken before a change cannot read the new
    /// databases.
    public var databaseGeneration: Int { dbiLock.withLock { generation } }

    /// True when the calling thread is inside a read or write transaction of this environment
    /// (opening databases then is refused, as it would need a write).
    public var currentThreadHasTransaction: Bool {
        ThreadState.current.holdsShared(in: ObjectIdentifier(self))
    }

    static func checkName(_ name: String) throws(LMDBError) {
        guard !name.isEmpty, !name.utf8.contains(0), name.utf8.count <= 511 else {
            throw LMDBError(
                .invalidArgument, operation: "open database",
                message: "a database name must be 1...511 bytes without NUL: \"\(name)\"")
        }
    }

    /// The cached database of that name, checked against `kind`.
    func knownDatabase(named name: String, kind: Database.Kind?) throws(LMDBError) -> Database? {
        try Environment.checkName(name)
        guard let known = dbiLock.withLock({ databases[name] }) else { return nil }
        try Environment.checkKind(known, requested: kind)
        return known
    }

    /// Installs the sealer of an encrypted environment: databases opened from now on (and those
    /// already opened) are sealed as it says. When one is installed already, `sealer` must seal with
    /// the same key (`sameKey`).
    ///
    /// - Throws: ``LMDBError/Code/incompatibleOptions`` when another key's sealer is installed, or a
    ///   database already open would be sealed differently.
    package func install(sealer new: any EntrySealer, sameKey: (any EntrySealer) -> Bool) throws {
        // The sealer is asked only outside the lock: its policy once, `sameKey` with the lock let go.
        let policy = new.policy
        while true {
            if let installed = installedSealer {
                guard sameKey(installed) else {
                    throw LMDBError(
                        .incompatibleOptions, operation: "open \(path)",
                        message: "the store is open in this process with another key")
                }
                return
            }
            let installed = try dbiLock.withLock { () throws(LMDBError) -> Bool in
                // Another thread installed one meanwhile: compare keys again, outside the lock.
                guard sealer == nil else { return false }
                for (name, database) in databases where policy.mode(ofDatabase: name) != .clear {
                    throw LMDBError(
                        .incompatibleOptions, operation: "open \(path)",
                        message: "\(database) was opened before the store's key was given")
                }
                sealer = new
                sealingPolicy = policy
                return true
            }
            if installed { return }
        }
    }

    /// The installed sealer, if any.
    package var installedSealer: (any EntrySealer)? { dbiLock.withLock { sealer } }

    /// The sealing of the database `name` of `kind` under the installed sealer (dbiLock held).
    private func sealing(ofDatabase name: String, kind: Database.Kind) throws(LMDBError) -> DatabaseSealing? {
        guard let sealer, let sealingPolicy else { return nil }
        let mode = sealingPolicy.mode(ofDatabase: name)
        if mode == .clear { return nil }
        if case .fixedDuplicates = kind {
            throw LMDBError(
                .incompatible, operation: "open database",
                message: "database \"\(name)\" is dup-fixed, which an encrypted store cannot seal")
        }
        return DatabaseSealing(sealer: sealer, mode: mode, name: Array(name.utf8))
    }

    func forgetDatabase(named name: String) {
        databases[name] = nil  // dbiLock held by the caller
    }

    static func checkKind(_ database: Database, requested: Database.Kind?) throws(LMDBError) {
        guard let requested, requested != database.kind else { return }
        throw LMDBError(
            .incompatible, operation: "open database",
            message: "\(database) is \(database.kind), not \(requested)")
    }

    /// Reads the flags LMDB stored for a just-opened handle and, for dup-fixed databases, the width.
    func describeDatabase(
        name: String, dbi: MDB_dbi, txn: OpaquePointer, requested: Database.Kind?
    ) throws(LMDBError) -> Database {
        var flags: UInt32 = 0
        try check(mdb_dbi_flags(txn, dbi, &flags), "mdb_dbi_flags \(name)")
        let kind: Database.Kind
        if flags & UInt32(MDB_DUPFIXED) != 0 {
            if case .fixedDuplicates(let width) = requested {
                kind = .fixedDuplicates(width: width)
            } else {
                // Learn the width from a stored value.
                var cursor: OpaquePointer?
                try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open \(name)")
                var key = MDB_val()
                var value = MDB_val()
                let rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                mdb_cursor_close(cursor)
                guard rc == 0 else {
                    throw LMDBError(
                        .invalidArgument, operation: "open database",
                        message: "database \"\(name)\" is dup-fixed and empty: give its value width")
                }
                kind = .fixedDuplicates(width: value.mv_size)
            }
        } else if flags & UInt32(MDB_DUPSORT) != 0 {
            kind = .duplicates
        } else {
            kind = .plain
        }
        let database = Database(
            name: name, kind: kind, handle: dbi, sealing: try sealing(ofDatabase: name, kind: kind))
        if let requested, requested != kind {
            throw LMDBError(
                .incompatible, operation: "open database",
                message: "database \"\(name)\" is \(kind), not \(requested)")
        }
        return database
    }

    // MARK: Size checks

    @inline(__always)
    func checkKey(_ count: Int, _ operation: @autoclosure () -> String) throws(LMDBError) {
        guard count >= 1 && count <= maxKeySize else {
            throw LMDBError(
                .invalidKeySize, operation: operation(),
                message: "a key must be 1...\(maxKeySize) bytes; this one is \(count)")
        }
    }

    @inline(__always)
    func checkValue(_ count: Int, in database: Database, _ operation: @autoclosure () -> String)
        throws(LMDBError)
    {
        switch database.kind {
        case .plain:
            return
        case .duplicates:
            guard count <= maxKeySize else {
                throw LMDBError(
                    .invalidValueSize, operation: operation(),
                    message:
                        "a value in dup-sort \(database) must be at most \(maxKeySize) bytes; this one is \(count)"
                )
            }
        case .fixedDuplicates(let width):
            guard count == width else {
                throw LMDBError(
                    .invalidValueSize, operation: operation(),
                    message: "every value in dup-fixed \(database) is \(width) bytes; this one is \(count)")
            }
        }
    }

    // MARK: Map size

    /// How many times this process grew the map, adopted a size another process had set, and rebuilt
    /// a write transaction by replaying its changes after the map filled up in the middle of it.
    public var mapResizes: (grown: Int, adopted: Int, replayedWrites: Int) {
        statsLock.withLock { (growths, adoptions, replays) }
    }

    func countReplay() { statsLock.withLock { replays += 1 } }

    /// Runs `body` holding the resize lock shared, counted as a read of this thread (so a write on the
    /// same thread is refused rather than deadlocked, and a nested read does not wait for a grower).
    /// `body` learns whether the thread already held the lock (a nested access).
    func withMapAccess<R>(_ body: (_ reentrant: Bool) throws -> R) rethrows -> R {
        LockWatch.check(entering: "an LMDB read of \(path)")
        let thread = ThreadState.current
        let id = ObjectIdentifier(self)
        let reentrant = thread.holdsShared(in: id)
        thread.adjustReads(in: id, by: 1)
        defer { thread.adjustReads(in: id, by: -1) }
        resizeLock.lockShared(reentrant: reentrant)
        defer { resizeLock.unlockShared() }
        return try body(reentrant)
    }

    /// Grows before a write when more than 80% of the map is used, so most writes never fill it.
    private func growIfNearlyFull() throws(LMDBError) {
        let info = self.info
        if info.usedBytes * 5 >= info.mapSize * 4 {
            try growMap(operation: "write", atLeast: 0)
        }
    }

    /// Called by a write transaction whose root was just aborted after `MDB_MAP_FULL`: gives up the
    /// shared hold, grows, takes it back.
    func growAfterMapFull(operation: String) throws(LMDBError) {
        let thread = ThreadState.current
        let id = ObjectIdentifier(self)
        resizeLock.unlockShared()
        defer { resizeLock.lockShared(reentrant: thread.reads(in: id) > 0) }
        guard thread.reads(in: id) == 0 else {
            throw LMDBError(
                .mapFull, operation: operation,
                message: "the map is full and cannot grow while this thread holds a read transaction "
                    + "inside the write; nothing was written")
        }
        try growMap(operation: operation, atLeast: 0)
    }

    /// Grows the map under the exclusive lock; the calling thread must not hold it shared.
    private func growMap(operation: String, atLeast minimum: Int) throws(LMDBError) {
        resizeLock.lockExclusive()
        defer { resizeLock.unlockExclusive() }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        let used = (info.me_last_pgno + 1) * pageSize
        let current = info.me_mapsize
        var size = max(current + min(current, 4 << 30), used + minimum)
        size = (size + pageSize - 1) / pageSize * pageSize
        try check(mdb_env_set_mapsize(handle, size), "\(operation): mdb_env_set_mapsize(\(size))")
        statsLock.withLock { growths += 1 }
    }

    /// Adopts the map size another process stored (after `MDB_MAP_RESIZED`); the calling thread must
    /// not hold the resize lock.
    private func adoptMapSize() {
        resizeLock.lockExclusive()
        defer { resizeLock.unlockExclusive() }
        mdb_env_set_mapsize(handle, 0)
        statsLock.withLock { adoptions += 1 }
    }

    // MARK: Information and maintenance

    /// Map size, pages used, last transaction id (of any process) and reader-table figures.
    public var info: EnvironmentInfo {
        withMapAccess { _ in
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return EnvironmentInfo(
                mapSize: info.me_mapsize, lastPageNumber: info.me_last_pgno,
                lastTransactionID: info.me_last_txnid,
                maxReaders: Int(info.me_maxreaders), readerSlotsUsed: Int(info.me_numreaders),
                pageSize: pageSize)
        }
    }

    /// The main database's B-tree figures as of the last commit.
    public var statistics: DatabaseStatistics {
        withMapAccess { _ in
            var stat = MDB_stat()
            mdb_env_stat(handle, &stat)
            return DatabaseStatistics(stat)
        }
    }

    /// The reader table: one entry per slot in use, in any process.
    public func readers() -> [ReaderSlot] {
        LockWatch.check(entering: "LMDB (mdb_reader_list of \(path))")
        final class Lines { var text = "" }
        let lines = Lines()
        _ = withExtendedLifetime(lines) {
            mdb_reader_list(
                handle,
                { message, context in
                    guard let message, let context else { return 0 }
                    Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().text += String(
                        cString: message)
                    return 0
                }, Unmanaged.passUnretained(lines).toOpaque())
        }
        var slots: [ReaderSlot] = []
        for line in lines.text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 3, let pid = Int32(fields[0]), let thread = UInt64(fields[1], radix: 16)
            else {
                continue
            }
            slots.append(ReaderSlot(processID: pid, thread: thread, transactionID: Int(fields[2])))
        }
        return slots
    }

    /// Clears reader slots held by processes that no longer exist; returns how many.
    ///
    /// - Throws: ``LMDBError`` when LMDB cannot read the reader table.
    @discardableResult
    public func clearStaleReaders() throws -> Int {
        var dead: Int32 = 0
        try check(mdb_reader_check(handle, &dead), "mdb_reader_check")
        return Int(dead)
    }

    /// Removes the markers of a system crash (see ``sawSystemCrashWhileUnsynced``) once the pages
    /// were checked and found whole.
    public func forgetSystemCrash() {
        let markers = crashedSessionsLock.withLock {
            defer { crashedSessions = [] }
            return crashedSessions
        }
        for marker in markers { unlink(marker) }
    }

    /// Flushes committed data to disk: needed with the no-sync durability modes, harmless otherwise.
    ///
    /// - Throws: ``LMDBError`` `.system` with the `errno` of a failed flush (`EIO` after a write error,
    ///   `ENOSPC`).
    public func sync(force: Bool = true) throws {
        guard !options.readOnly else {
            throw LMDBError(.readOnly, operation: "mdb_env_sync", message: "\(path) was opened read-only")
        }
        try withMapAccess { _ in
            try check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
        }
    }

    /// The free bytes of the file system holding the environment, if it can say.
    public var availableDiskSpace: Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// For a commit that failed with `EIO` or `ENOSPC`: a ``LMDBError/Code/diskFull`` error when the
    /// file system is (nearly) out of room — LMDB turns a short write for lack of space into `EIO`,
    /// which alone would read as a hardware fault. Nil when there is room (a real I/O error).
    func diskFullError(operation: String, _ rc: Int32) -> LMDBError? {
        let available = availableDiskSpace
        guard rc == ENOSPC || (available.map { $0 < Self.diskFullThreshold } ?? false) else { return nil }
        return LMDBError(
            .diskFull, operation: operation,
            message: "no space left on the device holding \(path)"
                + (available.map { " (\($0) bytes free)" } ?? "") + "; the commit was not written")
    }

    /// Below this many free bytes, an I/O error on commit is taken for a full disk.
    static let diskFullThreshold = 16 << 20

    /// Copies the environment into `directory` (created when missing, with the environment's
    /// ``EnvironmentOptions/directoryMode``; must be empty) while it stays in use. A compacting copy
    /// leaves out free pages and renumbers the rest, so it is smaller. The copy's data file gets the
    /// environment's ``EnvironmentOptions/fileMode`` (LMDB itself would create it world-readable).
    ///
    /// The copy is whole or not there, also after a power cut: it is written under a temporary name
    /// (`data.mdb.copying-PID`, which a later copy into the directory clears away), synced, and only
    /// then named `data.mdb`, with the directory synced before this returns.
    ///
    /// - Throws: ``LMDBError`` `.system` when `directory` is missing, not empty or not writable, or the disk
    ///   fills; the partial copy is removed.
    public func copy(to directory: String, compacting: Bool = false) throws {
        let operation = "copy \(path) to \(directory)"
        var info = stat()
        let manager = FileManager.default
        if stat(directory, &info) != 0 {
            try DurableNames.createDirectory(
                directory, mode: mode_t(options.directoryMode), operation: operation)
        } else if (info.st_mode & S_IFMT) != S_IFDIR {
            throw LMDBError(.notADirectory, operation: operation, message: "\(directory) is not a directory")
        } else {
            let contents = (try? manager.contentsOfDirectory(atPath: directory)) ?? []
            let interrupted = contents.filter { $0.hasPrefix("data.mdb.copying-") }
            for name in interrupted { unlink(directory + "/" + name) }
            guard contents.count == interrupted.count else {
                throw LMDBError(
                    .system(EEXIST), operation: operation,
                    message: "\(directory) is not empty; copy into an empty directory")
            }
        }
        let temporary = directory + "/data.mdb.copying-\(getpid())"
        let descriptor = Glibc.open(
            temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(options.fileMode))
        guard descriptor >= 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (open \(temporary))")
        }
        var open = true
        defer {
            if open {
                Glibc.close(descriptor)
                unlink(temporary)
            }
        }
        try withMapAccess { _ in
            try check(mdb_env_copyfd2(handle, descriptor, compacting ? UInt32(MDB_CP_COMPACT) : 0), operation)
        }
        guard fchmod(descriptor, mode_t(options.fileMode)) == 0, fsync(descriptor) == 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (sync \(temporary))")
        }
        guard link(temporary, directory + "/data.mdb") == 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (link data.mdb)")
        }
        try DurableNames.syncDirectory(directory, operation: operation)
        open = false
        Glibc.close(descriptor)
        unlink(temporary)
        // LMDB wrote the copy from a file this process trusts: so may the copy's next opener.
        if options.keepsCloseRecord && fileTrust.isTrusted {
            CloseRecord.current(of: directory + "/data.mdb", pageSize: pageSize)?
                .write(in: directory, fileMode: mode_t(options.fileMode))
        }
    }
}

extension Database.Kind {
    var flags: UInt32 {
        switch self {
        case .plain: return 0
        case .duplicates: return UInt32(MDB_DUPSORT)
        case .fixedDuplicates: return UInt32(MDB_DUPSORT) | UInt32(MDB_DUPFIXED)
        }
    }
}

extension Database.Kind: CustomStringConvertible {
    /// `plain`, `dup-sort`, or `dup-fixed(N)`.
    public var description: String {
        switch self {
        case .plain: return "plain"
        case .duplicates: return "dup-sort"
        case .fixedDuplicates(let width): return "dup-fixed(\(width))"
        }
    }
}
