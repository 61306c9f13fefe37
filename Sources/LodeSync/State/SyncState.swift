import Foundation
import LMDB
import LodeCodec
import LodeStore

/// What a client keeps in its store about the sync, written in the same transactions as the objects
/// it concerns: `@sync` holds the client's id, the download cursor (the last server version applied
/// in full), the upload cursor (the last local version whose changes are on the server), the batch
/// being uploaded, the next batch number and each type's filter; `@sync.<Type>` holds the
/// ``Shadow`` of every object the server is known to have had.
struct SyncState {
    static let databaseName = StoreLayout.syncDatabase
    static let clientKey = Array("client".utf8)
    static let downloadKey = Array("download".utf8)
    static let uploadKey = Array("upload".utf8)
    static let inflightKey = Array("inflight".utf8)
    static let nextBatchKey = Array("batch".utf8)
    static let filterPrefix = "filter."
    /// Rows a download skipped (the type could not read them): `rejected.<type>` 0x00 `<key text>`
    /// → the row's version, read again when the client starts until one applies.
    static let rejectedPrefix = "rejected."
    /// The change-log holder the upload cursor retains the log for.
    static let retentionHolder = "sync"

    let main: Database
    let shadows: [Database]

    /// Opens (creating when missing, unless `create` is false) the databases for `types`.
    init(store: Store, types: [String], create: Bool = true) throws {
        let environment = try store.environment()
        do {
            main = try environment.database(named: Self.databaseName, kind: .plain, create: create)
            shadows = try types.map {
                try environment.database(named: Self.shadowName($0), kind: .plain, create: create)
            }
        } catch let error as LMDBError {
            if error.code == .notFound { throw SyncError.store("the store has never been synced") }
            throw SyncError.store("\(error)")
        }
    }

    /// The synced types whose shadows a store holds, by the names of its `@sync.<Type>` databases.
    static func syncedTypes(in store: Store) throws -> [String] {
        let environment = try store.environment()
        return try environment.read { txn in
            try txn.allEntries(in: environment.mainDatabase).map { String(decoding: $0.key, as: UTF8.self) }
                .filter { $0.hasPrefix(databaseName + ".") }.map {
                    String($0.dropFirst(databaseName.count + 1))
                }
        }
    }

    static func shadowName(_ type: String) -> String { databaseName + "." + type }

    // MARK: Values

    func integer(_ key: [UInt8], in lmdb: LMDBTransaction) throws -> Int64? {
        guard let bytes = try lmdb.get(key, in: main), bytes.count == 8 else { return nil }
        return bytes.withUnsafeBytes { Int64(bigEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    func setInteger(_ value: Int64?, _ key: [UInt8], in tx: LodeStore.WriteTransaction) throws {
        if let value {
            try tx.lmdbWrite.put(withUnsafeBytes(of: value.bigEndian) { Array($0) }, forKey: key, in: main)
        } else {
            _ = try tx.lmdbWrite.delete(key, in: main)
        }
    }

    func text(_ key: [UInt8], in lmdb: LMDBTransaction) throws -> String? {
        try lmdb.get(key, in: main).map { String(decoding: $0, as: UTF8.self) }
    }

    func setText(_ value: String, _ key: [UInt8], in tx: LodeStore.WriteTransaction) throws {
        try tx.lmdbWrite.put(Array(value.utf8), forKey: key, in: main)
    }

    /// The last server version applied in full (0 before the first download).
    func downloadCursor(in lmdb: LMDBTransaction) throws -> Int64 {
        try integer(Self.downloadKey, in: lmdb) ?? 0
    }

    /// The last local version whose changes the server has, nil before the first upload (every object
    /// is then a candidate).
    func uploadCursor(in lmdb: LMDBTransaction) throws -> Int? {
        try integer(Self.uploadKey, in: lmdb).map { Int($0) }
    }

    /// Moves the upload cursor, and the change log's retention with it.
    func setUploadCursor(_ version: Int, in tx: LodeStore.WriteTransaction) throws {
        try setInteger(Int64(version), Self.uploadKey, in: tx)
        try tx.retainChangeLog(after: version, holder: Self.retentionHolder)
    }

    func inflight(in lmdb: LMDBTransaction) throws -> UploadBatch? {
        guard let bytes = try lmdb.get(Self.inflightKey, in: main) else { return nil }
        do {
            return try CBORDecoder().decode(UploadBatch.self, from: bytes)
        } catch {
            throw SyncError.store("the upload batch in @sync does not decode: \(error)")
        }
    }

    func setInflight(_ batch: UploadBatch?, in tx: LodeStore.WriteTransaction) throws {
        if let batch {
            try tx.lmdbWrite.put(try CBOREncoder().encode(batch), forKey: Self.inflightKey, in: main)
        } else {
            _ = try tx.lmdbWrite.delete(Self.inflightKey, in: main)
        }
    }

    // MARK: Rows skipped

    private static func rejectedKey(type: String, keyText: String) -> [UInt8] {
        Array((rejectedPrefix + type).utf8) + [0] + Array(keyText.utf8)
    }

    /// Notes that the row `keyText` of `type` at `version` was skipped.
    func noteRejected(type: String, keyText: String, version: Int64, in tx: LodeStore.WriteTransaction) throws
    {
        try setInteger(version, Self.rejectedKey(type: type, keyText: keyText), in: tx)
    }

    /// Forgets a skipped row (it applied, or a later version did).
    func clearRejected(type: String, keyText: String, in tx: LodeStore.WriteTransaction) throws {
        try setInteger(nil, Self.rejectedKey(type: type, keyText: keyText), in: tx)
    }

    /// The rows skipped so far: type name and key text.
    func rejected(in lmdb: LMDBTransaction) throws -> [(type: String, keyText: String)] {
        var found: [(type: String, keyText: String)] = []
        let prefix = Array(Self.rejectedPrefix.utf8)
        // In an encrypted store the keys are hashed and walks come in hash order: all of them are
        // read (a handful of settings and the skipped rows).
        let ordered = main.isOrdered
        for entry in try lmdb.allEntries(in: main, from: ordered ? prefix : nil) {
            guard entry.key.starts(with: prefix) else {
                if ordered { break } else { continue }
            }
            let rest = entry.key.dropFirst(prefix.count)
            guard let zero = rest.firstIndex(of: 0) else { continue }
            found.append(
                (
                    String(decoding: rest[..<zero], as: UTF8.self),
                    String(decoding: rest[(zero + 1)...], as: UTF8.self)
                ))
        }
        return found
    }

    // MARK: Shadows

    func shadow(type: Int, key: [UInt8], in lmdb: LMDBTransaction) throws -> Shadow? {
        try lmdb.withValue(forKey: key, in: shadows[type]) { Shadow($0) } ?? nil
    }

    func setShadow(_ shadow: Shadow?, type: Int, key: [UInt8], in tx: LodeStore.WriteTransaction) throws {
        if let shadow {
            try tx.lmdbWrite.put(shadow.encoded, forKey: key, in: shadows[type])
        } else {
            _ = try tx.lmdbWrite.delete(key, in: shadows[type])
        }
    }
}
