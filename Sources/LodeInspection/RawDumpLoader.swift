import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

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
