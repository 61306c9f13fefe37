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
    /// The encoded key a server key text names.
    func keyBytes(fromText text: String) throws -> [UInt8]
    /// Applies a server row (see ``SyncEngine``'s download); returns an error to report for a row that
    /// could not be applied (it is skipped), nil otherwise.
    func apply(
        _ row: ServerRow, key: [UInt8], shadow: Shadow?, state: SyncState, in tx: LodeStore.WriteTransaction
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
            // Most candidates are unchanged (the downloads' own commits): no decode for them.
            guard digest != known else { return .unchanged }
            let object = try tx.decode(T.self, from: bytes, key: key)
            let json = String(decoding: try encoder.encode(object), as: UTF8.self)
            return .changed(keyText: try keyText(of: object), json: json, digest: digest)
        } ?? .absent
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

    /// The server's object in `row`. Data without the primary key field gets it from the row's key;
    /// data whose key differs from the row's is refused.
    func serverObject(_ json: String, keyText text: String) throws -> T {
        var data = Data(json.utf8)
        let object: T
        do {
            object = try decoder.decode(T.self, from: data)
        } catch DecodingError.keyNotFound(let key, let context)
            where context.codingPath.isEmpty && key.stringValue == T.schema.primaryKeyField
        {
            guard var fields = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw SyncError.rowDoesNotDecode(
                    type: typeName, key: text, reason: "its data is not a JSON object")
            }
            let keyJSON = try keyBytesJSON(text)
            fields[T.schema.primaryKeyField] = try JSONSerialization.jsonObject(
                with: Data(keyJSON.utf8), options: .fragmentsAllowed)
            data = try JSONSerialization.data(withJSONObject: fields)
            do {
                object = try decoder.decode(T.self, from: data)
            } catch {
                throw SyncError.rowDoesNotDecode(type: typeName, key: text, reason: Self.reason(error))
            }
        } catch {
            throw SyncError.rowDoesNotDecode(type: typeName, key: text, reason: Self.reason(error))
        }
        let ownKey = try keyText(of: object)
        guard ownKey == text else {
            throw SyncError.rowDoesNotDecode(
                type: typeName, key: text,
                reason: "its data's \(T.schema.primaryKeyField) is \(ownKey), not the row's key")
        }
        return object
    }

    /// The JSON a key text stands for (quoted when the key type reads it from a string).
    private func keyBytesJSON(_ text: String) throws -> String {
        guard let keyType = T.schema.primaryKeyType as? any Codable.Type else { return SyncJSON.quoted(text) }
        func reads<K: Codable>(_ type: K.Type) -> Bool {
            (try? decoder.decode(K.self, from: Data(SyncJSON.quoted(text).utf8))) != nil
        }
        return reads(keyType) ? SyncJSON.quoted(text) : text
    }

    private static func reason(_ error: Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return
                "field \((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")) is missing"
        case .typeMismatch(let type, let context):
            return "field \(context.codingPath.map(\.stringValue).joined(separator: ".")) is not a \(type)"
        case .valueNotFound(let type, let context):
            return
                "field \(context.codingPath.map(\.stringValue).joined(separator: ".")) is null, not a \(type)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? context.debugDescription
                : "field \(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    func apply(
        _ row: ServerRow, key: [UInt8], shadow: Shadow?, state: SyncState, in tx: LodeStore.WriteTransaction
    )
        throws -> SyncError?
    {
        let typeState = try tx.typeState(T.self)
        let local: RecordDigest? =
            try typeState.records.flatMap { try tx.lmdb.withValue(forKey: key, in: $0) { RecordDigest($0) } }
        let dirty = local != shadow?.digest
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
        let server: T
        do {
            server = try serverObject(json, keyText: row.key)
        } catch let error as SyncError {
            return error
        }
        if !dirty {
            // The same record as the local one (this client's own write, a filtered row confirmed):
            // the shadow moves, the object is not written again.
            if let local, RecordDigest(try tx.encodeRecord(server).bytes) == local {
                try state.setShadow(
                    Shadow(version: row.version, digest: local, keyText: row.key), type: row.type, key: key,
                    in: tx)
                return nil
            }
            do {
                try tx.upsert(server)
            } catch let error as LodeError {
                return SyncError.rowRefused(type: typeName, key: row.key, reason: "\(error)")
            }
            let digest = try tx.lmdb.withValue(forKey: key, in: try records(in: tx)!) { RecordDigest($0) }
            try state.setShadow(
                Shadow(version: row.version, digest: digest, keyText: row.key), type: row.type, key: key,
                in: tx)
            return nil
        }
        let serverDigest = RecordDigest(try tx.encodeRecord(server).bytes)
        var refusal: SyncError?
        if serverDigest != local, let merge,
            let mine = try tx.object(T.self, keyBytes: key, state: typeState)
        {
            do {
                let merged = try merge(mine, server)
                try tx.upsert(merged)
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
