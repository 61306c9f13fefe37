import Foundation
import LMDB
import LodeCodec
import Synchronization

/// A Lode store: a directory holding typed objects, kept in ACID transactions.
///
/// ```swift
/// let store = try Store(at: URL(fileURLWithPath: "tasks"))
/// try store.write { tx in try tx.insert(todo) }
/// let open = store.objects(Todo.self).filter(#Predicate { $0.status == pending })
/// ```
///
/// One `Store` may be shared by every thread and task of a process; other processes may open the same
/// directory at the same time.
public final class Store: @unchecked Sendable {
    // @unchecked: the mutable state (`guarded`) is only touched in `withState`, under `lock`, a leaf
    // lock; every other stored property is immutable and Sendable.
    /// The store's directory.
    public let path: String
    /// How the store was opened.
    public let configuration: StoreConfiguration
    /// True for a store made by ``temporary(configuration:types:migrations:)``: its directory is
    /// removed when it closes, when it is released, or when the process exits normally.
    public let isTemporary: Bool
    private let lock = LodeLock("Store state")
    private var guarded: State

    /// Runs `body` with the mutable state, under the lock.
    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&guarded)
    }

    private struct State {
        var environment: Environment?
        /// Completely registered types, by store name.
        var types: [String: AnyObject] = [:]
        /// Swift types by store name, to resolve ``ObjectID``s without a type.
        var swiftTypes: [String: any Persistable.Type] = [:]
        /// The snapshot lazy results share while no commit has happened.
        weak var sharedSnapshot: ReadSnapshot?
        /// The last version whose catalog has had all its databases opened.
        var catalogSyncedVersion = -1
        /// The layer above that follows this store's commits, once made (see ``StoreFollower``).
        var follower: (any StoreFollower)?
        /// How many migrations the store had run when this process opened it (after running its
        /// own), and that count's stored bytes (`schemaVersion` in `@meta`, nil when absent): a write
        /// of a registered type is refused once another process ran more.
        var knownSchemaVersion: (count: Int, bytes: [UInt8]?)?
        /// Told when a held version falls `versionLagWarning` versions behind.
        var versionLagHandler: (@Sendable (HeldVersion) -> Void)? = Store.logVersionLag
    }

    /// Async and grouped writes waiting to commit together.
    let groupCommit = GroupCommitQueue()
    /// When the reader table was last read for readers of other processes, and the version each
    /// such process was last warned about.
    let otherReaders = Locked<(checkedAt: Int, warned: [Int32: Int])>((0, [:]))

    /// True once this process saw the store's format say it has links (format 3).
    let hasLinksFormat = Locked(false, name: "the links format flag")
    /// The `@history` database once this process has seen the store keep history.
    let historyDatabase = Locked<Database?>(nil, name: "the history database")
    /// The last version this process committed having seen that the store keeps no history: a write
    /// that starts right after it (no other commit between, which alone could have turned history
    /// on) need not look again.
    /// An atomic, not a lock: it is read and set on every commit.
    let historyOffThrough = Atomic<Int>(-1)
    /// Whether the store is known to have the full-text format (see `StoreLayout.textIndexesFormatVersion`).
    let hasTextIndexesFormat = Locked(false, name: "the full-text format flag")

    /// The link graph read from the catalog last (see `linkGraph(in:)`).
    let cachedLinkGraph = Locked<LinkGraph?>(nil, name: "the link graph")

    package let meta: Database
    /// Whether this open checked every page of the data file before reading it
    /// (``StoreConfiguration/pageCheck``): always asked, or the file was not known to be the one Lode
    /// left, or a system crash interrupted a process that wrote without syncing.
    public let pagesCheckedAtOpen: Bool
    /// True when the store is encrypted (opened with its key: ``StoreConfiguration/encryption``).
    public let isEncrypted: Bool
    let catalog: Database
    /// The change log, or nil in a read-only store made before it existed.
    let changeLog: Database?

    /// Opens (or creates) a store, registering `types` after the `opening` steps ran; a temporary one
    /// (see ``temporary(configuration:types:migrations:)``) removes its directory when it closes. The
    /// public initializers, which take migrations, are in `Migration/Store+Opening.swift`.
    package init(
        at url: URL, configuration: StoreConfiguration, types: [any Persistable.Type],
        opening: some StoreOpening, isTemporary: Bool
    ) throws {
        self.path = url.path
        self.isTemporary = isTemporary
        self.configuration = configuration
        let environment: Environment
        do {
            environment = try Environment.open(
                at: url.path,
                options: EnvironmentOptions(
                    mapSize: configuration.initialMapSize, maxReaders: configuration.maxReaders,
                    durability: configuration.durability.lmdb, readOnly: configuration.readOnly,
                    createDirectory: !configuration.readOnly,
                    readTransactionPoolSize: configuration.readTransactionPoolSize,
                    fileMode: configuration.fileMode, keepsCloseRecord: configuration.keepsCloseRecord))
        } catch let error as LMDBError {
            if error.code == .notAnEnvironment {
                throw LodeError.notAStore(path: url.path, reason: "the directory holds no store")
            }
            throw LodeError(storage: error)
        }
        try KeyChange.checkAtOpen(url.path)
        // After a system crash that interrupted a process writing without syncing, the file may be
        // damaged (the disk wrote its pages in any order): its pages are checked first, whatever the
        // configuration says, and then the records against the indexes and the catalog.
        // A file that is not known to be the one Lode left is checked too, unless the app said never
        // (then it is refused, unread).
        let afterSystemCrash = environment.sawSystemCrashWhileUnsynced
        let trust = environment.fileTrust
        if configuration.pageCheck == .never && !trust.isTrusted && !afterSystemCrash {
            throw LodeError.fileNotTrusted(path: url.path, reason: trust.description)
        }
        pagesCheckedAtOpen = configuration.pageCheck == .always || !trust.isTrusted || afterSystemCrash
        if pagesCheckedAtOpen { try Store.refuseDamagedPages(environment) }
        let (meta, catalog, changeLog) = try Store.prepare(
            environment, path: url.path, readOnly: configuration.readOnly,
            encryption: configuration.encryption, decryptedCacheSize: configuration.decryptedCacheSize,
            encryptionFormat: configuration.encryptionFormat)
        self.meta = meta
        self.isEncrypted = environment.installedSealer != nil
        self.catalog = catalog
        self.changeLog = changeLog
        self.guarded = State(environment: environment)
        if let history = configuration.history, !configuration.readOnly { try keepHistory(history) }
        if afterSystemCrash {
            // The types' schemas are read first: a kind of attached index one declares (full-text)
            // registers what checks its indexes (see `AttachedIndexInspection`).
            func readSchema<T: Persistable>(_: T.Type) { _ = T.schema }
            for type in types { readSchema(type) }
            let report = try read { try $0.checkIntegrity() }
            if let first = report.problems.first {
                throw LodeError.storage(
                    StorageFailure(
                        reason: .damaged, operation: "check \(url.path) after a system crash",
                        message:
                            "a process wrote without syncing when the system went down, and the store is "
                            + "damaged: \(first)"
                            + (report.problems.count > 1
                                ? " (and \(report.problems.count - 1) more problems)" : "")))
            }
            if !configuration.readOnly { environment.forgetSystemCrash() }
        }
        // When migrations ran, the last one's transaction already checked and registered `types`.
        let migrated = try opening.runMigrations(on: self, types: types)
        let known = try read { tx in
            (try tx.schemaHistory().version, try tx.lmdb.get(StoreLayout.schemaVersionKeyBytes, in: meta))
        }
        withState { $0.knownSchemaVersion = known }
        if !migrated {
            try opening.checkTypes(types, of: self)
            if !types.isEmpty { try register(types) }
        }
        try openCatalogDatabases()
    }

    /// Checks (or, for a new store, writes) `@meta` and `@catalog`.
    /// With `encryption`, checks the key against the store's record of it (or, for a new store,
    /// writes one) and installs the sealer before any sealed database is opened.
    private static func prepare(
        _ environment: Environment, path: String, readOnly: Bool, encryption: StoreEncryption?,
        decryptedCacheSize: Int, encryptionFormat: Int
    ) throws -> (Database, Database, Database?) {
        do {
            let names = try environment.read { txn in
                try txn.allEntries(in: environment.mainDatabase).map {
                    String(decoding: $0.key, as: UTF8.self)
                }
            }
            if names.isEmpty && !readOnly {
                var record: EncryptionRecord?
                if let encryption {
                    do {
                        let (key, made) = try encryption.newKey(format: encryptionFormat)
                        try install(
                            StoreSealer(
                                sealer: try RecordSealer(key: key, format: encryptionFormat),
                                decryptedCacheSize: decryptedCacheSize),
                            on: environment, path: path)
                        record = made
                    } catch let error as EncryptionError {
                        throw LodeError.encryption(path: path, error)
                    }
                }
                return try environment.write { txn in
                    let meta = try txn.database(named: StoreLayout.meta)
                    let catalog = try txn.database(named: StoreLayout.catalog)
                    let encoder = CBOREncoder()
                    if let record {
                        try txn.put(try encoder.encode(record), forKey: EncryptionRecord.metaKey, in: meta)
                    }
                    try txn.put(
                        try encoder.encode(
                            record == nil ? StoreLayout.baseFormatVersion : StoreLayout.encryptedFormatVersion
                        ),
                        forKey: Array(StoreLayout.formatVersionKey.utf8),
                        in: meta)
                    try txn.put(
                        try encoder.encode(Date()), forKey: Array(StoreLayout.createdKey.utf8), in: meta)
                    let changes = try txn.database(named: StoreLayout.changes)
                    return (meta, catalog, changes)
                }
            }
            guard names.contains(StoreLayout.meta), names.contains(StoreLayout.catalog) else {
                throw LodeError.notAStore(
                    path: path,
                    reason: names.isEmpty
                        ? "the environment is empty" : "an LMDB environment without @meta and @catalog")
            }
            let meta = try environment.database(named: StoreLayout.meta, create: false)
            if let sealer = try unlock(
                environment, meta: meta, encryption: encryption, decryptedCacheSize: decryptedCacheSize,
                path: path)
            {
                try install(sealer, on: environment, path: path)
            }
            let catalog = try environment.database(named: StoreLayout.catalog, create: false)
            let version = try environment.read { txn -> Int? in
                guard let bytes = try txn.get(Array(StoreLayout.formatVersionKey.utf8), in: meta) else {
                    return nil
                }
                return try? CBORDecoder().decode(Int.self, from: bytes)
            }
            guard let version else {
                throw LodeError.notAStore(path: path, reason: "@meta has no readable format version")
            }
            guard version <= StoreLayout.formatVersion else {
                throw LodeError.notAStore(
                    path: path,
                    reason: "format version \(version) is newer than this Lode (\(StoreLayout.formatVersion))"
                )
            }
            if version < StoreLayout.baseFormatVersion && !readOnly {
                // Format 2 only adds `bulk` change-log entries, which a format-1 reader cannot
                // decode: say so in @meta before writing any. (Format 3 comes with the first link.)
                try environment.write { txn in
                    try txn.put(
                        try CBOREncoder().encode(StoreLayout.baseFormatVersion),
                        forKey: Array(StoreLayout.formatVersionKey.utf8), in: meta)
                }
            }
            let changes: Database?
            if names.contains(StoreLayout.changes) {
                changes = try environment.database(named: StoreLayout.changes, create: false)
            } else {
                changes = readOnly ? nil : try environment.database(named: StoreLayout.changes)
            }
            if let changes, names.contains(HistoryLayout.formerDatabase), !readOnly {
                try HistoryLayout.moveFormerEntries(in: environment, to: changes, meta: meta)
            }
            return (meta, catalog, changes)
        } catch let error as LMDBError {
            throw LodeError(storage: error)
        }
    }

    /// Throws when the calling thread is inside a transaction of this store (live results advance
    /// only outside one).
    package func checkNotInsideTransaction(_ operation: String) throws {
        guard try environment().currentThreadHasTransaction else { return }
        throw LodeError.insideTransaction(operation: operation)
    }

    /// True when the store has a change log (every store does, except one made read-only by a Lode
    /// that predates it).
    public var hasChangeLog: Bool { changeLog != nil }

    /// The store format versions this Lode reads (it writes the last one).
    public static let supportedFormatVersions = 1...StoreLayout.formatVersion

    /// The versions live results of this store are on (pruning keeps the change log for them).
    package let pins = VersionPins()
    /// What change-log pruning has done in this process.
    let changeLogStatistics = ChangeLogStatistics()

    /// The store's follower (see ``StoreFollower``), made by `make` on first use. `make` runs under
    /// the store's lock: it must only allocate. A store has one follower, of one type.
    package func follower<F: StoreFollower>(made make: () -> F) -> F {
        withState { state in
            guard let existing = state.follower else {
                let made = make()
                state.follower = made
                return made
            }
            guard let follower = existing as? F else {
                preconditionFailure("a store has one follower: \(type(of: existing)), not \(F.self)")
            }
            return follower
        }
    }

    /// Tells the follower of a commit; called after a write ended, outside every lock.
    private func didCommit() {
        withState { $0.follower }?.storeDidCommit()
    }

    /// Closes the store. Later calls throw ``LodeError/storeClosed(path:)``; the files close when the
    /// last result or transaction using them is gone.
    ///
    /// A temporary store's directory is removed at once (results still open keep reading the files
    /// they mapped until they are released).
    public func close() {
        withState {
            $0.environment = nil
            $0.types.removeAll()
            $0.sharedSnapshot = nil
        }
        if isTemporary { TemporaryStores.shared.remove(path) }
    }

    deinit {
        if isTemporary { TemporaryStores.shared.remove(path) }
    }

    package func environment() throws -> Environment {
        guard let environment = withState({ $0.environment }) else { throw LodeError.storeClosed(path: path) }
        return environment
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction: one consistent snapshot of the store.
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, and whatever `body` throws.
    @discardableResult
    public func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        let environment = try environment()
        try openCatalogDatabases()
        return try mapStorageErrors {
            try environment.read { txn in try body(Transaction(store: self, lmdb: txn)) }
        }
    }

    /// Runs `body` in a write transaction: commits when it returns, rolls everything back when it
    /// throws. Writes are serialized across threads and processes. The closure runs on the calling
    /// thread, once — except in one case: when another process commits while this write grows the
    /// map, LMDB cannot replay the write on the new version, so nothing is written and the write is
    /// run again from the start (five runs at most; then it throws
    /// ``StorageFailure/Reason/writeConflictDuringGrowth``). Async code uses the `async` overload.
    ///
    /// - Throws: ``LodeError/readOnly(path:)`` in a read-only store, ``LodeError/storeClosed(path:)`` after
    ///   the store closed and ``LodeError/storage(_:)`` when LMDB fails (a full disk included),
    ///   ``LodeError/storage(_:)`` too for a write begun on a thread already inside a write of the store
    ///   (rather than a deadlock), and whatever `body` throws (then nothing is written);
    ///   ``StorageFailure/Reason/writeConflictDuringGrowth`` after five runs that other processes' commits
    ///   interrupted; ``LodeError/versionHeldTooLong(_:limit:)`` past ``StoreConfiguration/maxVersionLag``.
    @discardableResult
    @available(*, noasync, message: "a write transaction must not cross an await; use the async overload")
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        guard !configuration.readOnly else { throw LodeError.readOnly(path: path) }
        return try commitWrite(body)
    }

    /// Runs `body` in a write transaction that is rolled back when it returns (`rollingBack: true`) —
    /// a dry run: inside, `body` reads its own writes (queries, counts, `Results`); afterwards the
    /// store is as it was, no observer is told and no version is used. `body`'s result is returned.
    /// With `rollingBack: false` it is ``write(_:)-86d6p``.
    ///
    /// Why a parameter rather than a `tx.rollback()`: the decision is made before the write starts
    /// (a test, a `--dry-run` flag), so the closure cannot go on writing into a transaction already
    /// doomed, and an error thrown by `body` still reaches the caller as itself.
    ///
    /// - Throws: ``LodeError/readOnly(path:)`` in a read-only store, ``LodeError/storeClosed(path:)`` after
    ///   the store closed and ``LodeError/storage(_:)`` when LMDB fails (a full disk included),
    ///   ``LodeError/storage(_:)`` too for a write begun on a thread already inside a write of the store
    ///   (rather than a deadlock), and whatever `body` throws (then nothing is written).
    @discardableResult
    @available(*, noasync, message: "a write transaction must not cross an await; use the async overload")
    public func write<R>(rollingBack: Bool, _ body: (WriteTransaction) throws -> R) throws -> R {
        guard rollingBack else { return try write(body) }
        guard !configuration.readOnly else { throw LodeError.readOnly(path: path) }
        let environment = try environment()
        try openCatalogDatabases()
        var transaction: WriteTransaction?
        var result: R?
        do {
            try mapStorageErrors {
                try environment.write { txn in
                    let tx = WriteTransaction(store: self, lmdb: txn)
                    transaction = tx
                    result = try body(tx)
                    throw RollBackWrite()
                }
            }
        } catch is RollBackWrite {
            // The LMDB write aborted, as it does for any error.
        } catch {
            transaction?.finishPending(committed: false)
            throw error
        }
        transaction?.finishPending(committed: false)
        // Set: `RollBackWrite` is thrown only after `body` returned.
        return result!
    }

    /// Runs `body` in a write transaction rolled back when it returns (see the synchronous
    /// ``write(rollingBack:_:)``), on a thread of its own, off the caller's task.
    ///
    /// - Throws: as the synchronous `write(rollingBack:_:)`.
    @discardableResult
    public func write<R: Sendable>(
        rollingBack: Bool, _ body: @escaping @Sendable (WriteTransaction) throws -> R
    ) async throws -> R {
        guard rollingBack else { return try await write(body) }
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try self.write(rollingBack: true, body) }) }.start()
        }
    }

    /// Runs `body` in one write transaction and commits it — the change-log entry written, type
    /// states settled, listeners told — running it again when another process commits while it
    /// grows the map (see ``write(_:)-86d6p``). Shared by ``write(_:)-86d6p`` and group commit.
    func commitWrite<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        let environment = try environment()
        var attempt = 1
        while true {
            do {
                try openCatalogDatabases()
                var transaction: WriteTransaction?
                let result: R
                do {
                    result = try mapStorageErrors {
                        try environment.write { txn in
                            try self.refuseIfVersionHeldTooLong(committing: txn.id)
                            let tx = WriteTransaction(store: self, lmdb: txn)
                            transaction = tx
                            LockWatch.check(entering: "a write closure")
                            let result = try body(tx)
                            try tx.flushDeferredIndexWrites()
                            try tx.writeHistory()
                            try tx.writeChangeLog()
                            tx.committingVersion = tx.version
                            return result
                        }
                    }
                } catch {
                    transaction?.finishPending(committed: false)
                    throw error
                }
                didCommit(transaction, in: environment)
                return result
            } catch let error as LodeError
                where error.isGrowthConflict && attempt < Self.growthConflictAttempts
            {
                attempt += 1
            }
        }
    }

    /// How many times a write runs when other processes keep committing while it grows the map.
    static let growthConflictAttempts = 5

    /// After a write of this process ended: settle its type states, note the commit, wake listeners.
    private func didCommit(_ transaction: WriteTransaction?, in environment: Environment) {
        transaction?.finishPending(committed: true)
        if let version = transaction?.committingVersion, transaction?.sawNoHistory == true {
            historyOffThrough.store(version, ordering: .releasing)
        }
        if let version = transaction?.committingVersion { noteCommit(version: version, in: environment) }
        if let transaction { publish(transaction.registeredTypes) }
        didCommit()
        if let version = transaction?.committingVersion {
            warnAboutHeldVersions(latest: version, in: environment)
        }
    }

    // MARK: Held versions

    /// Told about each version that fell ``StoreConfiguration/versionLagWarning`` versions behind the
    /// last commit: held by this process (once per holder and version), or by a reader of another
    /// process (``HeldVersion/processID``; once per process and version — the reader table is read
    /// every tenth of `versionLagWarning` commits). Called on the thread that committed, after the
    /// commit and before `write` returns, with no lock held: keep it short. By default a one-line
    /// warning on standard error; nil silences it.
    public var versionLagHandler: (@Sendable (HeldVersion) -> Void)? {
        get { withState { $0.versionLagHandler } }
        set { withState { $0.versionLagHandler = newValue } }
    }

    /// The default ``versionLagHandler``: one line on standard error.
    @Sendable public static func logVersionLag(_ held: HeldVersion) {
        FileHandle.standardError.write(
            Data(
                "lode: warning: \(held); the data file cannot reuse the pages later commits replaced until it is released or refreshed\n"
                    .utf8))
    }

    /// Runs `body` in a read transaction, off the caller's task.
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, and whatever `body` throws.
    public func read<R: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.read(body) })
            }
        }
    }

    /// Registers types now (rather than on first use): writes their catalog entries and builds or
    /// drops indexes whose definitions changed, in one transaction.
    ///
    /// - Throws: ``LodeError/schemaMismatch(type:reason:)`` when a type's schema does not fit what the store
    ///   holds, ``LodeError/uniqueViolation(type:index:value:)`` when a new unique index does not hold for
    ///   the stored objects, ``LodeError/readOnly(path:)`` in a read-only store that lacks them, and
    ///   ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when LMDB
    ///   fails; nothing is registered then.
    public func register(_ types: [any Persistable.Type]) throws {
        guard !configuration.readOnly else { return }
        let environment = try environment()
        var registered: [String: AnyObject] = [:]
        try mapStorageErrors {
            try environment.write { txn in
                let tx = WriteTransaction(store: self, lmdb: txn)
                for type in types { try tx.registerType(type) }
                registered = tx.registeredTypes
            }
        }
        publish(registered)
    }

    func publish(_ registered: [String: AnyObject]) {
        guard !registered.isEmpty else { return }
        withState { state in
            for (name, typeState) in registered { state.types[name] = typeState }
        }
    }

    /// How many migrations the store had run when this process opened it.
    var knownSchemaVersion: (count: Int, bytes: [UInt8]?)? { withState { $0.knownSchemaVersion } }

    /// True when this process has registered the type stored as `name`.
    package func hasRegisteredType(named name: String) -> Bool { withState { $0.types[name] != nil } }

    /// The state of the type stored as `name`, when this process registered it.
    func registeredState(named name: String) -> AnyObject? { withState { $0.types[name] } }

    func publishedState<T: Persistable>(_ type: T.Type) -> TypeState<T>? {
        withState { state in
            let name = T.schema.typeName
            if state.swiftTypes[name] == nil { state.swiftTypes[name] = T.self }
            return state.types[name] as? TypeState<T>
        }
    }

    func swiftType(named name: String) -> (any Persistable.Type)? {
        withState { $0.swiftTypes[name] }
    }

    /// A snapshot of the last committed version, shared by results evaluated on the same version
    /// (and the same set of open databases).
    package func currentSnapshot() throws -> ReadSnapshot {
        let environment = try environment()
        try openCatalogDatabases()
        let last = environment.info.lastTransactionID
        let generation = environment.databaseGeneration
        if let shared = withState({ $0.sharedSnapshot }), shared.transactionID == last,
            shared.databaseGeneration == generation
        {
            return shared
        }
        let snapshot = try mapStorageErrors { try environment.snapshot() }
        withState { $0.sharedSnapshot = snapshot }
        return snapshot
    }

    /// After this store committed `version`: when the catalog was in sync with the version before it
    /// and the commit is the last one (no other process came between), every database the catalog
    /// names is open (this transaction opened the ones it added), so the next transaction need not
    /// read the catalog again. An empty write commits nothing and keeps the old version: then the
    /// last version differs and nothing is assumed.
    private func noteCommit(version: Int, in environment: Environment) {
        guard environment.info.lastTransactionID == version else { return }
        withState { state in
            if state.catalogSyncedVersion == version - 1 { state.catalogSyncedVersion = version }
        }
    }

    /// Opens the databases of every type in the catalog, once per committed version, before a
    /// transaction begins: a transaction can only use database handles that were open when it began,
    /// and types may have been added by another process. Skipped inside a transaction of this thread.
    func openCatalogDatabases() throws {
        let environment = try environment()
        guard !environment.currentThreadHasTransaction else { return }
        // The environment's last id only says whether to look; what counts as synced is the version
        // the catalog was read at (a reader begun now may not see the last id yet).
        guard withState({ $0.catalogSyncedVersion }) != environment.info.lastTransactionID else { return }
        try mapStorageErrors {
            let (version, entries, hasFormerHistory) = try environment.read { txn in
                (
                    txn.id,
                    try txn.allEntries(in: catalog).map {
                        try CatalogEntry.decoded(
                            from: $0.value, named: String(decoding: $0.key, as: UTF8.self))
                    },
                    try txn.contains(Array(HistoryLayout.formerDatabase.utf8), in: environment.mainDatabase)
                )
            }
            // A database another process dropped since the catalog was read is not there: not an error.
            func open(_ name: String, kind: Database.Kind) throws {
                do {
                    _ = try environment.database(named: name, kind: kind, create: false)
                } catch let error as LMDBError where error.code == .notFound {}
            }
            for entry in entries {
                for database in entry.databases { try open(database.name, kind: database.kind) }
            }
            // The history of a store of format 6 a reader opened before a writer moved it (its
            // reads refuse it: see `Transaction.forEachHistoryEntry`).
            if hasFormerHistory { try open(HistoryLayout.formerDatabase, kind: .plain) }
            withState { $0.catalogSyncedVersion = max($0.catalogSyncedVersion, version) }
        }
    }
}

/// Thrown out of a rolled-back write's LMDB transaction so that it aborts; never reaches the caller.
private struct RollBackWrite: Error {}

/// Rethrows LMDB errors as ``LodeError/storage(_:)``.
package func mapStorageErrors<R>(_ body: () throws -> R) throws -> R {
    do { return try body() } catch let error as LMDBError { throw LodeError(storage: error) }
}
