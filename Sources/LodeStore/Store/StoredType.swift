import LodeCodec

/// What a store's catalog says about one stored type, read without its Swift type (for tools and
/// diagnostics).
public struct StoredType: Sendable, Equatable {
    /// The type's store name.
    public var name: String
    /// The field holding the primary key.
    public var primaryKey: String
    /// The indexes that exist on disk.
    public var indexes: [StoredIndex]
    /// Every top-level field name seen in a record, sorted.
    public var fields: [String]
    /// The schema version the app declared.
    public var version: Int
    /// How many objects are stored.
    public var objectCount: Int
    /// The type's fields over time, oldest first (empty for stores that predate it).
    public var history: [FieldHistoryEntry] = []
    /// The schema's defaults for top-level fields older records lack (see ``Schema/defaults``): a
    /// record without the field is read, and indexed, as if it held the value.
    public var defaults: [String: CBORValue] = [:]

    /// Describes a stored type (for tools that restore one; see `WriteTransaction.restore(_:records:appending:)` in `LodeInspection`).
    public init(
        name: String, primaryKey: String, indexes: [StoredIndex], fields: [String], version: Int,
        objectCount: Int = 0
    ) {
        self.name = name
        self.primaryKey = primaryKey
        self.indexes = indexes
        self.fields = fields
        self.version = version
        self.objectCount = objectCount
    }
}

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
