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
    /// In a database whose keys are hashed (an encrypted environment) there is no order to append
    /// in: the put refuses an existing key instead, as ``noOverwrite``.
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
    /// Append a value at the end of a key's duplicates (`MDB_APPENDDUP`). In a sealed dup-sort
    /// database the put refuses an existing pair instead, as ``noDuplicateData``.
    public static let appendDuplicate = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
}
