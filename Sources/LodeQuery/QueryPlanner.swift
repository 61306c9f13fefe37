import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

package enum QueryPlanner {
    /// Value types whose key encoding is equal exactly when `==` holds (so an index lookup needs no
    /// re-check).
    static func equalityIsExact(_ type: Any.Type) -> Bool {
        let base = unwrapOptional(type)
        let exact: [Any.Type] = [
            Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self,
            UInt32.self, UInt64.self, String.self, Bool.self, UUID.self, Date.self,
        ]
        if exact.contains(where: { $0 == base }) { return true }
        if let raw = base as? any RawRepresentable.Type {
            return rawValueIsExact(raw)
        }
        return false
    }

    private static func rawValueIsExact<R: RawRepresentable>(_ type: R.Type) -> Bool {
        let raw: Any.Type = R.RawValue.self
        return raw == String.self || raw == Int.self
    }

    /// Value types whose key encoding sorts exactly like `<` (so an index range needs no re-check).
    static func rangeIsExact(_ type: Any.Type) -> Bool {
        let ordered: [Any.Type] = [
            Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self,
            UInt32.self, UInt64.self, String.self, Date.self,
        ]
        return ordered.contains { $0 == type }
    }

    static func unwrapOptional(_ type: Any.Type) -> Any.Type {
        (type as? any OptionalProtocol.Type)?.wrappedType ?? type
    }

    static func encode(_ value: any Encodable) throws -> [UInt8] { try KeyEncoder().encode(value) }

    /// A candidate way to answer the conditions on one key (the primary key or an index).
    struct Candidate {
        var score: Int
        var ranges: [KeyRange]
        var access: QueryPlan.Access
        var coveredConditions: Int
        var exact: Bool
        /// True when every range is one whole key (equalities, or a membership, on every component):
        /// what a database whose keys are stored hashed can answer.
        var wholeKeys = false
    }

    /// Builds the ranges for a key made of `components` (key paths with their value types), using
    /// equalities on a leading run of components and then one more condition.
    static func candidate(
        components: [(AnyKeyPath, Any.Type)], conditions: [Condition], name: String?, unique: Bool
    ) throws -> Candidate? {
        var prefix: [UInt8] = []
        var used = 0
        var exact = true
        var equalities = 0
        for (keyPath, type) in components {
            let mine = conditions.filter { $0.keyPath == keyPath }
            if let equal = mine.first(where: {
                if case .compare(_, .equal, _) = $0 { return true } else { return false }
            }),
                case .compare(_, _, let value) = equal
            {
                prefix += try encode(value)
                used += mine.count
                // Other conditions on the same property are left to the re-check.
                if mine.count > 1 || !equalityIsExact(type) { exact = false }
                equalities += 1
                continue
            }
            var ranges: [KeyRange] = []
            var access: QueryPlan.Access
            var score: Int
            if let membership = mine.first(where: {
                if case .membership = $0 { return true } else { return false }
            }),
                case .membership(_, let values) = membership
            {
                let encoded = Set(try values.map(encode)).sorted { $0.lexicographicallyPrecedes($1) }
                ranges = encoded.map { KeyRange(prefix: prefix + $0) }
                access =
                    name.map { .indexLookup(index: $0, count: ranges.count) }
                    ?? .primaryKeyLookup(count: ranges.count)
                score = 40 * equalities + 30
                used += 1
                if mine.count > 1 || !equalityIsExact(type) { exact = false }
                if equalities == components.count - 1 {
                    return Candidate(
                        score: score, ranges: ranges, access: access, coveredConditions: used, exact: exact,
                        wholeKeys: true)
                }
            } else if let prefixCondition = mine.first(where: {
                if case .prefix = $0 { return true } else { return false }
            }),
                case .prefix(_, let text) = prefixCondition
            {
                ranges = [KeyRange(prefix: prefix + KeyEncoder.stringPrefixBytes(text))]
                access = name.map { .indexPrefix(index: $0) } ?? .primaryKeyRange
                score = 40 * equalities + 10
                used += 1
                exact = false  // Character-wise `starts(with:)` differs from a byte prefix at combining marks
            } else {
                var range = KeyRange(prefix: prefix)
                var bounds = 0
                for condition in mine {
                    guard case .compare(_, let op, let value) = condition else { continue }
                    let bytes = prefix + (try encode(value))
                    switch op {
                    case .greater, .greaterOrEqual:
                        if range.lower == nil || range.lower!.lexicographicallyPrecedes(bytes) {
                            range.lower = bytes
                            range.lowerInclusive = op == .greaterOrEqual
                        }
                    case .less, .lessOrEqual:
                        if range.upper == nil || bytes.lexicographicallyPrecedes(range.upper!) {
                            range.upper = bytes
                            range.upperInclusive = op == .lessOrEqual
                        }
                    case .equal:
                        break
                    }
                    bounds += 1
                }
                guard bounds > 0 else {
                    // No condition on this component: the equalities before it are the whole key range.
                    if equalities == 0 { return nil }
                    let access: QueryPlan.Access =
                        name.map { .indexLookup(index: $0, count: 1) } ?? .primaryKeyLookup(count: 1)
                    return Candidate(
                        score: 40 * equalities, ranges: [KeyRange(prefix: prefix)], access: access,
                        coveredConditions: used, exact: exact)
                }
                ranges = [range]
                access = name.map { .indexRange(index: $0) } ?? .primaryKeyRange
                score = 40 * equalities + 15
                used += bounds
                if bounds != mine.count || !rangeIsExact(type) { exact = false }
            }
            return Candidate(
                score: score, ranges: ranges, access: access, coveredConditions: used, exact: exact)
        }
        // Every component has an equality: one exact key.
        let full = unique || name == nil
        let access: QueryPlan.Access =
            name.map { .indexLookup(index: $0, count: 1) } ?? .primaryKeyLookup(count: 1)
        return Candidate(
            score: 40 * equalities + (full ? 100 : 0), ranges: [KeyRange(prefix: prefix)],
            access: access, coveredConditions: used, exact: exact, wholeKeys: true)
    }

    package static func plan<T: Persistable>(
        state: TypeState<T>, conditions: [Condition], sort: [SortDescriptor<T>]
    ) throws -> ExecutionPlan {
        let schema = state.schema
        let analysable = conditions.filter { $0.keyPath != nil }
        let opaque = conditions.count - analysable.count
        let pkPath = schema.primaryKeyPath as AnyKeyPath

        // In an encrypted store the keys of records and indexes are stored hashed: only whole keys
        // are found, and nothing comes in key order (results in primary-key order are sorted).
        let recordsOrdered = state.records?.isOrdered ?? true
        var best: (Candidate, Database?, String?)?
        if let pk = try candidate(
            components: [(pkPath, schema.primaryKeyType)], conditions: analysable, name: nil, unique: true),
            recordsOrdered || pk.wholeKeys
        {
            best = (pk, nil, nil)
        }
        for index in state.indexes {
            let definition = index.definition
            let components = zip(definition.keyPaths, definition.componentTypes).map {
                ($0 as AnyKeyPath, $1)
            }
            guard
                let found = try candidate(
                    components: components, conditions: analysable, name: definition.name,
                    unique: definition.isUnique),
                index.database.isOrdered || found.wholeKeys
            else { continue }
            if best == nil || found.score > best!.0.score {
                best = (found, index.database, definition.name)
            }
        }

        // Ordering: can the sort be read off the primary key or an index?
        var ordering: QueryPlan.Ordering = .primaryKey(reversed: false)
        var sortIndex: TypeState<T>.LiveIndex?
        var sortReversed = false
        if let first = sort.first, sort.count == 1, first.stringComparator == nil,
            let sortPath = first.keyPath
        {
            sortReversed = first.order == .reverse
            if sortPath as AnyKeyPath == pkPath, keyOrderMatchesComparable(schema.primaryKeyType) {
                ordering = .primaryKey(reversed: sortReversed)
            } else if let index = state.indexes.first(where: {
                $0.database.isOrdered && $0.definition.keyPaths.count == 1
                    && $0.definition.keyPaths[0] as AnyKeyPath == sortPath as AnyKeyPath
                    && $0.definition.orderMatchesComparable[0]
            }) {
                sortIndex = index
                ordering = .index(index.definition.name, reversed: sortReversed)
            } else {
                ordering = .inMemory
            }
        } else if !sort.isEmpty {
            ordering = .inMemory
        }

        let exactCover: (Candidate) -> Bool = {
            $0.exact && $0.coveredConditions == analysable.count && opaque == 0
        }
        if let sortIndex {
            // Prefer walking the sort index unless another path narrows the candidates far better.
            if let chosen = best, chosen.2 == sortIndex.definition.name {
                return ExecutionPlan(
                    plan: QueryPlan(
                        access: chosen.0.access, ordering: ordering, rechecksPredicate: !exactCover(chosen.0)),
                    source: .index(sortIndex.database, chosen.0.ranges), covered: exactCover(chosen.0))
            }
            // An equality narrows better than any walk; a range or prefix on another key does not.
            if best == nil || best!.0.score < 40 {
                return ExecutionPlan(
                    plan: QueryPlan(
                        access: .fullScan, ordering: ordering, rechecksPredicate: !conditions.isEmpty),
                    source: .index(sortIndex.database, [KeyRange()]), covered: conditions.isEmpty)
            }
            ordering = .inMemory
        }
        guard let (chosen, database, name) = best else {
            if case .index = ordering { ordering = .inMemory }
            return ExecutionPlan(
                plan: QueryPlan(
                    access: .fullScan, ordering: ordering, rechecksPredicate: !conditions.isEmpty),
                source: .records([KeyRange()]), covered: conditions.isEmpty)
        }
        if case .primaryKey = ordering, name != nil {
            ordering = sort.isEmpty ? .primaryKey(reversed: false) : .inMemory
        }
        if let database {
            return ExecutionPlan(
                plan: QueryPlan(
                    access: chosen.access, ordering: ordering, rechecksPredicate: !exactCover(chosen)),
                source: .index(database, chosen.ranges), covered: exactCover(chosen))
        }
        let source: ExecutionPlan.Source
        if case .primaryKeyLookup = chosen.access {
            source = .primaryKeys(chosen.ranges.map(\.prefix))
        } else {
            source = .records(chosen.ranges)
        }
        return ExecutionPlan(
            plan: QueryPlan(
                access: chosen.access, ordering: ordering, rechecksPredicate: !exactCover(chosen)),
            source: source, covered: exactCover(chosen))
    }
}

/// Lets the planner see through `Optional` types.
protocol OptionalProtocol {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalProtocol {
    static var wrappedType: Any.Type { Wrapped.self }
}
