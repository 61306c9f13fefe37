import Foundation
import LodeCodec
import LodeStore

/// The values an in-memory sort compares, read once per object instead of through the sort
/// descriptors' key paths in every comparison; for a model of the macro they can be read from each
/// record's fields instead, so that a sort with a limit decodes only the objects it keeps.
///
/// Only descriptors that compare a stored property of a `Comparable` type with `<` become columns —
/// those made from a key path alone, as ``Results/sorted(by:ascending:)`` makes them, a `String`'s
/// included (on Linux `SortDescriptor(\.title)` compares strings with `<`); a descriptor with a
/// string comparator (`.lexical`, a localized one) is left to the descriptor. Comparisons, ties and
/// order are the descriptors' own.
final class SortColumns<Element: Persistable> {
    // Not generic over the element: an array of a protocol with the element as a primary associated
    // type would have its metadata looked up per access in this unspecialized code.
    private let columns: [any SortColumn]
    /// The names of the type's record fields, when every column has a field.
    private let names: RecordFieldNames?

    /// Columns for `descriptors`, or nil when one of them is not on such a property.
    init?(_ descriptors: [SortDescriptor<Element>], codec: RecordCodec<Element>?) {
        guard !descriptors.isEmpty else { return nil }
        var columns: [any SortColumn] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath,
                let column = Self.column(keyPath, descriptor: descriptor, codec: codec)
            else { return nil }
            columns.append(column)
        }
        self.columns = columns
        self.names = columns.allSatisfy { $0.field != nil } ? codec?.fields : nil
    }

    private static func column(
        _ keyPath: PartialKeyPath<Element>, descriptor: SortDescriptor<Element>, codec: RecordCodec<Element>?
    )
        -> (any SortColumn)?
    {
        let valueType = type(of: keyPath).valueType
        guard let comparable = valueType as? any (Comparable & Decodable).Type else { return nil }
        if valueType == String.self {
            // A string's descriptor may compare with a string comparator instead of `<`: a column
            // only for the descriptor a key path alone makes (`SortDescriptor` is equatable by its
            // key path, comparison and order).
            guard let keyPath = keyPath as? KeyPath<Element, String> else { return nil }
            // The descriptor's key path is `Sendable` (its initializers ask for it); `keyPath`
            // hands it back as a partial key path, and a key path is immutable.
            let sendable = unsafeBitCast(keyPath, to: (any KeyPath<Element, String> & Sendable).self)
            guard descriptor == SortDescriptor(sendable, order: descriptor.order) else { return nil }
        }
        func make<V: Comparable & Decodable>(_ type: V.Type) -> (any SortColumn)? {
            guard let keyPath = keyPath as? KeyPath<Element, V> else { return nil }
            return Column(
                keyPath: keyPath, field: codec?.field(of: keyPath), reversed: descriptor.order == .reverse)
        }
        return make(comparable)
    }

    /// Whether the values can be read from records (every column is a field of a model of the macro).
    var readsRecords: Bool { names != nil }

    /// Reads the values of `object`, the next one.
    func append(_ object: Element) {
        withUnsafePointer(to: object) { object in
            for column in columns { column.append(object: UnsafeRawPointer(object)) }
        }
    }

    /// Reads the values of the next object from its record; false (and nothing kept for it) when a
    /// field is missing, out of the order the columns read them in, or does not read.
    func append(record: UnsafeRawBufferPointer) -> Bool {
        guard let names else { return false }
        for position in 0..<columns.count {
            let column = columns[position]
            guard let field = column.field, Self.read(column, field: field, of: record, names: names) else {
                for read in 0..<position { columns[read].removeLast() }
                return false
            }
        }
        return true
    }

    /// Reads `column`'s value from `record`'s `field`; false when it cannot.
    private static func read(
        _ column: any SortColumn, field: Int, of record: UnsafeRawBufferPointer,
        names: RecordFieldNames
    ) -> Bool {
        do {
            var reader = try RecordReader(record, names: names)
            guard try reader.seek(field: field) else { return false }
            try column.append(&reader)
            return true
        } catch {
            return false
        }
    }

    /// Drops every value read.
    func removeAll() {
        for column in columns { column.removeAll() }
    }

    /// The positions of the objects read, sorted by the columns; objects the columns tie on in the
    /// order of their primary keys, `keys` (one per object, in the same order).
    func order(tiesBy keys: KeyList) -> [Int] {
        (0..<keys.count).sorted { a, b in
            switch compare(a, b) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame: return keys.precedes(a, b)
            }
        }
    }

    /// How the objects at `a` and `b` compare, by the first column in which they differ.
    private func compare(_ a: Int, _ b: Int) -> ComparisonResult {
        for column in columns {
            let order = column.compare(a, b)
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }
}

/// One sort descriptor's values.
private protocol SortColumn: AnyObject {
    /// The record field of the property, if the type has a generated codec.
    var field: Int? { get }
    /// Reads the value of the object at `object` (of the column's root type).
    func append(object: UnsafeRawPointer)
    /// Reads the next value at the reader's position.
    func append(_ reader: inout RecordReader) throws
    func removeLast()
    func removeAll()
    func compare(_ a: Int, _ b: Int) -> ComparisonResult
}

/// A column's values, in memory of their own (an array of a generic element would look up its
/// metadata per append here).
private final class Column<Root, Value: Comparable & Decodable>: SortColumn {
    let keyPath: KeyPath<Root, Value>
    let field: Int?
    let reversed: Bool
    let read: (inout RecordReader) throws -> Value
    let values = ObjectCollector<Value>()

    init(keyPath: KeyPath<Root, Value>, field: Int?, reversed: Bool) {
        self.keyPath = keyPath
        self.field = field
        self.reversed = reversed
        self.read = RecordReader.valueReader(Value.self)
    }

    func append(object: UnsafeRawPointer) {
        values.append(object.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath])
    }

    func append(_ reader: inout RecordReader) throws { values.append(try read(&reader)) }

    func removeLast() { values.removeLast() }
    func removeAll() { values.removeAll() }

    func compare(_ a: Int, _ b: Int) -> ComparisonResult {
        let (x, y) = (values[a], values[b])
        if x < y { return reversed ? .orderedDescending : .orderedAscending }
        if y < x { return reversed ? .orderedAscending : .orderedDescending }
        return .orderedSame
    }
}
