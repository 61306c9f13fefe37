import CLMDB

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
