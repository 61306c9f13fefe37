import CLMDB

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
