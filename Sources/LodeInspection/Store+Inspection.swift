import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

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

    /// How many pages of the file are free: freed by earlier commits, to be reused by later ones (once
    /// no reader still sees them) before the file grows.
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func freePageCount() throws -> Int {
        try read { tx in try mapStorageErrors { try tx.lmdb.freePageCount() } }
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
                try txn.allEntries(in: environment.mainDatabase).map {
                    String(decoding: $0.key, as: UTF8.self)
                }
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
            try lmdb.allEntries(in: lmdb.environment.mainDatabase).map {
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
            try lmdb.forEachEntry(in: database) {
                try body($0.key, $0.value)
                return true
            }
        }
    }

    /// The `@meta` entries, by name, as stored (CBOR values, except `changes.floor`).
    ///
    /// - Throws: `LodeError/storeClosed(path:)` after the store closed and `LodeError/storage(_:)` when
    ///   LMDB fails.
    public func metaEntries() throws -> [String: [UInt8]] {
        try mapStorageErrors {
            var entries: [String: [UInt8]] = [:]
            for entry in try lmdb.allEntries(in: store.meta) {
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
            throw LodeError(storage: error)
        }
    }
}

extension Store {
    /// Checks the structure of every page of the store's current version with reads of its own,
    /// never through LMDB's map (see `PageCheck` in the LMDB module): a page a tree names that is
    /// missing, of the wrong type or malformed, keys out of order, counts that do not match, pages used
    /// twice or lost. An open checks a file that is not known to be the one Lode left by itself
    /// (`StoreConfiguration/pageCheck`); run this for one you suspect all the same: LMDB itself trusts
    /// every page and may abort or fault on a damaged one. Reads the whole file once; a file found
    /// sound is trusted from then on (and, in a writable store, its record of a clean close written).
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
