import Foundation
import LodeCodec

/// A link to another stored object: the target's primary key, kept in the record as the key's own
/// value (a `UUID` link is stored as the UUID), so any CBOR decoder reads it (see docs/FORMAT.md).
///
/// Declare a link as an optional property (to-one) or an array of links (ordered to-many), and list
/// it in the schema with its delete rule:
///
/// ```swift
/// struct Task: Persistable {
///     var id: Int
///     var title: String
///     var project: Link<Project>?     // to-one
///     var tags: [Link<Tag>] = []      // to-many, in order
///     static let schema = Schema<Task>(
///         primaryKey: \.id,
///         links: [.to(\.project, onDelete: .cascade), .toMany(\.tags, onDelete: .nullify)])
/// }
/// ```
///
/// Two links are equal when they point at the same primary key. A link may point at an object that
/// does not exist (written before its target, or its target deleted by a process that does not
/// know the rule): resolving it says so (``Transaction/object(_:)``) rather than fail.
public struct Link<Target: Persistable>: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The target's primary key, as stored in the record.
    public let key: CBORValue
    /// The target's primary key in its order-preserving encoding (where the target is stored).
    public let primaryKey: [UInt8]

    /// A link to `target`.
    /// - Throws: `EncodingError` when the target's primary key does not encode.
    public init(_ target: Target) throws {
        try self.init(value: try Target.schema.primaryKeyValue(target))
    }

    /// A link to the `Target` whose primary key is `key`.
    /// - Throws: `EncodingError` when `key` does not encode.
    public init<Key: Encodable>(key: Key) throws {
        try self.init(value: try CBORValue(decoding: CBOREncoder().encode(key)))
    }

    /// A link to the target whose primary key's stored value is `value`.
    /// - Throws: `EncodingError` when `value` cannot be a key.
    package init(value: CBORValue) throws {
        self.key = value
        self.primaryKey = try KeyEncoder().encode(value)
    }

    /// A link whose key `value` encodes as `primaryKey` (the caller derived both).
    private init(value: CBORValue, primaryKey: [UInt8]) {
        self.key = value
        self.primaryKey = primaryKey
    }

    /// The identity of the target.
    public var objectID: ObjectID { ObjectID(typeName: Target.schema.typeName, primaryKey: primaryKey) }

    /// The target's primary key as a `Key`.
    /// - Throws: `DecodingError` when the stored key is not a `Key`.
    public func key<Key: Decodable>(as type: Key.Type) throws -> Key {
        try CBORDecoder().decode(Key.self, from: key.encoded)
    }

    /// Reads the target's primary key: in place from a record, or as the target's key type from any
    /// other decoder.
    /// - Throws: `DecodingError` when the value is not a key.
    public init(from decoder: any Decoder) throws {
        if let (value, key) = try LinkKeyDecoding.read(from: decoder) {
            self.init(value: value, primaryKey: key)
            return
        }
        let value = try Target.schema.decodeKeyValue(decoder)
        do {
            try self.init(value: value)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "a link's key (\(value.json)) cannot be a primary key: \(error)"))
        }
    }

    /// Writes the target's primary key as its own value.
    /// - Throws: what `encoder` throws.
    public func encode(to encoder: any Encoder) throws { try key.encode(to: encoder) }

    /// Equal when both point at the same primary key.
    public static func == (lhs: Link, rhs: Link) -> Bool { lhs.primaryKey == rhs.primaryKey }

    /// Hashes the primary key.
    public func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }

    /// `Target → key` (the key as JSON).
    public var description: String { "\(Target.schema.typeName) → \(key.json)" }
}

extension Link: RecordValue {
    /// Reads the target's primary key as stored.
    /// - Throws: ``RecordDecodingError`` when the value cannot be a primary key.
    public init(recordValue reader: inout RecordReader) throws {
        let value = try reader.readCBORValue()
        do {
            try self.init(value: value)
        } catch {
            throw RecordDecodingError(
                field: "", reason: "a link's key (\(value.json)) cannot be a primary key: \(error)")
        }
    }

    /// Writes the target's primary key as its own value.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeCBORValue(key) }
}
