import Foundation
import Lode
import LodeInspection
import LodeQuery

/// How `dump` and Lode Studio's tables find their candidates: every record, or key ranges of the
/// records (by primary key) or of one index.
package enum Plan: Sendable {
    /// Every record, in primary-key order.
    case scan
    /// Key ranges in the records database (`index` nil) or in an index: the query layer's
    /// ``KeyRange``, the ranges its planner walks.
    case ranges(index: String?, [KeyRange])
}

/// The kind of a value as far as key encoding goes, or nil for kinds not planned over.
package func keyKind(_ value: CBORValue) -> String? {
    switch value {
    case .unsigned, .negative: "integer"
    case .float: "float"
    case .text: "text"
    case .bool: "bool"
    default: nil
    }
}

/// Index bounds longer than this may meet truncated index keys (FORMAT.md, Length limits): their
/// first 500 bytes are kept, so shorter bounds order exactly like the full keys.
private let longestBound = 500

/// Picks the access path for `filter` the way the library's planner does: over the primary key or an
/// index (single or compound), the one whose leading fields the conjuncts fix with `==` the furthest,
/// then a range (`<`, `<=`, `>`, `>=`), an `in` list or a `hasPrefix` on the next field. A literal is
/// used only when it has the kind the field holds in the records (`sampleKind`), so its key bytes
/// order like the stored ones. Candidates are always filtered again by the whole expression.
///
/// With `exactIndexKeys` (an encrypted store, whose indexes find only exact keys by their keyed
/// hash) an index is used only where the conjuncts fix all its fields with `==` (or the last with an
/// `in` list): each range is then one whole index key, looked up exactly.
package func plan(
    _ filter: WhereExpression?, type: StoredType, exactIndexKeys: Bool = false,
    sampleKind: (String) -> String?
) throws -> (Plan, String) {
    guard let filter else { return (.scan, "scan every \(type.name) record") }
    var conjuncts: [WhereExpression] = []
    func flatten(_ expression: WhereExpression) {
        if case .all(let terms) = expression {
            for term in terms { flatten(term) }
        } else {
            conjuncts.append(expression)
        }
    }
    flatten(filter)
    func usable(_ value: CBORValue, for field: String) -> Bool {
        if case .null = value { return true }
        return keyKind(value) != nil && keyKind(value) == sampleKind(field)
    }
    func key(_ value: CBORValue) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try KeyEncoder().append(value, to: &bytes)
        return bytes
    }

    struct Candidate {
        var index: String?
        var ranges: [KeyRange]
        var score: Int
        var description: String
    }
    var best: Candidate?
    let sources: [(index: String?, fields: [String])] =
        [(nil, [type.primaryKey])] + type.indexes.map { ($0.name, $0.fields) }
    for source in sources {
        var prefix: [UInt8] = []
        var described: [String] = []
        var ranges: [KeyRange] = []
        var score = 0
        // Whether the ranges are whole keys: every field fixed by `==`, or the last by `in`.
        var exact = true
        fields: for (position, field) in source.fields.enumerated() {
            // An equality fixes this field and lets the next one be planned too.
            var fixed: CBORValue?
            for case .comparison(field, "==", let value) in conjuncts where usable(value, for: field) {
                fixed = value
                break
            }
            if let value = fixed {
                prefix += try key(value)
                described.append("\(field) == \(value.json)")
                score += 2
                continue
            }
            for conjunct in conjuncts {
                switch conjunct {
                case .membership(field, let values) where values.allSatisfy({ usable($0, for: field) }):
                    let keys = try Set(values.map { prefix + (try key($0)) })
                    ranges = keys.sorted { $0.lexicographicallyPrecedes($1) }.map { KeyRange(prefix: $0) }
                    described.append("\(field) in \(values.count) values")
                    score += 1
                    exact = position == source.fields.count - 1
                    break fields
                case .prefixed(field, let text) where sampleKind(field) == "text":
                    exact = false
                    // The text's key without its terminator.
                    ranges = [KeyRange(prefix: prefix + (try key(.text(text))).dropLast())]
                    described.append("\(field) hasPrefix \(CBORValue.text(text).json)")
                    score += 1
                    break fields
                default: continue
                }
            }
            // Ranges on this field: the tightest lower and upper bound the conjuncts give.
            var range = KeyRange(prefix: prefix)
            var bounded = false
            for case .comparison(field, let op, let value) in conjuncts
            where ["<", "<=", ">", ">="].contains(op) && usable(value, for: field) && value != .null {
                let bound = prefix + (try key(value))
                if op.hasPrefix("<") {
                    if range.upper.map({ bound.lexicographicallyPrecedes($0) }) ?? true {
                        range.upper = bound
                        range.upperInclusive = op == "<="
                    }
                } else if range.lower.map({ $0.lexicographicallyPrecedes(bound) }) ?? true {
                    range.lower = bound
                    range.lowerInclusive = op == ">="
                }
                described.append("\(field) \(op) \(value.json)")
                bounded = true
            }
            exact = false
            if bounded {
                if range.lower == nil {
                    // A comparison with a value never matches null, which sorts first.
                    range.lower = prefix + (try key(.null))
                    range.lowerInclusive = false
                }
                ranges = [range]
                score += 1
            }
            break
        }
        if ranges.isEmpty && score > 0 { ranges = [KeyRange(prefix: prefix)] }
        guard score > 0, !exactIndexKeys || source.index == nil || exact,
            ranges.allSatisfy({
                $0.prefix.count <= longestBound && ($0.lower?.count ?? 0) <= longestBound
                    && ($0.upper?.count ?? 0) <= longestBound
            })
        else { continue }
        // The primary key comes first on a tie: it needs no second lookup.
        if score > best?.score ?? 0 {
            let name = source.index.map { "index \(type.name).\($0)" } ?? "primary key of \(type.name)"
            best = Candidate(
                index: source.index, ranges: ranges, score: score,
                description: "\(name): \(described.joined(separator: " and "))")
        }
    }
    guard let best else { return (.scan, "scan every \(type.name) record (no index answers the expression)") }
    return (.ranges(index: best.index, best.ranges), best.description)
}

