import Foundation
import LMDB
import LodeCodec
import LodeStore

/// The typed work sync does for one type, behind a protocol so that the engine holds types of every
/// kind in one list.
protocol TypeSyncing: Sendable {
    var typeName: String { get }
    var persistableType: any Persistable.Type { get }
    /// True when the type has a merge function: its uploads are checked against the server's version.
    var checksConflicts: Bool { get }
    /// The type's records database, nil when no object was ever stored.
    func records(in tx: LodeStore.Transaction) throws -> Database?
    /// The upload entry for the record under `key` (nil when it is absent): key text, JSON, digest.
    /// The record under `key` as an upload needs it; `known` is the digest of what the server holds,
    /// and a record with that digest is not decoded.
    func localRecord(key: [UInt8], known: RecordDigest?, in tx: LodeStore.Transaction) throws -> LocalRecord
    /// The field names this app version's type has, once an upload learned them (see
    /// ``UploadBatch/fields``).
    var uploadedFieldNames: [String]? { get }
    /// The encoded key a server key text names.
    func keyBytes(fromText text: String) throws -> [UInt8]
    /// Applies a server row (see ``SyncEngine``'s download); returns an error to report for a row that
    /// could not be applied (it is skipped), nil otherwise. Sets `keepsLocalChange` when the object
    /// is left with a local change to upload (a change not yet uploaded, a merge, a denied deletion).
    func apply(
        _ row: ServerRow, key: [UInt8], shadow: Shadow?, state: SyncState, in tx: LodeStore.WriteTransaction,
        keepsLocalChange: inout Bool
    )
        throws -> SyncError?
}

/// ``TypeSyncing`` for `T`.
final class TypeSync<T: Persistable>: TypeSyncing {
    let merge: (@Sendable (T, T) throws -> T)?

    /// The JSON coders of every row, made once (they are `Sendable`: one type may serve several
    /// clients).
    private let decoder = SyncJSON.decoder()
    private let encoder = SyncJSON.encoder()

    init(merge: (@Sendable (T, T) throws -> T)?) { self.merge = merge }

    var typeName: String { T.schema.typeName }
    var persistableType: any Persistable.Type { T.self }
    var checksConflicts: Bool { merge != nil }

    func records(in tx: LodeStore.Transaction) throws -> Database? { try tx.typeState(T.self).records }

    func localRecord(key: [UInt8], known: RecordDigest?, in tx: LodeStore.Transaction) throws -> LocalRecord {
        guard let records = try records(in: tx) else { return .absent }
        return try tx.lmdb.withValue(forKey: key, in: records) { bytes -> LocalRecord in
            let digest = RecordDigest(bytes)
            // Most candidates are unchanged (the downloads' own commits): nothing more to read.
            guard digest != known else { return .unchanged }
            try noteFieldNames(sample: bytes, key: key, in: tx)
            let json: String
            do {
                json = try RecordJSONWriter.json(bytes)
            } catch {
                throw LodeError.recordDoesNotDecode(
                    type: typeName, key: KeyDescription.describe(key), field: "", reason: "\(error)")
            }
            return .changed(keyText: try keyText(record: bytes, key: key, in: tx), json: json, digest: digest)
        } ?? .absent
    }

    /// The type's field names as its upload sends them (the server keeps the row's other fields: those
    /// of app versions this one does not know), learned from the first record uploaded.
    private let fieldNames = Locked<[String]?>(nil, name: "a synced type's field names")

    var uploadedFieldNames: [String]? { fieldNames.withLock { $0 } }

