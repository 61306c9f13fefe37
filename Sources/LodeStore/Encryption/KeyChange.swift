import Foundation
import LMDB
import LodeCodec

/// How far a change of a store's encryption has come: records copied of all the store holds.
public struct KeyChangeProgress: Sendable, Equatable {
    /// Records written to the new file so far.
    public var copied: Int
    /// Records in the store.
    public var total: Int
}

/// The marker, work directory and lock of a key change.
enum KeyChange {
    /// The marker a key change keeps (locked) in the store's directory while it runs.
    static let markerName = "key-change.lode"
    /// The directory the new data file is written in.
    static let workName = "key-change.tmp"
    /// The store directories whose key this process is changing: its own opens skip the marker.
    private static let running = Locked<Set<String>>([])

    /// `path` resolved (symbolic links, `..`), as the registry of environments names directories.
    static func resolved(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else {
            throw LodeError(storage: LMDBError(returnCode: errno, operation: "open \(path)"))
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// A key change under way: its marker's descriptor, locked.
    final class Running {
        let path: String
        let descriptor: Int32

        init(path: String, descriptor: Int32) {
            self.path = path
            self.descriptor = descriptor
        }

        /// Removes the marker and lets go of it.
        func end() {
            unlink(path + "/" + KeyChange.markerName)
            flock(descriptor, LOCK_UN)
            close(descriptor)
            KeyChange.running.withLock { _ = $0.remove(path) }
        }
    }

    /// Creates (or, after a change that was cut short, takes over) the marker, locked.
    static func begin(_ path: String) throws -> Running {
        let marker = path + "/" + markerName
        let descriptor = open(marker, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw LodeError(storage: LMDBError(returnCode: errno, operation: "create \(marker)"))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw LodeError.encryption(path: path, .keyChangeInProgress)
        }
        // The marker's name is made durable before anything else changes.
        try mapStorageErrors { try DurableNames.syncDirectory(path, operation: "create \(marker)") }
        running.withLock { _ = $0.insert(path) }
        return Running(path: path, descriptor: descriptor)
    }

    /// Throws unless nothing has the store open, in this process or another.
    static func requireExclusive(_ path: String) throws {
        let openers = try mapStorageErrors { try Environment.openers(at: path) }
        if openers.thisProcess { throw LodeError.encryption(path: path, .storeOpen("this process")) }
        if let pid = openers.otherProcess {
            throw LodeError.encryption(path: path, .storeOpen("process \(pid)"))
        }
    }

    /// At open (after the environment is open): refuses a store whose key another process is
    /// changing, and tidies after a change that was cut short (whichever data file is in place is
    /// whole: the new one replaced the old in one rename, or did not).
    static func checkAtOpen(_ path: String) throws {
        let marker = path + "/" + markerName
        guard access(marker, F_OK) == 0 else { return }
        let resolved = (try? resolved(path)) ?? path
        if running.withLock({ $0.contains(resolved) }) { return }
        let descriptor = open(marker, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return }  // gone meanwhile: the change ended
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            throw LodeError.encryption(path: path, .keyChangeInProgress)
        }
        defer { flock(descriptor, LOCK_UN) }
        try removeTree(path + "/" + workName)
        unlink(marker)
    }

    /// Removes the directory `path` and what it holds, if it exists.
    static func removeTree(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }

    /// Writes the new environment in transactions of a bounded size.
    struct Writer {
        let target: Environment
        let total: Int
        private(set) var copied = 0
        private var pending: [(database: Database, key: [UInt8], value: [UInt8])] = []
        private var pendingBytes = 0
        private static let batchBytes = 16 << 20

        init(target: Environment, total: Int) {
            self.target = target
            self.total = total
        }

        /// The database `name` of the new environment, made with `kind`.
        func database(_ name: String, kind: Database.Kind) throws -> Database {
            try target.database(named: name, kind: kind)
        }

        mutating func put(_ value: [UInt8], forKey key: [UInt8], in database: Database) throws {
            pending.append((database, key, value))
            pendingBytes += key.count + value.count + 32
            if pendingBytes >= Self.batchBytes { try flush() }
        }

        /// Commits what is pending.
        mutating func flush() throws {
            guard !pending.isEmpty else { return }
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
            try target.write { txn in
                for entry in batch { try txn.put(entry.value, forKey: entry.key, in: entry.database) }
            }
        }

        /// Copies every entry of `database` (as the caller reads it: opened), but those `skips`.
        mutating func copy(
            _ database: Database, named name: String, in lmdb: LMDB.Transaction, countsRecords: Bool,
            skipping skips: ([UInt8]) -> Bool, progress: (KeyChangeProgress) -> Void
        ) throws {
            if !database.isOrdered && database.allowsDuplicates {
                // Its keys are hashed and a walk cannot give them back; only derived databases are.
                throw LodeError.storage(
                    StorageFailure(
                        reason: .other, operation: "change the key of \(name)",
                        message: "\(database) keeps hashed keys and is not one the catalog can build again"))
            }
            let copy = try self.database(name, kind: database.kind)
            try lmdb.forEachEntry(in: database) { entry in
                if skips(entry.key) { return true }
                try put(entry.value, forKey: entry.key, in: copy)
                if countsRecords {
                    copied += 1
                    if copied % 10_000 == 0 || copied == total {
                        progress(KeyChangeProgress(copied: copied, total: total))
                    }
                }
                return true
            }
        }

        /// Writes the format and the record of the new key (if any) into `@meta`.
        mutating func finishMeta(record: EncryptionRecord?, sourceFormat: Int) throws {
            let meta = try database(StoreLayout.meta, kind: .plain)
            let encoder = CBOREncoder()
            if let record { try put(try encoder.encode(record), forKey: EncryptionRecord.metaKey, in: meta) }
            var format = max(
                StoreLayout.baseFormatVersion, min(sourceFormat, StoreLayout.textIndexesFormatVersion))
            if record != nil { format = StoreLayout.encryptedFormatVersion }
            // History is kept whatever the key: a store that keeps it stays at its format.
            if sourceFormat >= StoreLayout.historyFormatVersion { format = StoreLayout.historyFormatVersion }
            try put(try encoder.encode(format), forKey: Array(StoreLayout.formatVersionKey.utf8), in: meta)
        }

        /// Builds the indexes and inverse link indexes of `type` from its records.
        mutating func rebuild(_ type: StoredType, from records: Database, in lmdb: LMDB.Transaction) throws {
            guard !type.indexes.isEmpty || !type.links.isEmpty else { return }
            let indexes = try type.indexes.map { index in
                try database(
                    CatalogEntry.databaseName(type: type.name, index: index.name),
                    kind: index.isUnique ? .plain : .duplicates)
            }
            let links = try type.links.map { try database($0.databaseName(of: type.name), kind: .duplicates) }
            try lmdb.forEachEntry(in: records) { entry in
                do {
                    let record = try UntypedRecord(bytes: entry.value, type: type)
                    for (index, database) in zip(type.indexes, indexes) {
                        try put(entry.key, forKey: try record.indexKey(index), in: database)
                    }
                    for (link, database) in zip(type.links, links) {
                        for target in try record.linkTargets(link) {
                            try put(entry.key, forKey: target, in: database)
                        }
                    }
                } catch let problem as UntypedRecord.Problem {
                    throw LodeError.recordDoesNotDecode(
                        type: type.name, key: KeyDescription.describe(entry.key), field: problem.field,
                        reason: problem.reason)
                }
                return true
            }
        }
    }
}
