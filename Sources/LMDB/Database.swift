import CLMDB

/// A named database (or the main one) of an ``Environment``: a sorted map from keys to values, or to
/// sorted sets of values when it allows duplicates. Opened once and kept for the environment's life.
///
/// Keys sort by `memcmp`. Keys are 1...511 bytes; in a dup-sort database every value is at most 511
/// bytes as well, and in a dup-fixed one every value has exactly ``fixedValueWidth`` bytes. The
/// wrapper checks these limits before a call reaches LMDB.
public struct Database: Sendable, Hashable, CustomStringConvertible {
    /// The name, or `nil` for the main database.
    public let name: String?
    /// The options the database actually has (read back from LMDB).
    public let kind: Kind
    let handle: MDB_dbi

    /// How a database stores values.
    public enum Kind: Sendable, Hashable {
        /// One value per key.
        case plain
        /// Several values per key, kept sorted (`MDB_DUPSORT`).
        case duplicates
        /// Several values per key, all of one width in bytes (`MDB_DUPSORT | MDB_DUPFIXED`).
        case fixedDuplicates(width: Int)
    }

    /// True when a key may have several values.
    public var allowsDuplicates: Bool { kind != .plain }

    /// The width of every value in a dup-fixed database.
    public var fixedValueWidth: Int? {
        if case .fixedDuplicates(let width) = kind { return width }
        return nil
    }

    /// `main`, or the database's name.
    public var description: String { name.map { "database \"\($0)\"" } ?? "main database" }
}

/// Flags for a put.
public struct PutFlags: OptionSet, Sendable, Hashable {
    /// The raw `MDB_*` bits.
    public let rawValue: UInt32
    /// Makes flags from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Fail with ``LMDBError/Code/keyExists`` when the key is present (`MDB_NOOVERWRITE`).
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// In a dup-sort database, fail when the exact key/value pair is present (`MDB_NODUPDATA`).
    public static let noDuplicateData = PutFlags(rawValue: UInt32(MDB_NODUPDATA))
    /// Append at the end: the key must sort after every existing key (`MDB_APPEND`). Fast bulk loads.
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
    /// Append a value at the end of a key's duplicates (`MDB_APPENDDUP`).
    public static let appendDuplicate = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
}

/// The B-tree figures of one database (`MDB_stat`).
public struct DatabaseStatistics: Sendable, Equatable {
    /// Page size in bytes.
    public var pageSize: Int
    /// Depth of the B-tree.
    public var depth: Int
    /// Internal (branch) pages.
    public var branchPages: Int
    /// Leaf pages.
    public var leafPages: Int
    /// Overflow pages (values too large for a leaf).
    public var overflowPages: Int
    /// Entries; in a dup-sort database every value counts.
    public var entries: Int

    init(_ stat: MDB_stat) {
        pageSize = Int(stat.ms_psize)
        depth = Int(stat.ms_depth)
        branchPages = stat.ms_branch_pages
        leafPages = stat.ms_leaf_pages
        overflowPages = stat.ms_overflow_pages
        entries = stat.ms_entries
    }

    /// Bytes in all the pages of the tree.
    public var totalBytes: Int { (branchPages + leafPages + overflowPages) * pageSize }
}

/// Environment-wide figures (`MDB_envinfo`).
public struct EnvironmentInfo: Sendable, Equatable {
    /// This process's map size in bytes.
    public var mapSize: Int
    /// The last page number in use; `(lastPageNumber + 1) * pageSize` bytes are in use.
    public var lastPageNumber: Int
    /// The id of the last committed transaction, by any process.
    public var lastTransactionID: Int
    /// The size of the reader table.
    public var maxReaders: Int
    /// The highest reader slot ever used (not the number of active readers).
    public var readerSlotsUsed: Int
    /// Page size in bytes.
    public var pageSize: Int

    /// Bytes of the map in use.
    public var usedBytes: Int { (lastPageNumber + 1) * pageSize }
}

/// One slot of the reader table.
public struct ReaderSlot: Sendable, Equatable {
    /// The process that holds the slot.
    public var processID: Int32
    /// The thread id LMDB recorded.
    public var thread: UInt64
    /// The snapshot the reader has open, or `nil` for a slot held by a reset (idle) transaction.
    public var transactionID: Int?

    /// True when the process that holds the slot is still running.
    public var processIsAlive: Bool {
        kill(processID, 0) == 0 || errno == EPERM
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