    private func noteFieldNames(sample: UnsafeRawBufferPointer, key: [UInt8], in tx: LodeStore.Transaction)
        throws
    {
        guard fieldNames.withLock({ $0 == nil }) else { return }
        let names: Set<String>
        do {
            names = try tx.typeState(T.self).fieldNames(readingSample: sample)
        } catch let error as LodeError {
            throw error
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: typeName, key: KeyDescription.describe(key), field: "", reason: "\(error)")
        }
        fieldNames.withLock { $0 = names.sorted() }
    }

    /// The key text of the record `bytes` stored under `key`: read from its primary-key field for a
    /// key that is text, a UUID or an integer; through the object otherwise.
    private func keyText(record bytes: UnsafeRawBufferPointer, key: [UInt8], in tx: LodeStore.Transaction)
        throws
        -> String
    {
        if let text = Self.plainKeyText(bytes, field: T.schema.primaryKeyField) { return text }
        return try keyText(of: try tx.decode(T.self, from: bytes, key: key))
    }

    /// The text of the record's `field` when it is text, a UUID (tag 37) or an integer: what
    /// ``keyText(of:)`` gives for those keys.
    static func plainKeyText(_ record: UnsafeRawBufferPointer, field: String) -> String? {
        var reader = CBORReader(record)
        guard let head = try? reader.readHead(), head.major == 5, head.info != 31 else { return nil }
        let wanted = Array(field.utf8)
        for _ in 0..<head.argument {
            guard let name = try? reader.readStringBytes(major: 3) else { return nil }
            guard name.elementsEqual(wanted) else {
                guard (try? reader.skipItem()) != nil else { return nil }
                continue
            }
            let start = reader.offset
            guard let value = try? reader.readHead() else { return nil }
            switch value.major {
            case 0: return value.argument <= UInt64(Int.max) ? String(value.argument) : nil
            case 1: return value.argument < UInt64(Int.max) ? String(-1 - Int64(value.argument)) : nil
            case 3:
                reader = CBORReader(reader.bytes, offset: start)
                return (try? reader.readStringBytes(major: 3)).flatMap { $0 }.map {
                    String(decoding: $0, as: UTF8.self)
                }
            case 6 where value.argument == 37:
                guard let raw = (try? reader.readStringBytes(major: 2)).flatMap({ $0 }), raw.count == 16
                else {
                    return nil
                }
                var uuid = UUID().uuid
                withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: raw) }
                return UUID(uuid: uuid).uuidString
            default: return nil
            }
        }
        return nil
    }

    /// The key of `object` as text: a string key (text, UUID) is its text, any other key its JSON.
    func keyText(of object: T) throws -> String {
        // The common key types without a JSON round trip.
        switch object[keyPath: T.schema.primaryKeyPath] {
        case let key as Int: return String(key)
        case let key as String: return key
        case let key as UUID: return key.uuidString
        default: break
        }
        guard let key = object[keyPath: T.schema.primaryKeyPath] as? any Encodable else {
            throw SyncError.invalidConfiguration("the primary key of \(typeName) is not Encodable")
        }
        let json = String(decoding: try encoder.encode(key), as: UTF8.self)
        if json.hasPrefix("\"") { return try decoder.decode(String.self, from: Data(json.utf8)) }
        return json
    }

    func keyBytes(fromText text: String) throws -> [UInt8] {
        // The common key types read directly; any other through its JSON.
        let bytes: [UInt8]
        switch T.schema.primaryKeyType {
        case is Int.Type:
            guard let key = Int(text) else { throw keyRefused(text, "the key is not an Int") }
            bytes = try KeyEncoder().encode(key)
        case is String.Type:
            bytes = try KeyEncoder().encode(text)
        case is UUID.Type:
            guard let key = UUID(uuidString: text) else { throw keyRefused(text, "the key is not a UUID") }
            bytes = try KeyEncoder().encode(key)
        default:
            guard let keyType = T.schema.primaryKeyType as? any Codable.Type else {
                throw SyncError.invalidConfiguration("the primary key of \(typeName) is not Codable")
            }
            bytes = try parse(keyType, text)
        }
        guard bytes.count <= IndexKeyLimit.maximum else {
            throw keyRefused(
                text, "the key takes \(bytes.count) bytes; Lode keys take at most \(IndexKeyLimit.maximum)")
        }
        return bytes
    }

    private func keyRefused(_ text: String, _ reason: String) -> SyncError {
        .rowDoesNotDecode(type: typeName, key: String(text.prefix(40)), reason: reason)
    }

    private func parse<K: Codable>(_ type: K.Type, _ text: String) throws -> [UInt8] {
        let key: K
        if let quoted = try? decoder.decode(K.self, from: Data(SyncJSON.quoted(text).utf8)) {
            key = quoted
        } else if let raw = try? decoder.decode(K.self, from: Data(text.utf8)) {
            key = raw
        } else {
            throw SyncError.rowDoesNotDecode(
                type: typeName, key: text, reason: "the key is not a \(K.self) as text or JSON")
        }
        return try KeyEncoder().encode(key)
    }

    /// The record of a row's JSON object (its data), with the primary-key field taken from the row's
    /// key when the data lacks it.
    func record(json: [UInt8], keyText: String) throws -> [UInt8] {
        var writer = CBORWriter(capacity: json.count + 16)
        do {
            try json.withUnsafeBytes { try JSONRecordReader.convert($0, into: &writer) }
        } catch let failure as JSONRecordReader.Failure {
            throw SyncError.rowDoesNotDecode(type: typeName, key: keyText, reason: "\(failure)")
        }
        return try writer.bytes.withUnsafeBytes { bytes -> [UInt8] in
            var reader = CBORReader(bytes)
            guard let head = try? reader.readHead(), head.major == 5 else {
                throw SyncError.rowDoesNotDecode(
                    type: typeName, key: keyText, reason: "its data is not a JSON object")
            }
            if Self.hasField(bytes, T.schema.primaryKeyField) { return Array(bytes) }
            // The key field from the row's key: its JSON, read the same way.
            var key = CBORWriter()
            var keyJSON = try keyBytesJSON(keyText)
            do {
                try keyJSON.withUTF8 { try JSONRecordReader.convert(UnsafeRawBufferPointer($0), into: &key) }
            } catch {
                throw SyncError.rowDoesNotDecode(type: typeName, key: keyText, reason: "the key is not JSON")
            }
            var fields = CBORWriter(capacity: bytes.count + key.bytes.count + 16)
            fields.head(5, head.argument + 1)
            _ = fields.text(T.schema.primaryKeyField)
            fields.bytes += key.bytes
            fields.bytes += bytes[reader.offset...]
            return fields.bytes
        }
    }

    /// Whether the map `record` has a top-level field `name`.
    static func hasField(_ record: UnsafeRawBufferPointer, _ name: String) -> Bool {
        var reader = CBORReader(record)
        guard let head = try? reader.readHead(), head.major == 5, head.info != 31 else { return false }
        let wanted = Array(name.utf8)
        for _ in 0..<head.argument {
            guard let found = try? reader.readStringBytes(major: 3) else { return false }
            if found.elementsEqual(wanted) { return true }
            guard (try? reader.skipItem()) != nil else { return false }
        }
        return false
    }

    /// The JSON a key text stands for (quoted when the key type reads it from a string).
    private func keyBytesJSON(_ text: String) throws -> String {
        guard let keyType = T.schema.primaryKeyType as? any Codable.Type else { return SyncJSON.quoted(text) }
        func reads<K: Codable>(_ type: K.Type) -> Bool {
            (try? decoder.decode(K.self, from: Data(SyncJSON.quoted(text).utf8))) != nil
        }
        return reads(keyType) ? SyncJSON.quoted(text) : text
    }

    func apply(
        _ row: ServerRow, key: [UInt8], shadow: Shadow?, state: SyncState, in tx: LodeStore.WriteTransaction,
        keepsLocalChange: inout Bool
    )
        throws -> SyncError?
    {
        let typeState = try tx.typeState(T.self)
        let local: RecordDigest? =
            try typeState.records.flatMap { try tx.lmdb.withValue(forKey: key, in: $0) { RecordDigest($0) } }
        let dirty = local != shadow?.digest
        // A local change not yet uploaded stays one (whether merged or not); a denied deletion below too.
        if dirty { keepsLocalChange = true }
        guard !row.gone, let json = row.data else {
            guard !dirty else {
                // A local change not yet uploaded: it comes after this deletion in the server's order.
                try state.setShadow(
                    Shadow(version: row.version, digest: nil, keyText: row.key), type: row.type, key: key,
                    in: tx)
                return nil
            }
            if local != nil {
                do {
                    _ = try tx.delete(T.self, keyBytes: key)
                } catch LodeError.deleteDenied(let type, let denied, let linkedFrom) {
                    keepsLocalChange = true
                    // A deny rule keeps the object; it stays dirty and is uploaded again.
                    try state.setShadow(
                        Shadow(version: row.version, digest: nil, keyText: row.key), type: row.type, key: key,
                        in: tx)
                    return SyncError.rowRefused(
                        type: type, key: row.key,
                        reason: "the server deleted it, but \(linkedFrom.count) object(s) link to \(denied) "
                            + "with a deny rule: it is kept and uploaded again")
                }
            }
            try state.setShadow(nil, type: row.type, key: key, in: tx)
            return nil
        }
        // The row's JSON becomes a record, and the type reads it (the check that it can): a row it
        // cannot read is reported and nothing of it is written.
        let incoming: [UInt8]
        let server: T
        do {
            incoming = try record(json: json, keyText: row.key)
            server = try incoming.withUnsafeBytes { bytes in
                try JSONForms.accepting { try tx.decode(T.self, from: bytes, key: key) }
            }
        } catch let error as SyncError {
            return error
        } catch LodeError.recordDoesNotDecode(_, _, let field, let reason) {
            return SyncError.rowDoesNotDecode(
                type: typeName, key: row.key, reason: field.isEmpty ? reason : "field \(field): \(reason)")
        }
        if !dirty {
            // Written unless it is the local record already (this client's own write, a filtered row
            // confirmed): the shadow moves either way.
            let written: [UInt8]?
            do {
                written = try incoming.withUnsafeBytes { bytes in
                    try JSONForms.accepting { try tx.upsert(server, arrivingAs: bytes) }
                }
            } catch let error as LodeError {
                return SyncError.rowRefused(type: typeName, key: row.key, reason: "\(error)")
            }
            try state.setShadow(
                Shadow(
                    version: row.version, digest: written.map { RecordDigest($0) } ?? local, keyText: row.key),
                type: row.type, key: key, in: tx)
            return nil
        }
        let serverDigest = RecordDigest(
            try incoming.withUnsafeBytes { bytes in
                try JSONForms.accepting { try tx.record(of: server, arrivingAs: bytes, key: key).bytes }
            })
        var refusal: SyncError?
        if serverDigest != local, let merge,
            let mine = try tx.object(T.self, keyBytes: key, state: typeState)
        {
            do {
                let merged = try merge(mine, server)
                // The fields this version does not know are the server's: it cannot have changed them.
                _ = try incoming.withUnsafeBytes { bytes in
                    try JSONForms.accepting { try tx.upsert(merged, arrivingAs: bytes) }
                }
            } catch {
                // The local change stays, and is uploaded against this version (it then wins).
                refusal = SyncError.rowRefused(
                    type: typeName, key: row.key,
                    reason: "the merge failed, the local object is kept: \(error)")
            }
        }
        try state.setShadow(
            Shadow(version: row.version, digest: serverDigest, keyText: row.key), type: row.type, key: key,
            in: tx)
        return refusal
    }
}
