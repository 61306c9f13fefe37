import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

/// B-tree figures of one database of the store.
public struct StoreDatabaseStatistics: Sendable, Equatable {
    /// The database's name (nil: LMDB's main database, which lists the others).
    public var name: String?
    /// The tree's depth.
    public var depth: Int
    /// Branch pages.
    public var branchPages: Int
    /// Leaf pages.
    public var leafPages: Int
    /// Overflow pages (large values).
    public var overflowPages: Int
    /// Entries (with duplicates, each value).
    public var entries: Int
    /// The page size.
    public var pageSize: Int
    /// Whether keys hold several sorted values (index databases), and their fixed width if any.
    public var duplicates: RawDatabaseKind

    /// The bytes of every page.
    public var bytes: Int { (branchPages + leafPages + overflowPages) * pageSize }
}
