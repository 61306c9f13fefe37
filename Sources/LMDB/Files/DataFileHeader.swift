import CLMDB
import Foundation

/// What the meta pages at the start of an existing `data.mdb` say, read with two `pread`s and no map:
/// the page size and the last page of the newest version.
///
/// Opening a data file shorter than the pages its newest meta page names would make the first read
/// of a missing page a SIGBUS (the map extends past the file's end), and an open in a write-map mode
/// would first extend the file with zeros, which LMDB then reads as pages. The check runs before
/// LMDB opens the file, so neither can happen.
struct DataFileHeader {
    /// LMDB's meta page magic number.
    static let magic: UInt32 = 0xBEEF_C0DE
    /// Where a meta page's `MDB_meta` starts (after the page header).
    static let metaOffset = 16

    var pageSize: Int
    var lastPage: Int
    var version: Int

    /// The header of the file open as `descriptor`, or nil when neither meta page is valid (LMDB
    /// names that).
    static func read(descriptor: Int32) -> DataFileHeader? {
        // The first meta page says the page size (kept in the free database's `md_pad`), which says
        // where the second one starts.
        guard let first = meta(descriptor, at: 0) else { return nil }
        var best = first
        if let second = meta(descriptor, at: first.pageSize), second.pageSize == first.pageSize,
            second.version > first.version
        {
            best = second
        }
        return best
    }

    /// The meta page at `offset`, when it holds a valid one.
    private static func meta(_ descriptor: Int32, at offset: Int) -> DataFileHeader? {
        var bytes = [UInt8](repeating: 0, count: metaOffset + 136)
        let count = bytes.count
        let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, count, off_t(offset)) }
        guard read == count else { return nil }
        func word32(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[metaOffset + at + $1]) << UInt32(8 * $1) }
        }
        func word64(_ at: Int) -> UInt64 { UInt64(word32(at)) | UInt64(word32(at + 4)) << 32 }
        guard word32(0) == magic else { return nil }
        let pageSize = Int(word32(24))  // mm_dbs[FREE_DBI].md_pad
        guard pageSize >= 512, pageSize <= 1 << 16, pageSize & (pageSize - 1) == 0 else { return nil }
        let lastPage = word64(120)
        let version = word64(128)
        guard lastPage < UInt64(Int.max / pageSize), version < UInt64(Int.max) else { return nil }
        return DataFileHeader(pageSize: pageSize, lastPage: Int(lastPage), version: Int(version))
    }

    /// Refuses a data file shorter than the pages its newest version uses.
    ///
    /// - Throws: ``LMDBError/Code/corrupted`` naming the file, its size and the size the version needs.
    /// Returns the header (nil when neither meta page is valid: LMDB refuses that by name).
    @discardableResult
    static func refuseTruncated(_ path: String, descriptor: Int32, operation: String) throws
        -> DataFileHeader?
    {
        guard let header = read(descriptor: descriptor) else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw LMDBError(returnCode: errno, operation: "stat \(path)")
        }
        let needed = (header.lastPage + 1) * header.pageSize
        if Int(status.st_size) < needed {
            throw LMDBError(
                .corrupted, operation: operation,
                message:
                    "\(path) is truncated: it holds \(status.st_size) bytes, but its last commit uses pages up to byte \(needed)"
            )
        }
        return header
    }
}
