import Foundation
import LodeCodec
import LodeStore

/// Sorting by a value of the object a to-one link points at (`tasks by project name`): objects
/// without a linked object (no link, or a link to a missing object) come first in ascending order.
package struct LinkedSort<Element: Persistable>: @unchecked Sendable {
    // @unchecked: immutable; key paths are not marked Sendable but never change.
    /// The link's field.
    package let field: String
    /// The linked type's store name.
    package let targetTypeName: String
    /// True for ascending order.
    package let ascending: Bool
    /// The primary key the object links to, if any.
    package let targetKey: (Element) -> [UInt8]?
    /// The linked object's value (boxed; nil without a linked object), read through a resolver.
    package let value: ([UInt8]?, LinkResolver) throws -> Any?
    /// Compares two boxed values (nil first).
    package let compare: (Any?, Any?) -> ComparisonResult
    /// The order-preserving encoding of a boxed value (of its optional), when the value type's key
    /// order is its `<` order; nil otherwise (live results then evaluate again in full).
    package let encode: ((Any?) throws -> [UInt8])?

    static func by<Target: Persistable, Value: Comparable & Encodable>(
        _ keyPath: KeyPath<Element, Link<Target>?>, value valuePath: KeyPath<Target, Value>, ascending: Bool
    ) -> LinkedSort {
        LinkedSort(
            field: fieldName(of: keyPath), targetTypeName: Target.schema.typeName, ascending: ascending,
            targetKey: { $0[keyPath: keyPath]?.primaryKey },
            value: { key, resolver in
                guard let key, let target = try resolver.object(Target.self, key: key) else { return nil }
                return target[keyPath: valuePath]
            },
            compare: { a, b in
                switch (a as? Value, b as? Value) {
                case (nil, nil): return .orderedSame
                case (nil, _): return .orderedAscending
                case (_, nil): return .orderedDescending
                case (let a?, let b?):
                    return a < b ? .orderedAscending : b < a ? .orderedDescending : .orderedSame
                }
            },
            encode: keyOrderMatchesComparable(Value.self)
                ? { value in try KeyEncoder().encode(value as? Value) } : nil)
    }

    /// The sort bytes of `object`: its linked value encoded, complemented when descending.
    package func sortBytes(of object: Element, resolver: LinkResolver) throws -> [UInt8]? {
        guard let encode else { return nil }
        let encoded = try encode(try value(targetKey(object), resolver))
        return ascending ? encoded : encoded.map { ~$0 }
    }
}
