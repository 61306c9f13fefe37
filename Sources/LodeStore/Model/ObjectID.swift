import LodeCodec

/// A stable identity for a stored object: its type's store name and its encoded primary key. It
/// resolves back to the object in any later transaction (like Core Data's `NSManagedObjectID`), and
/// it can be kept, compared, hashed, sent across tasks and encoded.
public struct ObjectID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The type's name in the store.
    public let typeName: String
    /// The primary key in its order-preserving encoding (see `KeyEncoder` (docs/FORMAT.md)).
    public let primaryKey: [UInt8]

    /// Makes an identity from a type name and encoded key bytes.
    public init(typeName: String, primaryKey: [UInt8]) {
        self.typeName = typeName
        self.primaryKey = primaryKey
    }

    /// The identity of `object`.
    ///
    /// - Throws: `EncodingError` when the primary key does not encode (see `KeyEncoder`).
    public init<T: Persistable>(_ object: T) throws {
        self.init(typeName: T.schema.typeName, primaryKey: try T.schema.primaryKeyBytes(object))
    }

    /// The identity of the `T` whose primary key is `key`.
    ///
    /// - Throws: `EncodingError` when `key` does not encode (see `KeyEncoder`).
    public init<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key) throws {
        self.init(typeName: T.schema.typeName, primaryKey: try KeyEncoder().encode(key))
    }

    /// `Type/hex-of-key`.
    public var description: String {
        typeName + "/"
            + primaryKey.map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }.joined()
    }

    /// Orders by type name, then by key (the store's order).
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        if lhs.typeName != rhs.typeName { return lhs.typeName < rhs.typeName }
        return lhs.primaryKey.lexicographicallyPrecedes(rhs.primaryKey)
    }
}
