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

extension Store {
    /// Changes how the store at `url` is encrypted, in place: encrypts a plain store (`from: nil`),
    /// decrypts an encrypted one (`to: nil`), or changes its key or passphrase.
    ///
    /// The store is written again, whole, to a new data file beside the old one (records sealed
    /// with the new key, indexes and links rebuilt from them); the new file then replaces the old
    /// one in one rename. A kill or a power cut at any point leaves a store that opens with the old
    /// key or with the new one, and nothing lost; a store opened after such an interruption tidies
    /// what it left. Nothing may have the store open meanwhile, in this process or another: opening
    /// it during the change is refused with ``EncryptionError/keyChangeInProgress``.
    ///
    /// Full-text indexes are not available in an encrypted store: a store with one cannot be
    /// encrypted.
    ///
    /// - Parameters:
    ///   - fileMode: the mode of the new data file (as ``StoreConfiguration/fileMode``).
    ///   - progress: told after each batch of records copied.
    /// - Throws: ``LodeError/encryption(path:_:)`` when `from` does not open the store, when
    ///   something has it open (``EncryptionError/storeOpen(_:)``) or another change runs
    ///   (``EncryptionError/keyChangeInProgress``); ``LodeError/textIndexUnavailable(type:index:reason:)``
    ///   for a full-text index; and what reading or writing throws. The store is then unchanged.
    public static func changeEncryption(
        at url: URL, from old: StoreEncryption?, to new: StoreEncryption?, fileMode: UInt32 = 0o600,
        progress: (KeyChangeProgress) -> Void = { _ in }
    ) throws {
        let path = try KeyChange.resolved(url.path)
        let change = try KeyChange.begin(path)
        defer { change.end() }
        try KeyChange.requireExclusive(path)
        let work = path + "/" + KeyChange.workName
        try KeyChange.removeTree(work)
        do {
            try copy(path: path, from: old, to: new, into: work, fileMode: fileMode, progress: progress)
            // Every environment of the two files is closed now (the copy's scope ended).
            try KeyChange.requireExclusive(path)
            try mapStorageErrors { try DurableNames.replaceDataFile(in: path, with: work) }
        } catch {
            try? KeyChange.removeTree(work)  // the old file stands; the error below is the one to see
            throw error
        }
        try KeyChange.removeTree(work)
    }

    /// Writes the store at `path`, opened with `old`, into a new environment in `work` sealed with
    /// `new`, and closes both.
    private static func copy(
        path: String, from old: StoreEncryption?, to new: StoreEncryption?, into work: String,
        fileMode: UInt32,
        progress: (KeyChangeProgress) -> Void
    ) throws {
        let source = try Store(
            at: URL(fileURLWithPath: path),
            configuration: StoreConfiguration(readOnly: true, checksTypesAtOpen: false, encryption: old),
            types: [])
        defer { source.close() }
        if old == nil, source.isEncrypted { throw LodeError.encryption(path: path, .keyMissing) }
        let target = try mapStorageErrors {
            try Environment.open(
                at: work,
                options: EnvironmentOptions(
                    mapSize: 64 << 20, durability: .full, createDirectory: true, fileMode: fileMode))
        }
        var record: EncryptionRecord?
        if let new {
            do {
                let (key, made) = try new.newKey()
                try install(StoreSealer(sealer: try RecordSealer(key: key)), on: target, path: work)
                record = made
            } catch let error as EncryptionError {
                throw LodeError.encryption(path: path, error)
            }
        }
        let (types, names, format) = try source.read { tx in
            (
                try tx.storedTypes(),
                try tx.lmdb.allEntries(in: tx.lmdb.environment.mainDatabase).map {
                    String(decoding: $0.key, as: UTF8.self)
                },
                try tx.lmdb.get(Array(StoreLayout.formatVersionKey.utf8), in: source.meta).map {
                    try CBORDecoder().decode(Int.self, from: $0)
                } ?? StoreLayout.baseFormatVersion
            )
        }
        if new != nil, let type = types.first(where: { !$0.textIndexes.isEmpty }) {
            throw LodeError.textIndexUnavailable(
                type: type.name, index: type.textIndexes[0].name,
                reason:
                    "full-text indexes are not available in an encrypted store (their terms are sorted keys)")
        }
        // Handles first: a transaction reads only the databases whose handles were open when it began.
        let environment = try source.environment()
        var databases: [String: Database] = [:]
        for name in names {
            databases[name] = try mapStorageErrors {
                try environment.database(named: name, kind: nil, create: false)
            }
        }
        // What the catalog derives (indexes, links) is built again from the records: a database whose
        // keys are stored hashed cannot give them back.
        var derived: Set<String> = []
        for type in types {
            for index in type.indexes {
                derived.insert(CatalogEntry.databaseName(type: type.name, index: index.name))
            }
            for link in type.links { derived.insert(link.databaseName(of: type.name)) }
        }
        let typeNames = Set(types.map(\.name))
        var writer = KeyChange.Writer(target: target, total: types.reduce(0) { $0 + $1.objectCount })
        try mapStorageErrors {
            try environment.read { lmdb in
                for name in names where !derived.contains(name) {
                    try writer.copy(
                        databases[name]!, named: name, in: lmdb, countsRecords: typeNames.contains(name),
                        skipping: {
                            name == StoreLayout.meta
                                && ($0 == EncryptionRecord.metaKey
                                    || $0 == Array(StoreLayout.formatVersionKey.utf8))
                        }, progress: progress)
                }
                try writer.finishMeta(record: record, sourceFormat: format)
                for type in types { try writer.rebuild(type, from: databases[type.name]!, in: lmdb) }
                try writer.flush()
            }
        }
    }
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
                let record: UntypedRecord
                do {
                    record = try UntypedRecord(bytes: entry.value, type: type)
                } catch let problem as UntypedRecord.Problem {
                    throw LodeError.recordDoesNotDecode(
                        type: type.name, key: KeyDescription.describe(entry.key), field: problem.field,
                        reason: problem.reason)
                }
                for (index, database) in zip(type.indexes, indexes) {
                    do {
                        try put(entry.key, forKey: try record.indexKey(index), in: database)
                    } catch let problem as UntypedRecord.Problem {
                        throw LodeError.recordDoesNotDecode(
                            type: type.name, key: KeyDescription.describe(entry.key), field: problem.field,
                            reason: problem.reason)
                    }
                }
                for (link, database) in zip(type.links, links) {
                    do {
                        for target in try record.linkTargets(link) {
                            try put(entry.key, forKey: target, in: database)
                        }
                    } catch let problem as UntypedRecord.Problem {
                        throw LodeError.recordDoesNotDecode(
                            type: type.name, key: KeyDescription.describe(entry.key), field: problem.field,
                            reason: problem.reason)
                    }
                }
                return true
            }
        }
    }
}
