import CLMDB

/// How an ``Environment`` is opened.
public struct EnvironmentOptions: Sendable, Equatable {
    /// The map size to start with, in bytes (rounded up to a whole page). An existing environment
    /// keeps its stored size when that is larger. The map grows by itself when full, so this is only
    /// a starting point; a large value costs nothing but address space.
    public var mapSize: Int
    /// The most named databases the environment can hold open.
    public var maxDatabases: Int
    /// The size of the reader table (one slot per open or pooled read transaction, in all processes).
    public var maxReaders: Int
    /// What a commit guarantees once it returns.
    public var durability: Durability
    /// Opens the environment read-only: every write fails with ``LMDBError/Code/readOnly``.
    public var readOnly: Bool
    /// Turns off read-ahead (`MDB_NORDAHEAD`); helps random reads on stores larger than memory.
    public var noReadAhead: Bool
    /// Creates the directory (and missing parents) when it does not exist.
    public var createDirectory: Bool
    /// How many reset read transactions the environment keeps for reuse (each holds a reader slot).
    public var readTransactionPoolSize: Int
    /// File mode for newly created data and lock files: owner-only (`0o600`) by default, since a store
    /// holds an app's data. A directory the layer creates gets the same bits plus search (`x`) where
    /// they can read (``directoryMode``).
    public var fileMode: UInt32

    /// The mode of directories the layer creates: ``fileMode`` with search permission wherever it
    /// grants reading (`0o600` → `0o700`, `0o644` → `0o755`).
    public var directoryMode: UInt32 { fileMode | ((fileMode & 0o444) >> 2) }
    /// For the benchmark's baseline only: false opens and closes as before close records existed —
    /// no record read at open (the file counts as closed cleanly), none written at close.
    package var keepsCloseRecord: Bool

    /// Makes options; every parameter has a sensible default.
    public init(
        mapSize: Int = 64 << 20,
        maxDatabases: Int = 128,
        maxReaders: Int = 126,
        durability: Durability = .full,
        readOnly: Bool = false,
        noReadAhead: Bool = false,
        createDirectory: Bool = false,
        readTransactionPoolSize: Int = 8,
        fileMode: UInt32 = 0o600
    ) {
        self.init(
            mapSize: mapSize, maxDatabases: maxDatabases, maxReaders: maxReaders, durability: durability,
            readOnly: readOnly, noReadAhead: noReadAhead, createDirectory: createDirectory,
            readTransactionPoolSize: readTransactionPoolSize, fileMode: fileMode, keepsCloseRecord: true)
    }

    /// Makes options, with or without the record of clean closes (see ``keepsCloseRecord``).
    package init(
        mapSize: Int = 64 << 20, maxDatabases: Int = 128, maxReaders: Int = 126,
        durability: Durability = .full,
        readOnly: Bool = false, noReadAhead: Bool = false, createDirectory: Bool = false,
        readTransactionPoolSize: Int = 8, fileMode: UInt32 = 0o600, keepsCloseRecord: Bool
    ) {
        self.keepsCloseRecord = keepsCloseRecord
        self.mapSize = mapSize
        self.maxDatabases = maxDatabases
        self.maxReaders = maxReaders
        self.durability = durability
        self.readOnly = readOnly
        self.noReadAhead = noReadAhead
        self.createDirectory = createDirectory
        self.readTransactionPoolSize = readTransactionPoolSize
        self.fileMode = fileMode
    }
}

/// What a committed write survives. Measured commit rates on this project's machines are in
/// `reference/lmdb-notes.md`; from safest to fastest:
public enum Durability: Sendable, Equatable, CaseIterable {
    /// Data and meta page are fsynced at every commit: a commit survives power loss.
    case full
    /// `MDB_NOMETASYNC`: the meta page is flushed at the next commit or ``Environment/sync(force:)``.
    /// A system crash may undo the last commit; the store stays consistent.
    case noMetaSync
    /// `MDB_NOSYNC`: nothing is fsynced at commit (the environment syncs when it closes). A system
    /// crash may lose the last commits or damage the file, which the disk writes in any order: see
    /// ``Environment/sawSystemCrashWhileUnsynced``. Call ``Environment/sync(force:)``.
    case noSync
    /// `MDB_WRITEMAP`: writes go through a writable map; full durability, fewer copies. Nested
    /// transactions are unavailable, and every process must use a write-map mode.
    case writeMap
    /// `MDB_WRITEMAP | MDB_MAPASYNC`: asynchronous flushes; a system crash may lose or corrupt recent
    /// commits.
    case writeMapAsync
    /// `MDB_WRITEMAP | MDB_NOSYNC`: no flushes until ``Environment/sync(force:)``.
    case writeMapNoSync

    var flags: UInt32 {
        switch self {
        case .full: return 0
        case .noMetaSync: return UInt32(MDB_NOMETASYNC)
        case .noSync: return UInt32(MDB_NOSYNC)
        case .writeMap: return UInt32(MDB_WRITEMAP)
        case .writeMapAsync: return UInt32(MDB_WRITEMAP) | UInt32(MDB_MAPASYNC)
        case .writeMapNoSync: return UInt32(MDB_WRITEMAP) | UInt32(MDB_NOSYNC)
        }
    }

    /// True for the modes that do not sync every commit, after which a system crash can leave the
    /// data file damaged.
    var syncsLazily: Bool { self == .noSync || self == .writeMapAsync || self == .writeMapNoSync }

    var usesWriteMap: Bool { self == .writeMap || self == .writeMapAsync || self == .writeMapNoSync }

    /// False for the write-map modes, where LMDB has no child transactions
    /// (``WriteTransaction/nested(_:)`` throws ``LMDBError/Code/nestedTransactionsUnavailable``).
    public var allowsNestedTransactions: Bool { !usesWriteMap }
}
