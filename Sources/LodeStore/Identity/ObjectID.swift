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

    /// The type's name and the primary key as a person reads it: `Task 7`, `Person "ada"`,
    /// `Event (2024-05-01T10:00:00Z, 3)` (what error messages and `lode-dump` write).
    public var description: String { typeName + " " + KeyDescription.describe(primaryKey) }

    /// Orders by type name, then by key (the store's order).
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        if lhs.typeName != rhs.typeName { return lhs.typeName < rhs.typeName }
        return lhs.primaryKey.lexicographicallyPrecedes(rhs.primaryKey)
    }
}
