import Foundation
import LMDB
import LodeCodec

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
