/// A link property of a ``Persistable`` type as its ``Schema`` declares it: the field, the target
/// type and the rule for deleting a target. The store keeps an inverse index of every declared link
/// (the objects that link to a target, found without a scan) in the same transaction as the
/// records, and applies the rule whenever a target is deleted.
public struct Relationship<Object>: @unchecked Sendable {
    // @unchecked: immutable; the key path and the closures made from it are never mutated, but are
    // not marked Sendable.
    /// The link's field name (a dotted path for a link inside a nested value).
    public let field: String
    /// The store name of the type the link points at (read from its schema when asked: two types
    /// that link to each other must not need each other's schema to build their own).
    public var targetTypeName: String { targetType.storeName }
    /// True for an ordered to-many link (`[Link<Target>]`), false for an optional to-one.
    public let isToMany: Bool
    /// What deleting a target does to the objects that link to it.
    public let deleteRule: DeleteRule
    /// The Swift type the link points at.
    package let targetType: any Persistable.Type
    package let keyPath: PartialKeyPath<Object>
    /// The primary keys the object links to through this field, each once, in link order.
    package let targetKeys: (Object) -> [[UInt8]]

    /// An optional to-one link: `.to(\.project, onDelete: .cascade)`.
    public static func to<Target: Persistable>(
        _ keyPath: KeyPath<Object, Link<Target>?>, onDelete rule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(
            field: fieldName(of: keyPath), isToMany: false,
            deleteRule: rule, targetType: Target.self, keyPath: keyPath,
            targetKeys: { object in object[keyPath: keyPath].map { [$0.primaryKey] } ?? [] })
    }

    /// An ordered to-many link: `.toMany(\.tags, onDelete: .nullify)`.
    public static func toMany<Target: Persistable>(
        _ keyPath: KeyPath<Object, [Link<Target>]>, onDelete rule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(
            field: fieldName(of: keyPath), isToMany: true,
            deleteRule: rule, targetType: Target.self, keyPath: keyPath,
            targetKeys: { object in
                let links = object[keyPath: keyPath]
                if links.count < 2 { return links.map(\.primaryKey) }
                var seen = Set<[UInt8]>()
                return links.compactMap { seen.insert($0.primaryKey).inserted ? $0.primaryKey : nil }
            })
    }
}
