import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An error from the LMDB layer: what went wrong (`code`), during which operation, and a message a
/// user can act on.
///
/// LMDB's own return codes and system `errno` values each have a ``Code`` case and carry
/// `mdb_strerror`'s text; errors the wrapper raises before a call reaches LMDB (a key of the wrong
/// size, a nested write, a write in a read-only environment) have cases of their own.
public struct LMDBError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The kind of failure.
    public enum Code: Equatable, Hashable, Sendable {
        /// `MDB_KEYEXIST`: the key (or key/value pair) is already present.
        case keyExists
        /// `MDB_NOTFOUND`: no matching key or value.
        case notFound
        /// `MDB_PAGE_NOTFOUND`: a requested page is missing; the file is damaged.
        case pageNotFound
        /// `MDB_CORRUPTED`: a page has the wrong type; the file is damaged.
        case corrupted
        /// `MDB_PANIC`: an earlier fatal error; the environment must be reopened.
        case panic
        /// `MDB_VERSION_MISMATCH`: the environment was made by an incompatible LMDB version.
        case versionMismatch
        /// `MDB_INVALID`: the file is not an LMDB data file.
        case invalid
        /// `MDB_MAP_FULL`: the map is full and could not be grown.
        case mapFull
        /// `MDB_DBS_FULL`: more named databases than `maxDatabases` allows.
        case databasesFull
        /// `MDB_READERS_FULL`: the reader table is full, even after clearing stale readers.
        case readersFull
        /// `MDB_TLS_FULL`: too many thread-local keys.
        case tlsFull
        /// `MDB_TXN_FULL`: the transaction has too many dirty pages; split it into smaller ones.
        case transactionFull
        /// `MDB_CURSOR_FULL`: cursor stack too deep (internal).
        case cursorFull
        /// `MDB_PAGE_FULL`: page has no more space (internal).
        case pageFull
        /// `MDB_MAP_RESIZED`: another process grew the map beyond this one's and it could not be adopted.
        case mapResized
        /// `MDB_INCOMPATIBLE`: the operation does not fit the database's flags.
        case incompatible
        /// `MDB_BAD_RSLOT`: invalid reuse of a reader slot.
        case badReaderSlot
        /// `MDB_BAD_TXN`: the transaction had an earlier error and can only be aborted.
        case badTransaction
        /// `MDB_BAD_VALSIZE`: a key or value has an unsupported size.
        case badValueSize
        /// `MDB_BAD_DBI`: the database handle was closed or changed.
        case badDatabase
        /// Any other LMDB code.
        case otherLMDB(Int32)
        /// A system error (`errno`), e.g. `ENOENT`, `EACCES`, `ENOSPC`.
        case system(Int32)

        /// A key shorter than 1 byte or longer than the environment's maximum (511).
        case invalidKeySize
        /// A value that does not fit the database: a dup-sort value over 511 bytes or a dup-fixed value
        /// of the wrong width.
        case invalidValueSize
        /// A write transaction was started on a thread that already has one open on this environment.
        case nestedWrite
        /// A write transaction was started on a thread that has a read transaction open on this
        /// environment (it could deadlock with map growth).
        case writeInsideRead
        /// A transaction or cursor was used after its closure returned, from another thread, or while a
        /// child transaction was active.
        case transactionNotActive
        /// A write was attempted on an environment opened read-only.
        case readOnly
        /// The path does not exist.
        case pathNotFound
        /// The path exists but is not a directory.
        case notADirectory
        /// The directory holds no LMDB environment (read-only open of an empty directory).
        case notAnEnvironment
        /// The environment is already open in this process with options that cannot be reconciled.
        case incompatibleOptions
        /// Another process committed while this one was growing the map in the middle of a write, so the
        /// write's recorded operations could not be replayed on the snapshot they were made against.
        /// Nothing was written; retrying the whole write is safe.
        case writeConflictDuringGrowth
        /// Nested transactions are not available with a write-map durability mode.
        case nestedTransactionsUnavailable
        /// An argument the wrapper refuses (bad size, bad name, bad combination of options).
        case invalidArgument
        /// The file system holding the environment has no room left: a commit could not write its
        /// pages (LMDB reports it as `EIO`). Nothing of the commit is visible.
        case diskFull
        /// A sealed entry of an encrypted environment does not open with its key: the bytes were
        /// damaged, moved to another key or database, or written with another key.
        case sealBroken
        /// An ordered operation (a range, a seek to the nearest key) on a database whose keys are
        /// stored hashed, where only exact keys can be found.
        case unordered
    }

    /// What kind of failure this is.
    public let code: Code
    /// The operation that failed, e.g. `"mdb_put"` or `"open /var/db/store"`.
    public let operation: String
    /// A human-readable explanation (for LMDB and system codes, `mdb_strerror`'s text).
    public let message: String
    /// For ``Code/sealBroken``: the database and the key of the entry that did not open (the key as
    /// the caller gave it, or the stored key when a walk met the entry).
    package var sealedEntry: SealedEntry?

    /// Where a sealed entry that did not open lies.
    package struct SealedEntry: Equatable, Sendable {
        /// The database's name.
        package let database: String
        /// The entry's key.
        package let key: [UInt8]
    }

    /// Makes an error with an explicit message.
    public init(_ code: Code, operation: String, message: String) {
        self.code = code
        self.operation = operation
        self.message = message
    }

    /// Makes an error from an LMDB return code or `errno`, with `mdb_strerror`'s text.
    public init(returnCode: Int32, operation: String) {
        self.code = Code(returnCode: returnCode)
        self.operation = operation
        self.message = String(cString: mdb_strerror(returnCode))
    }

    /// `operation: message`, one line.
    public var description: String { "\(operation): \(message)" }
}

extension LMDBError.Code {
    /// Maps an LMDB return code (negative) or `errno` (positive) to a case.
    public init(returnCode rc: Int32) {
        switch rc {
        case MDB_KEYEXIST: self = .keyExists
        case MDB_NOTFOUND: self = .notFound
        case MDB_PAGE_NOTFOUND: self = .pageNotFound
        case MDB_CORRUPTED: self = .corrupted
        case MDB_PANIC: self = .panic
        case MDB_VERSION_MISMATCH: self = .versionMismatch
        case MDB_INVALID: self = .invalid
        case MDB_MAP_FULL: self = .mapFull
        case MDB_DBS_FULL: self = .databasesFull
        case MDB_READERS_FULL: self = .readersFull
        case MDB_TLS_FULL: self = .tlsFull
        case MDB_TXN_FULL: self = .transactionFull
        case MDB_CURSOR_FULL: self = .cursorFull
        case MDB_PAGE_FULL: self = .pageFull
        case MDB_MAP_RESIZED: self = .mapResized
        case MDB_INCOMPATIBLE: self = .incompatible
        case MDB_BAD_RSLOT: self = .badReaderSlot
        case MDB_BAD_TXN: self = .badTransaction
        case MDB_BAD_VALSIZE: self = .badValueSize
        case MDB_BAD_DBI: self = .badDatabase
        case let code where code < 0: self = .otherLMDB(code)
        default: self = .system(rc)
        }
    }
}

/// Throws an ``LMDBError`` for a non-zero LMDB return code.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
    if rc != 0 { throw LMDBError(returnCode: rc, operation: operation()) }
}