/// The plan for `filter` over `type`'s records in `tx`, the kind of each field taken from the first
/// records that hold it (a record that does not decode tells nothing about kinds: the reads after the
/// plan report it).
package func plan(_ filter: WhereExpression?, type: StoredType, in tx: Transaction) throws -> (Plan, String) {
    let sample = try tx.storedRecords(of: type.name, limit: 50).compactMap { try? $0.value(type: type.name) }
    // An encrypted store's indexes keep hashed keys: they find whole keys, and cannot be walked.
    return try plan(filter, type: type, exactIndexKeys: tx.store.isEncrypted) { field in
        sample.lazy.compactMap { $0.value(atPath: field) }.first { $0 != .null }.flatMap(keyKind)
    }
}

/// Calls `body` with the primary key of each entry of `index` in `range`, until it returns false:
/// the index walked over the range, or in an encrypted store (whose plans hold whole keys only, see
/// `exactIndexKeys`) the range's key found by its keyed hash.
package func forEachPrimaryKey(
    in range: KeyRange, of type: String, index: String, _ tx: Transaction,
    _ body: (_ primaryKey: [UInt8]) throws -> Bool
) throws {
    if tx.store.isEncrypted {
        try tx.forEachStoredIndexEntry(of: type, index: index, exactly: range.prefix, body)
        return
    }
    try tx.forEachStoredIndexEntry(of: type, index: index, from: range.forwardStart) { key, primaryKey in
        switch range.position(of: key) {
        case .before: true
        case .after: false
        case .inside: try body(primaryKey)
        }
    }
}

/// The records a plan yields, in primary-key order; nil for a scan.
package func candidates(_ plan: Plan, type: String, transaction tx: Transaction) throws -> [StoredRecord]? {
    guard case .ranges(let index, let ranges) = plan else { return nil }
    var records: [StoredRecord] = []
    if let index {
        var keys: Set<[UInt8]> = []
        for range in ranges {
            try forEachPrimaryKey(in: range, of: type, index: index, tx) {
                keys.insert($0)
                return true
            }
        }
        for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            if let record = try tx.storedRecord(of: type, key: key) { records.append(record) }
        }
        return records
    }
    for range in ranges {
        var start: [UInt8]? = range.forwardStart
        walk: while true {
            let batch = try tx.storedRecords(of: type, from: start, limit: 512)
            for record in batch {
                let position = range.position(of: record.key)
                if position == .before { continue }
                if position == .after { break walk }
                records.append(record)
            }
            guard batch.count == 512, let last = batch.last else { break }
            start = last.key + [0]
        }
    }
    return records
}
