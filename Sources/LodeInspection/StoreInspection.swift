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

/// One slot of the reader table shared by every process using the store.
public struct StoreReader: Sendable, Equatable {
    /// The process that holds it.
    public var processID: Int32
    /// The version it holds, or nil when idle.
    public var version: Int?
    /// False when the process is gone (a stale slot, cleared at the next open).
    public var processIsAlive: Bool
}

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

extension Store {
    /// The store's files and reader table.
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func fileInfo() throws -> StoreFileInfo {
        let info = try environment().info
        return StoreFileInfo(
            mapSize: info.mapSize, usedBytes: info.usedBytes, pageSize: info.pageSize,
            lastCommittedVersion: info.lastTransactionID, readerSlotsUsed: info.readerSlotsUsed,
            maxReaders: info.maxReaders)
    }

    /// The reader table, with slots of processes that are gone flagged.
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func readers() throws -> [StoreReader] {
        try environment().readers().map {
            StoreReader(processID: $0.processID, version: $0.transactionID, processIsAlive: $0.processIsAlive)
        }
    }

    /// Runs `body` in a read transaction in which every database of the directory can be read — also
    /// ones outside the store's layout, which a plain `read(_:)-2vg9z` may not have open (a database can
    /// only be read by transactions begun after it was opened).
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails, and whatever `body` throws.
    public func inspect<R>(_ body: (Transaction) throws -> R) throws -> R {
        let environment = try environment()
        try mapStorageErrors {
            let names = try environment.read { txn in
                try txn.entries(in: environment.mainDatabase).map { String(decoding: $0.key, as: UTF8.self) }
            }
            for name in names { _ = try? environment.database(named: name, create: false) }
        }
        return try read(body)
    }

    /// Writes a consistent copy of the store (while it stays in use) into the empty or missing
    /// directory `path`; `compacting` leaves out free pages.
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails (the directory at `path` not empty or not writable included); nothing is left at `path`
    ///   then.
    public func copy(to path: String, compacting: Bool = false) throws {
        let environment = try environment()
        try mapStorageErrors { try environment.copy(to: path, compacting: compacting) }
    }
}

extension Transaction {
    /// The names of the store's databases (`@meta`, `@catalog`, `@changes`, each type and index).
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func databaseNames() throws -> [String] {
        try mapStorageErrors {
            try lmdb.entries(in: lmdb.environment.mainDatabase).map {
                String(decoding: $0.key, as: UTF8.self)
            }
        }
    }

    /// The B-tree figures of the database `name` (nil: LMDB's main database). A database outside the
    /// store's layout is readable in `Store/inspect(_:)`.
    ///
    /// - Throws: `LodeError/typeNotFound(_:)` when there is no such database.
    public func statistics(ofDatabase name: String?) throws -> StoreDatabaseStatistics {
        let database = try rawDatabase(name)
        let stat = try mapStorageErrors { try lmdb.statistics(of: database) }
        let kind: RawDatabaseKind
        switch database.kind {
        case .plain: kind = .plain
        case .duplicates: kind = .duplicates
        case .fixedDuplicates(let width): kind = .fixedDuplicates(width: width)
        }
        return StoreDatabaseStatistics(
            name: name, depth: stat.depth, branchPages: stat.branchPages, leafPages: stat.leafPages,
            overflowPages: stat.overflowPages, entries: stat.entries, pageSize: stat.pageSize,
            duplicates: kind)
    }

    /// Calls `body` with every key and value of the database `name` (nil: LMDB's main database), in
    /// key order, as stored — the bytes `mdb_dump` prints. A database outside the store's layout is
    /// readable in `Store/inspect(_:)`.
    ///
    /// - Throws: `LodeError/typeNotFound(_:)` when there is no such database.
    public func forEachRawEntry(
        ofDatabase name: String?, _ body: (_ key: [UInt8], _ value: [UInt8]) throws -> Void
    ) throws {
        let database = try rawDatabase(name)
        try mapStorageErrors {
            for entry in try lmdb.entries(in: database) { try body(entry.key, entry.value) }
        }
    }

    /// The `@meta` entries, by name, as stored (CBOR values, except `changes.floor`).
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func metaEntries() throws -> [String: [UInt8]] {
        try mapStorageErrors {
            var entries: [String: [UInt8]] = [:]
            for entry in try lmdb.entries(in: store.meta) {
                entries[String(decoding: entry.key, as: UTF8.self)] = entry.value
            }
            return entries
        }
    }

    private func rawDatabase(_ name: String?) throws -> Database {
        guard let name else { return lmdb.environment.mainDatabase }
        do {
            return try lmdb.environment.database(named: name, create: false)
        } catch let error as LMDBError where error.code == .notFound {
            throw LodeError.typeNotFound(name)
        } catch let error as LMDBError {
            throw LodeError.storage(StorageFailure(error))
        }
    }
}

/// Writes raw databases — what `mdb_dump` prints and `lode-dump load` reads back — into a directory
/// (created when missing), LMDB's own `mdb_load` for tools that restore a store byte for byte. A
/// database that already exists is emptied and refilled; others are left alone. The result is a
/// store only if the dump was one.
///
/// With a `batchSize`, entries are written as they come in, that many per transaction, so memory
/// stays bounded whatever the size of the dump (a loader that must be all or nothing builds into a
/// staging directory and renames it into place, as `lode-dump load` does). Without one, everything
/// is kept until `finish()` and written in one transaction: all or nothing in place, memory
/// growing with the dump.
public final class RawDumpLoader {
    private let environment: Environment
    private let batchSize: Int?
    private var current: (name: String, kind: Database.Kind)?
    /// Databases emptied already (each is emptied once, before its first entries).
    private var emptied: Set<String> = []
    private var pending: [(name: String, kind: Database.Kind, entries: [(key: [UInt8], value: [UInt8])])] = []
    /// Entries written so far, over every database.
    public private(set) var entriesWritten = 0

