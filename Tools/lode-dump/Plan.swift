import Foundation
import Lode

/// How `dump` finds its candidates: every record, or the entries of one index.
enum Plan {
    case scan
    /// Exact index keys (an equality or an `in` list).
    case keys(index: String, [[UInt8]])
    /// A range of index keys; nil bounds are open.
    case range(index: String, lower: [UInt8]?, lowerInclusive: Bool, upper: [UInt8]?, upperInclusive: Bool)
}

/// The kind of a value as far as key encoding goes, or nil for kinds not planned over.
func keyKind(_ value: CBORValue) -> String? {
    switch value {
    case .unsigned, .negative: "integer"
    case .float: "float"
    case .text: "text"
    case .bool: "bool"
    default: nil
    }
}

/// Picks an index for `filter` the way the library's planner would for these shapes: a conjunct
/// `FIELD op value` (not `!=`) or `FIELD in [...]` over a single-field index, when the literal has the
/// kind the field holds in the records (so its key bytes order like the stored ones). Candidates are
/// always filtered again by the whole expression.
func plan(_ filter: Expression?, type: StoredType, sampleKind: (String) -> String?) throws -> (Plan, String) {
    guard let filter else { return (.scan, "scan every \(type.name) record") }
    var conjuncts: [Expression] = []
    func flatten(_ expression: Expression) {
        if case .and(let lhs, let rhs) = expression {
            flatten(lhs)
            flatten(rhs)
        } else {
            conjuncts.append(expression)
        }
    }
    flatten(filter)
    func index(on field: String) -> StoredIndex? { type.indexes.first { $0.fields == [field] } }
    func key(_ value: CBORValue) throws -> [UInt8] { try KeyEncoder().encode(value) }
    for conjunct in conjuncts {
        switch conjunct {
        case .comparison(let field, let op, let value) where op != "!=":
            guard let index = index(on: field) else { continue }
            let name = index.name
            if case .null = value {
                guard op == "==" else { continue }
                return (.keys(index: name, [try key(.null)]), "index \(type.name).\(name): \(field) == null")
            }
            guard let kind = keyKind(value), kind == sampleKind(field) else { continue }
            let bytes = try key(value)
            let description = "index \(type.name).\(name): \(field) \(op) \(value.json)"
            switch op {
            case "==": return (.keys(index: name, [bytes]), description)
            case "<", "<=":
                // Nulls sort first in an index; a comparison with a value never matches them.
                let afterNull = try key(.null) + [0xff]
                return (
                    .range(
                        index: name, lower: afterNull, lowerInclusive: true, upper: bytes,
                        upperInclusive: op == "<="), description
                )
            default:
                return (
                    .range(
                        index: name, lower: bytes, lowerInclusive: op == ">=", upper: nil,
                        upperInclusive: false), description
                )
            }
        case .membership(let field, let values):
            guard let index = index(on: field),
                values.allSatisfy({ keyKind($0) != nil && keyKind($0) == sampleKind(field) })
            else { continue }
            let keys = try Set(values.map(key)).sorted { $0.lexicographicallyPrecedes($1) }
            return (
                .keys(index: index.name, keys),
                "index \(type.name).\(index.name): \(field) in \(values.count) values"
            )
        default: continue
        }
    }
    return (.scan, "scan every \(type.name) record (no index answers the expression)")
}

/// The primary keys a plan yields, in primary-key order.
func candidates(_ plan: Plan, type: String, transaction tx: Transaction) throws -> [[UInt8]]? {
    var keys: [[UInt8]] = []
    switch plan {
    case .scan: return nil
    case .keys(let index, let wanted):
        for key in wanted {
            for entry in try tx.storedIndexEntries(of: type, index: index, from: key) {
                guard entry.key == key else { break }
                keys.append(entry.primaryKey)
            }
        }
    case .range(let index, let lower, let lowerInclusive, let upper, let upperInclusive):
        for entry in try tx.storedIndexEntries(of: type, index: index, from: lower) {
            if let lower, !lowerInclusive, entry.key == lower { continue }
            if let upper {
                if upperInclusive
                    ? !(entry.key.lexicographicallyPrecedes(upper) || entry.key == upper)
                    : !entry.key.lexicographicallyPrecedes(upper)
                {
                    break
                }
            }
            keys.append(entry.primaryKey)
        }
    }
    return Set(keys).sorted { $0.lexicographicallyPrecedes($1) }
}
