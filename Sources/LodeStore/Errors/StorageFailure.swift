import LMDB

/// A failure of the storage under the store (LMDB, the file system), in Lode's terms: what kind of
/// failure, which operation, and the system's own message.
public struct StorageFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, as far as an app can act on it.
    public enum Reason: Equatable, Hashable, Sendable {
        /// The file is not a store's data file (or not one this LMDB can read).
        case notAStoreFile
        /// The file is damaged (a page is missing or has the wrong type).
        case damaged
        /// The path does not exist.
        case pathNotFound
        /// The path is not a directory.
        case notADirectory
        /// The store is full and could not grow (the disk, or the address space).
        case full
        /// Every reader slot is taken: too many processes or open results hold versions.
        case readersFull
        /// The disk holding the store is full: the commit was not written and the store stays at its
        /// last commit.
        case diskFull
        /// A transaction changed too much at once; split it.
        case transactionTooLarge
        /// Another process committed while this one grew the map in the middle of a write. Nothing
        /// was written; ``Store/write(_:)-86d6p`` retries such a write by itself.
        case writeConflictDuringGrowth
        /// The store is already open in this process in a way that cannot be shared (read-only and
        /// writable at once).
        case incompatibleOpen
        /// An entry of an encrypted store does not open with the store's key: its bytes were damaged
        /// or tampered with (moved to another key, or written with another key).
        case sealBroken
        /// A system error (`errno`: permissions, disk space…).
        case system(Int32)
        /// Any other failure of the storage layer (its text says which).
        case other
    }

    /// What went wrong.
    public let reason: Reason
    /// The operation that failed (`mdb_put`, `open /var/db/store`…).
    public let operation: String
    /// The storage layer's own explanation.
    public let message: String

    /// `operation: message`.
    public var description: String { "\(operation): \(message)" }

    init(reason: Reason, operation: String, message: String) {
        self.reason = reason
        self.operation = operation
        self.message = message
    }

    package init(_ error: LMDBError) {
        operation = error.operation
        message = error.message
        switch error.code {
        case .invalid, .versionMismatch, .notAnEnvironment: reason = .notAStoreFile
        case .corrupted, .pageNotFound, .panic: reason = .damaged
        case .pathNotFound: reason = .pathNotFound
        case .notADirectory: reason = .notADirectory
        case .mapFull: reason = .full
        case .readersFull: reason = .readersFull
        case .diskFull: reason = .diskFull
        case .transactionFull: reason = .transactionTooLarge
        case .writeConflictDuringGrowth: reason = .writeConflictDuringGrowth
        case .incompatibleOptions: reason = .incompatibleOpen
        case .sealBroken: reason = .sealBroken
        case .system(let errno): reason = .system(errno)
        default: reason = .other
        }
    }
}
