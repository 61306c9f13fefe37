import Foundation
import LodeCodec

/// A stored record read without its Swift type and checked the way `lode-dump load` restores it:
/// one CBOR map whose field names are text, each used once, holding the primary-key field. Its
/// primary key and index keys come from this one untyped derivation (the key encoding of the value
/// the app wrote, through `CBORValue`'s `Encodable` form), used by `checkIntegrity()`, the export and
/// `restore` alike, so what one accepts the others accept.
package struct UntypedRecord {
    /// What is wrong with a record: the field (empty for the whole record) and why.
    package struct Problem: Error {
        package var field: String
        package var reason: String
        /// For a primary key over the limit: its length.
        package var keyLength: Int?
    }

    /// The decoded record.
    package let value: CBORValue
    /// The primary-key field's value.
    package let primaryKeyValue: CBORValue
    /// The primary key, key-encoded: where the record must be stored.
    package let primaryKey: [UInt8]

    /// Reads `bytes` as a record of `type`.
    package init(bytes: [UInt8], type: StoredType) throws(Problem) {
        let decoded = try Self.decode(bytes)
        guard case .map(let entries) = decoded else {
            throw Problem(field: "", reason: "the record is not a CBOR map")
        }
        var names = Set<String>()
        for entry in entries {
            guard case .text(let name) = entry.key else {
                throw Problem(field: entry.key.json, reason: "a field name is not text")
            }
            guard names.insert(name).inserted else {
                throw Problem(field: name, reason: "the field appears twice in the record")
            }
        }
        // Fields older records lack read as the schema's defaults, as the typed path reads them.
        let missing = type.defaults.filter { field, _ in !names.contains(field) }
        let value =
            missing.isEmpty
            ? decoded
            : .map(
                entries
                    + missing.sorted { $0.key < $1.key }.map { .init(key: .text($0.key), value: $0.value) })
        guard let primaryKeyValue = value.value(atPath: type.primaryKey) else {
            throw Problem(field: type.primaryKey, reason: "the primary-key field is missing")
        }
        primaryKey = try Self.key(
            of: primaryKeyValue, field: type.primaryKey, value: "the value", key: "the primary key")
        self.value = value
        self.primaryKeyValue = primaryKeyValue
    }

    /// Decodes a record's bytes as the library's readers read them: one CBOR item of definite lengths.
    /// - Throws: ``Problem`` naming the top-level field that holds an item of indefinite length.
    static func decode(_ bytes: [UInt8]) throws(Problem) -> CBORValue {
        do throws(CBORReader.Failure) {
            return try CBORValue.decode(bytes)
        } catch .indefiniteLength(let what, let offset) {
            // Valid CBOR, but no reader of the library's reads it: named where it is.
            throw Problem(
                field: field(holding: offset, in: bytes),
                reason: CBORReader.Failure.indefiniteLength(what, at: offset).description)
        } catch {
            throw Problem(field: "", reason: "the record is not CBOR: \(error.description)")
        }
    }

    /// The top-level field whose value holds byte `offset` of the record `bytes`, or "" (the map's
    /// own head, or a field name).
    static func field(holding offset: Int, in bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { buffer in
            var reader = CBORReader(buffer)
            do throws(CBORReader.Failure) {
                let head = try reader.readHead()
                guard head.major == 5, head.info != 31 else { return "" }
                for _ in 0..<min(head.argument, UInt64(buffer.count)) {
                    guard let name = try reader.readStringBytes(major: 3) else { return "" }
                    let value = reader.offset
                    do throws(CBORReader.Failure) {
                        try reader.skipItem()
                    } catch {
                        return offset >= value ? String(decoding: name, as: UTF8.self) : ""
                    }
                }
            } catch {
                return ""
            }
            return ""
        }
    }

    /// The field names, in record order.
    package var fieldNames: [String] {
        guard case .map(let entries) = value else { return [] }
        return entries.compactMap { if case .text(let name) = $0.key { return name } else { return nil } }
    }

    /// The key the record has in `index` (as stored: long values cut to 500 bytes and a hash).
    package func indexKey(_ index: StoredIndex) throws(Problem) -> [UInt8] {
        var bytes: [UInt8] = []
        for field in index.fields {
            do {
                try KeyEncoder().append(value.value(atPath: field) ?? .null, to: &bytes)
            } catch {
                throw Problem(field: field, reason: "the value cannot be an index key: \(error)")
            }
        }
        return IndexKeyLimit.stored(bytes)
    }

    /// The primary keys the record links to through `link`, each once, in link order: none for a
    /// missing or null to-one link, one per distinct element of a to-many one.
    package func linkTargets(_ link: StoredLink) throws(Problem) -> [[UInt8]] {
        guard let found = value.value(atPath: link.field), found != .null else { return [] }
        func key(_ item: CBORValue) throws(Problem) -> [UInt8] {
            try Self.key(of: item, field: link.field, value: "a link's key", key: "a link's key")
        }
        guard link.isToMany else { return [try key(found)] }
        guard case .array(let items) = found else {
            throw Problem(field: link.field, reason: "a to-many link is not an array")
        }
        var seen = Set<[UInt8]>()
        var keys: [[UInt8]] = []
        for item in items where item != .null {
            let bytes = try key(item)
            if seen.insert(bytes).inserted { keys.append(bytes) }
        }
        return keys
    }

    /// `item` key-encoded as a primary key: it must encode and fit LMDB's key limit (`value` and
    /// `key` name it in the problem, before and after encoding).
    private static func key(of item: CBORValue, field: String, value: String, key: String) throws(Problem)
        -> [UInt8]
    {
        let bytes: [UInt8]
        do {
            bytes = try KeyEncoder().encode(item)
        } catch {
            throw Problem(field: field, reason: "\(value) cannot be a primary key: \(error)")
        }
        guard bytes.count <= IndexKeyLimit.maximum else {
            throw Problem(
                field: field, reason: "\(key) is \(bytes.count) bytes; primary keys are limited to 511",
                keyLength: bytes.count)
        }
        return bytes
    }
}
