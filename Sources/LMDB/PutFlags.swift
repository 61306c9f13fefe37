import CLMDB

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
