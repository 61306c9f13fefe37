import LodeCodec

/// One index of a ``StoredType``.
public struct StoredIndex: Sendable, Equatable {
    /// The index name.
    public var name: String
    /// The indexed fields, in key order.
    public var fields: [String]
    /// True for a unique index.
    public var isUnique: Bool
    /// How many entries the index holds (one per object).
    public var entryCount: Int

    /// Describes an index (for tools that restore one).
    public init(name: String, fields: [String], isUnique: Bool, entryCount: Int = 0) {
        self.name = name
        self.fields = fields
        self.isUnique = isUnique
        self.entryCount = entryCount
    }
}
