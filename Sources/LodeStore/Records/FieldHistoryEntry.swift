import LodeCodec

/// The fields of a stored type from one schema version of the store on (``StoredType/history``).
public struct FieldHistoryEntry: Sendable, Equatable {
    /// The store's schema version (migrations run) from which this holds.
    public var schemaVersion: Int
    /// The type's version then.
    public var typeVersion: Int
    /// The fields its records had.
    public var fields: [String]
    /// What happened: `stored`, `migrated by NAME`, `renamed from NAME`.
    public var event: String

    /// Describes one entry (for tools that restore a type).
    public init(schemaVersion: Int, typeVersion: Int, fields: [String], event: String) {
        self.schemaVersion = schemaVersion
        self.typeVersion = typeVersion
        self.fields = fields
        self.event = event
    }
}
