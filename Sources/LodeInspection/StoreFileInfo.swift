import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

/// The store's files and readers, as tools show them (`lode-dump`): no LMDB handle needed.
public struct StoreFileInfo: Sendable, Equatable {
    /// The reserved map size in bytes (it grows by itself).
    public var mapSize: Int
    /// The bytes of the map in use.
    public var usedBytes: Int
    /// The page size.
    public var pageSize: Int
    /// The last version any process committed, as the environment reports it. It can run ahead of
    /// what a read transaction begun right after sees: never treat it as a version read.
    public var lastCommittedVersion: Int
    /// Reader slots in use, by every process.
    public var readerSlotsUsed: Int
    /// The size of the reader table.
    public var maxReaders: Int
}
