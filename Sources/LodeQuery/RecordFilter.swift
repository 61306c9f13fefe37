import Foundation
import LodeCodec
import LodeStore

/// The conditions of a query that a model's generated reader checks on a record's fields before the
/// record is decoded: a record whose field fails one is passed over without building its object.
///
/// It only ever rejects: a record it cannot decide on (a field missing, out of order, or not reading
/// as the property's type) is decoded and checked by the predicates as before, and every record it
/// lets through is checked by them too. A condition is a conjunct of the predicates (see
/// ``PredicateAnalysis``), so a record failing it fails the query: what the results hold does not
/// depend on the filter, only how many objects are decoded to find them.
struct RecordFilter {
    /// A condition on one field, read by the type's own reader.
    private struct Check {
        var field: Int
        var passes: (inout RecordReader) throws -> Bool
    }

    private let names: RecordFieldNames
    /// By field, in declared order (a record is read forward once).
    private let checks: [Check]

    /// The filter for `conditions` on a type with the generated `codec`; nil when none of them is
    /// on a stored property its reader reads alone.
    init?<Element>(conditions: [Condition], codec: RecordCodec<Element>?) {
        guard let codec else { return nil }
        var checks: [Check] = []
        for condition in conditions {
            guard let keyPath = condition.keyPath, let field = codec.field(of: keyPath),
                let passes = Self.check(condition, valueType: type(of: keyPath).valueType)
            else { continue }
            checks.append(Check(field: field, passes: passes))
        }
        guard !checks.isEmpty else { return nil }
        self.names = codec.fields
        // Stable: two conditions on one field are checked on the one value, in the order given.
        self.checks = checks.enumerated().sorted {
            ($0.element.field, $0.offset) < ($1.element.field, $1.offset)
        }
        .map(\.element)
    }

    /// Whether the record fails a condition. False when it passes them all, and when the filter
    /// cannot tell (the object's decode and the predicates decide, and report a damaged record).
    func rejects(_ record: UnsafeRawBufferPointer) -> Bool {
        do {
            var reader = try RecordReader(record, names: names)
            var index = 0
            while index < checks.count {
                let field = checks[index].field
                guard try reader.seek(field: field) else { return false }
                let start = reader.position
                // Every check of this field reads its value from the same place.
                repeat {
                    reader.rewind(to: start)
                    guard try checks[index].passes(&reader) else { return true }
                    index += 1
                } while index < checks.count && checks[index].field == field
            }
            return false
        } catch {
            return false
        }
    }

    // MARK: Checks

    /// A check of `condition` on a value of `valueType`, or nil when the condition's constant is not
    /// of that type or the type cannot be compared so.
    private static func check(_ condition: Condition, valueType: Any.Type) -> (
        (inout RecordReader) throws -> Bool
    )? {
        switch condition {
        case .compare(_, .equal, let constant):
            guard let type = valueType as? any (Equatable & Decodable).Type else { return nil }
            return equal(type, constant)
        case .compare(_, let comparison, let constant):
            guard let type = valueType as? any (Comparable & Decodable).Type else { return nil }
            return compare(type, comparison, constant)
        case .membership(_, let values):
            guard let type = valueType as? any (Equatable & Decodable).Type else { return nil }
            return member(type, values)
        case .prefix(_, let prefix):
            guard valueType == String.self else { return nil }
            return { reader in try String(recordValue: &reader).starts(with: prefix) }
        case .opaque:
            return nil
        }
    }

    private static func equal<V: Equatable & Decodable>(_ type: V.Type, _ constant: any Encodable)
        -> ((inout RecordReader) throws -> Bool)?
    {
        guard let constant = constant as? V else { return nil }
        if let typed = typedCheck(.equal, constant) { return typed }
        let read = RecordReader.valueReader(V.self)
        return { reader in try read(&reader) == constant }
    }

    /// A comparison with `constant` read by the value type's own reader, for the types conditions
    /// mostly hold: checks written for the concrete type, with no generic value, witness or
    /// metadata per record (the generic checks cost about as much as skipping to the field).
    private static func typedCheck<V>(_ comparison: Condition.Comparison, _ constant: V) -> (
        (inout RecordReader) throws -> Bool
    )? {
        // By the property's type exactly (a cast of the value would also unwrap an optional's).
        func typed<W>(_ type: W.Type) -> W { unsafeBitCast(constant, to: W.self) }
        switch V.self {
        case is Int.Type: return ordered(comparison, typed(Int.self))
        case is Double.Type: return ordered(comparison, typed(Double.self))
        case is String.Type: return ordered(comparison, typed(String.self))
        case is Date.Type: return ordered(comparison, typed(Date.self))
        case is Int64.Type: return ordered(comparison, typed(Int64.self))
        case is UInt64.Type: return ordered(comparison, typed(UInt64.self))
        case is Bool.Type where comparison == .equal:
            let constant = typed(Bool.self)
            return { reader in try Bool(recordValue: &reader) == constant }
        default: return nil
        }
    }

    /// `comparison` with `constant`, specialized for `W` where it is called.
    private static func ordered<W: RecordValue & Comparable>(
        _ comparison: Condition.Comparison, _ constant: W
    )
        -> (inout RecordReader) throws -> Bool
    {
        switch comparison {
        case .equal: return { reader in try W(recordValue: &reader) == constant }
        case .less: return { reader in try W(recordValue: &reader) < constant }
        case .lessOrEqual: return { reader in try W(recordValue: &reader) <= constant }
        case .greater: return { reader in try W(recordValue: &reader) > constant }
        case .greaterOrEqual: return { reader in try W(recordValue: &reader) >= constant }
        }
    }

    private static func compare<V: Comparable & Decodable>(
        _ type: V.Type, _ comparison: Condition.Comparison, _ constant: any Encodable
    ) -> ((inout RecordReader) throws -> Bool)? {
        guard let constant = constant as? V else { return nil }
        if let typed = typedCheck(comparison, constant) { return typed }
        let read = RecordReader.valueReader(V.self)
        switch comparison {
        case .equal: return { reader in try read(&reader) == constant }
        case .less: return { reader in try read(&reader) < constant }
        case .lessOrEqual: return { reader in try read(&reader) <= constant }
        case .greater: return { reader in try read(&reader) > constant }
        case .greaterOrEqual: return { reader in try read(&reader) >= constant }
        }
    }

    private static func member<V: Equatable & Decodable>(_ type: V.Type, _ values: [any Encodable])
        -> ((inout RecordReader) throws -> Bool)?
    {
        var members: [V] = []
        for value in values {
            guard let member = value as? V else { return nil }
            members.append(member)
        }
        let read = RecordReader.valueReader(V.self)
        return { reader in members.contains(try read(&reader)) }
    }
}