    /// Opens (or creates) the environment at `path` with files of mode `fileMode`.
    ///
    /// - Throws: `LodeError/storage(_:)` when the directory cannot be made or opened as an LMDB
    ///   environment.
    public init(into path: String, fileMode: UInt32 = 0o600, batchSize: Int? = 20_000) throws {
        environment = try mapStorageErrors {
            try Environment.open(
                at: path, options: EnvironmentOptions(createDirectory: true, fileMode: fileMode))
        }
        self.batchSize = batchSize.map { max(1, $0) }
    }

    /// Starts the database `name` (nil: LMDB's main database, whose entries LMDB maintains itself —
    /// they are skipped).
    ///
    /// - Throws: `LodeError/storage(_:)` when writing the entries gathered so far fails.
    public func beginDatabase(named name: String?, kind: RawDatabaseKind) throws {
        if batchSize != nil { try flush() }
        guard let name else {
            current = nil
            return
        }
        let lmdbKind: Database.Kind
        switch kind {
        case .plain: lmdbKind = .plain
        case .duplicates: lmdbKind = .duplicates
        case .fixedDuplicates(let width): lmdbKind = .fixedDuplicates(width: width)
        }
        current = (name, lmdbKind)
        pending.append((name, lmdbKind, []))
    }

    /// Adds one entry to the current database.
    ///
    /// - Throws: `LodeError/storage(_:)` when a batch is written and LMDB fails (a key longer than 511
    ///   bytes included).
    public func put(key: [UInt8], value: [UInt8]) throws {
        guard current != nil else { return }
        pending[pending.count - 1].entries.append((key, value))
        if let batchSize, pending[pending.count - 1].entries.count >= batchSize { try flush() }
    }

    /// Writes what is still pending.
    ///
    /// - Throws: `LodeError/storage(_:)` when writing the last batch fails.
    public func finish() throws { try flush() }

    /// Writes the pending databases and entries in one transaction; a database met for the first
    /// time is emptied first.
    private func flush() throws {
        guard !pending.isEmpty else { return }
        let work = pending
        let emptied = self.emptied
        try mapStorageErrors {
            try environment.write { txn in
                for part in work {
                    let database = try txn.database(named: part.name, kind: part.kind, create: true)
                    if !emptied.contains(part.name) { try txn.empty(database) }
                    for entry in part.entries { try txn.put(entry.value, forKey: entry.key, in: database) }
                }
            }
        }
        self.emptied.formUnion(work.map(\.name))
        entriesWritten += work.reduce(0) { $0 + $1.entries.count }
        pending.removeAll()
        if let current { pending.append((current.name, current.kind, [])) }
    }
}

/// What `Store/checkPages(maxProblems:)` found.
public struct PageReport: Sendable, Equatable {
    /// Each problem: the page, the database whose tree holds it, and what is wrong.
    public var problems: [String]
    /// True when more problems were found than kept.
    public var truncated: Bool
    /// The version checked.
    public var version: Int
    /// Pages read in the trees (branch, leaf and overflow pages).
    public var pagesInUse: Int
    /// Pages on the free list.
    public var freePages: Int
    /// Named databases and entries seen.
    public var databases: Int, entries: Int

    /// True when nothing was found.
    public var isClean: Bool { problems.isEmpty }

    init(_ check: PageCheck) {
        problems = check.problems.map(\.description)
        truncated = check.truncated
        version = check.version
        pagesInUse = check.pagesInUse
        freePages = check.freePages
        databases = check.databases
        entries = check.entries
    }
}

extension Store {
    /// Checks the structure of every page of the store's current version with reads of its own,
    /// never through LMDB's map (see `PageCheck` in the LMDB module): a page a tree names that is
    /// missing, of the wrong type or malformed, keys out of order, counts that do not match, pages used
    /// twice or lost. Run it (or open with `StoreConfiguration/checksPagesAtOpen`) before reading a
    /// file you do not trust: LMDB itself trusts every page and may abort or fault on a damaged one.
    /// Reads the whole file once.
    ///
    /// - Complexity: O(*P*) for the *P* pages of the file, each read once with reads of its own.
    /// - Throws: `LodeError/storage(_:)` when the file cannot be read.
    public func checkPages(maxProblems: Int = 100) throws -> PageReport {
        let environment = try environment()
        return PageReport(try mapStorageErrors { try environment.checkPages(maxProblems: maxProblems) })
    }

    /// Checks the pages of the store in the directory at `path` without opening it as a store (so
    /// without reading any of its databases through LMDB first), as `checkPages(maxProblems:)` does.
    ///
    /// - Throws: `LodeError/storage(_:)` when the directory holds no LMDB file or it cannot be read.
    public static func checkPages(atPath path: String, maxProblems: Int = 100) throws -> PageReport {
        try mapStorageErrors {
            let environment = try Environment.open(at: path, options: EnvironmentOptions(readOnly: true))
            return PageReport(try environment.checkPages(maxProblems: maxProblems))
        }
    }
}
