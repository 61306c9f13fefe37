import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

/// One slot of the reader table shared by every process using the store.
public struct StoreReader: Sendable, Equatable {
    /// The process that holds it.
    public var processID: Int32
    /// The version it holds, or nil when idle.
    public var version: Int?
    /// False when the process is gone (a stale slot, cleared at the next open).
    public var processIsAlive: Bool
}
