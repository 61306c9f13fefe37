/// One link of a ``StoredType``, as the catalog describes it.
public struct StoredLink: Sendable, Equatable {
    /// The link's field (a dotted path for a nested one).
    public var field: String
    /// The store name of the type the link points at.
    public var targetTypeName: String
    /// True for an ordered to-many link, false for an optional to-one.
    public var isToMany: Bool
    /// The delete rule's name as stored (a ``DeleteRule`` raw value).
    public var rule: String
    /// How many entries the inverse index holds (one per object and target it links to).
    public var entryCount: Int

    /// Describes a link (for tools that restore one).
    public init(field: String, targetTypeName: String, isToMany: Bool, rule: String, entryCount: Int = 0) {
        self.field = field
        self.targetTypeName = targetTypeName
        self.isToMany = isToMany
        self.rule = rule
        self.entryCount = entryCount
    }

    /// The rule as applied: one this version does not know counts as ``DeleteRule/deny``.
    public var deleteRule: DeleteRule { DeleteRule(rawValue: rule) ?? .deny }

    /// The inverse index's database name.
    public func databaseName(of type: String) -> String { Self.indexName(type: type, field: field) }

    /// The inverse index of the link on `field` of `type`: `<type>.@<field>` (index names never start
    /// with `@`, so it cannot collide with one).
    package static func indexName(type: String, field: String) -> String { type + ".@" + field }
}
