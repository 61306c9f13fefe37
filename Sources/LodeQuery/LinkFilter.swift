import Foundation
import LodeStore

/// A condition across a link: the objects whose link points at a linked object that matches (for a
/// to-many link, at least one of them). The linked objects that match are found once per evaluation,
/// as a query of their own type planned over its indexes, or are a fixed list.
package struct LinkFilter<Element: Persistable>: @unchecked Sendable {
    // @unchecked: immutable; the key path and predicate are not marked Sendable but never change.
    /// The link's field.
    package let field: String
    /// The linked type's store name.
    package let targetTypeName: String
    /// The primary keys an object links to through the field.
    package let targetKeys: (Element) -> [[UInt8]]
    /// The primary keys of the linked objects that match, read in a transaction, and the plan that
    /// found them (nil for a fixed list).
    package let matchingTargets: (Transaction) throws -> (keys: Set<[UInt8]>, plan: QueryPlan?)
    /// Whether the linked object stored under a key matches, read through a resolver (false when
    /// it does not exist).
    package let targetMatches: ([UInt8], LinkResolver) throws -> Bool
    /// True when the matching linked objects are a fixed list (they never change with the store).
    package let isFixed: Bool

    /// Objects whose link on `field` (whose keys `targetKeys` reads) points at a `Target` that
    /// matches `predicate`.
    static func matching<Target: Persistable>(
        field: String, targetKeys: @escaping (Element) -> [[UInt8]], _ target: Target.Type,
        predicate: Predicate<Target>
    ) -> LinkFilter {
        LinkFilter(
            field: field, targetTypeName: Target.schema.typeName, targetKeys: targetKeys,
            matchingTargets: { transaction in
                let results = Results<Target>(source: .transaction(transaction)).filter(predicate)
                let evaluation = try results.evaluate(in: transaction, snapshot: nil)
                let keys = evaluation.keys
                return (Set((0..<keys.count).map { Array(keys[$0]) }), evaluation.plan)
            },
            targetMatches: { key, resolver in
                guard let object = try resolver.object(Target.self, key: key) else { return false }
                return try predicate.evaluate(object)
            },
            isFixed: false)
    }

    /// Objects whose link on `field` points at one of `targets`.
    static func linking(
        field: String, targetKeys: @escaping (Element) -> [[UInt8]], to targets: Set<[UInt8]>,
        typeName: String
    ) -> LinkFilter {
        LinkFilter(
            field: field, targetTypeName: typeName, targetKeys: targetKeys,
            matchingTargets: { _ in (targets, nil) }, targetMatches: { key, _ in targets.contains(key) },
            isFixed: true)
    }

    /// True when `object` links to one of `matching`.
    package func accepts(_ object: Element, matching: Set<[UInt8]>) -> Bool {
        targetKeys(object).contains { matching.contains($0) }
    }
}
