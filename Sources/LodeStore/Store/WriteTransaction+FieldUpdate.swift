import Foundation
import LMDB
import LodeCodec

extension WriteTransaction {
    /// Changes one property of the object with primary key `key` and returns its new value.
    ///
    /// For a generated model (the model macro's) the property's field is read and replaced in the
    /// stored record: the rest of the object is neither decoded nor encoded, and only the indexes on
    /// that property change. The record is the one a whole update would write, byte for byte. Where
    /// that cannot be — the property is the primary key, a link, part of a compound index, set to nil,
    /// or missing from the record (written by an older version) — and for other types, this is
    /// ``update(_:key:_:)`` with `body` applied to the property.
    ///
    /// ```swift
    /// try store.write { tx in try tx.update(Todo.self, key: id, \.priority) { $0 += 1 } }
    /// ```
    ///
    /// - Complexity: O((1 + *j*) log *N*) for the *j* indexes on the property, and one field decode and
    ///   encode.
    /// - Throws: ``LodeError/objectNotFound(type:key:)`` when there is none,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the field does not decode,
    ///   ``LodeError/uniqueViolation(type:index:value:)``, and what ``update(_:key:_:)`` throws.
    @discardableResult
    public func update<T: Persistable, Key: Encodable, V: Codable>(
        _ type: T.Type, key: Key, _ keyPath: WritableKeyPath<T, V>, _ body: (inout V) throws -> Void
    ) throws -> V {
        let state = try typeState(T.self)
        let keyBytes = try KeyEncoder().encode(key)
        func whole() throws -> V {
            try update(T.self, key: key) { try body(&$0[keyPath: keyPath]) }[keyPath: keyPath]
        }
        guard let codec = T.schema.recordCodec, let field = codec.field(of: keyPath),
            let records = state.records, keyPath != T.schema.primaryKeyPath
        else { return try whole() }
        let name = codec.fields.names[field]
        // Links and compound indexes read more than this field: the whole object decides.
        if state.links.contains(where: { $0.definition.field == name })
            || state.indexes.contains(where: {
                $0.definition.fields.count > 1 && $0.definition.fields.contains(name)
            })
        {
            return try whole()
        }
        guard let old = try lmdb.get(keyBytes, in: records) else {
            throw LodeError.objectNotFound(type: T.schema.typeName, key: "\(key)")
        }
        let located: (start: Int, end: Int, value: V)? = try old.withUnsafeBytes { record in
            do {
                var reader = try RecordReader(record, names: codec.fields)
                guard try reader.seek(field: field) else { return nil }
                let start = reader.position
                let value = try RecordReader.valueReader(V.self)(&reader)
                return (start, reader.position, value)
            } catch {
                let error = RecordDecodingError.from(error)
                throw LodeError.recordDoesNotDecode(
                    type: T.schema.typeName, key: KeyDescription.describe(keyBytes),
                    field: error.field.isEmpty ? name : error.field, reason: error.reason)
            }
        }
        // A record of an older version without the field: its default comes with the whole object.
        guard let (start, end, oldValue) = located else { return try whole() }
        var value = oldValue
        try body(&value)
        let scratch = RecordBuffer(capacity: 64)
        var writer = RecordWriter(valueInto: scratch)
        do {
            try RecordWriter.valueWriter(V.self)(value, &writer)
        } catch {
            throw LodeError.recordDoesNotEncode(type: T.schema.typeName, reason: "\(error)")
        }
        let newValue = writer.writtenBytes
        // Nil is left out of a record, not written as null: the whole object writes that.
        if newValue.first == 0xf6 { return try whole() }
        var record = Array(old[..<start])
        record.append(contentsOf: newValue)
        record.append(contentsOf: old[end...])
        let changed = !old[start..<end].elementsEqual(newValue)
        // Indexes on the property: checked first (a violation changes nothing), then moved.
        let slots = state.indexes.indices.filter { state.indexes[$0].definition.fields == [name] }
        var moves: [(slot: Int, old: [UInt8], new: [UInt8])] = []
        if changed {
            for slot in slots {
                let before = IndexKeyLimit.stored(try KeyEncoder().encode(oldValue))
                let after = IndexKeyLimit.stored(try KeyEncoder().encode(value))
                guard before != after else { continue }
                let index = state.indexes[slot]
                if index.definition.isUnique, let owner = try lmdb.get(after, in: index.database),
                    owner != keyBytes
                {
                    throw LodeError.uniqueViolation(
                        type: T.schema.typeName, index: index.definition.name, value: "\(value)")
                }
                moves.append((slot, before, after))
            }
        }
        try lmdbWrite.put(record, forKey: keyBytes, in: records)
        for move in moves {
            let index = state.indexes[move.slot]
            try removeIndexEntry(index, key: move.old, primaryKey: keyBytes)
            if index.definition.isUnique {
                try lmdbWrite.put(keyBytes, forKey: move.new, in: index.database, flags: .noOverwrite)
            } else {
                try lmdbWrite.put(keyBytes, forKey: move.new, in: index.database)
            }
        }
        // A value of another kind than the field held (null before, say) is a shape to note.
        if FieldKind.of(initialByte: old[start]) != FieldKind.of(initialByte: newValue[0]) {
            try record.withUnsafeBytes { try noteFields(of: $0, key: keyBytes, state: state, known: nil) }
        }
        pendingChanges.record(
            type: state.typeName, key: keyBytes, existedBefore: true, existsAfter: true,
            fields: changed ? [name] : [])
        return value
    }
}
