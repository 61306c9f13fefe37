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
    /// The type's links, each with the inverse index the store keeps for it.
    public var links: [StoredLink] = []
    /// The type's full-text indexes.
    public var textIndexes: [StoredTextIndex] = []

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
