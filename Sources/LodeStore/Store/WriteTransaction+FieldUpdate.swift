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
        try updateField(
            T.self, key: key, keyPath, body, read: RecordReader.valueReader(V.self),
            write: RecordWriter.valueWriter(V.self))
    }

    /// ``update(_:key:_:_:)-(_,_,WritableKeyPath<T,V>,_)`` for a property whose type reads and writes
    /// itself (``RecordValue``: numbers, text, dates, arrays…), without looking that up per call.
    ///
    /// - Complexity: as ``update(_:key:_:_:)-(_,_,WritableKeyPath<T,V>,_)``.
    /// - Throws: as ``update(_:key:_:_:)-(_,_,WritableKeyPath<T,V>,_)``.
    @discardableResult
    public func update<T: Persistable, Key: Encodable, V: RecordValue>(
        _ type: T.Type, key: Key, _ keyPath: WritableKeyPath<T, V>, _ body: (inout V) throws -> Void
    ) throws -> V {
        try updateField(
            T.self, key: key, keyPath, body, read: { try V(recordValue: &$0) },
            write: { try $0.writeRecordValue(to: &$1) })
    }

    private func updateField<T: Persistable, Key: Encodable, V: Codable>(
        _ type: T.Type, key: Key, _ keyPath: WritableKeyPath<T, V>, _ body: (inout V) throws -> Void,
        read: (inout RecordReader) throws -> V, write: (V, inout RecordWriter) throws -> Void
    ) throws -> V {
        let state = try typeState(T.self)
        let keyBytes = try KeyEncoder().encode(key)
        func whole() throws -> V {
            try update(T.self, key: key) { try body(&$0[keyPath: keyPath]) }[keyPath: keyPath]
        }
        // The indexes a newer version declared are read from whole records: the whole update.
        guard !state.hasKeptIndexes, let plans = state.fieldPlans, let records = state.records else {
            return try whole()
        }
        let field: Int
        if let last = lastUpdatedField, last.keyPath === keyPath, last.state === state {
            field = last.field
        } else {
            guard let found = plans.fieldsByKeyPath[keyPath] else { return try whole() }
            field = found
            lastUpdatedField = (state, keyPath, found)
        }
        guard let slots = plans.slots[field] else { return try whole() }
        let fields = plans.fields
        let name = fields.names[field]
        // The stored record is read in place for the field's place and value and copied; `body` — app
        // code, which may write in this transaction — runs once the map's memory is no longer
        // borrowed. The new record is made in another buffer. Unspecialized generic code: the values
        // live in a temporary allocation, not in optionals or tuples of `V` (each would look up its
        // type's metadata per call).
        let (stored, made) = (fieldBuffer, recordBuffer)
        return try withUnsafeTemporaryAllocation(of: V.self, capacity: 2) { values in
            let (oldValue, value) = (values.baseAddress!, values.baseAddress! + 1)
            var initialized = false
            defer { if initialized { values.baseAddress!.deinitialize(count: 2) } }
            var (start, end, length) = (0, 0, 0)
            let found = try lmdb.withValue(forKey: keyBytes, in: records) { old -> Bool in
                do {
                    var reader = try RecordReader(old, names: fields)
                    guard try reader.seek(field: field) else { return false }
                    start = reader.position
                    oldValue.initialize(to: try read(&reader))
                    end = reader.position
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: T.schema.typeName, key: keyBytes, generated: error, field: name)
                }
                value.initialize(to: oldValue.pointee)
                initialized = true
                var copy = RecordWriter(valueInto: stored)
                copy.writeBytes(old)
                length = old.count
                return true
            }
            guard let found else { throw LodeError.objectNotFound(type: T.schema.typeName, key: "\(key)") }
            // A record of an older version without the field: its default comes with the whole object.
            guard found else { return try whole() }
            try body(&value.pointee)
            let old = stored.bytes(count: length)
            var writer = RecordWriter(valueInto: made)
            writer.writeBytes(UnsafeRawBufferPointer(rebasing: old[..<start]))
            do {
                try write(value.pointee, &writer)
            } catch {
                throw LodeError.recordDoesNotEncode(type: T.schema.typeName, reason: "\(error)")
            }
            let newValue = UnsafeRawBufferPointer(rebasing: writer.writtenBytes[start...])
            if newValue.first == 0xf6 {
                // Nil is left out of a record, not written as null: the whole object writes that (with
                // the value `body` made: it is not run twice).
                let changedValue = value.pointee
                return try update(T.self, key: key) { $0[keyPath: keyPath] = changedValue }[keyPath: keyPath]
            }
            writer.writeBytes(UnsafeRawBufferPointer(rebasing: old[end...]))
            let changed = !UnsafeRawBufferPointer(rebasing: old[start..<end]).elementsEqual(newValue)
            let kindChanged = FieldKind.of(initialByte: old[start]) != FieldKind.of(initialByte: newValue[0])
            let record = writer.writtenBytes
            // Indexes on the property: checked first (a violation changes nothing), then moved.
            var moves: [(slot: Int, old: [UInt8], new: [UInt8])] = []
            if changed {
                for slot in slots {
                    let before = IndexKeyLimit.stored(try KeyEncoder().encode(oldValue.pointee))
                    let after = IndexKeyLimit.stored(try KeyEncoder().encode(value.pointee))
                    guard before != after else { continue }
                    let index = state.indexSlots[slot]
                    if index.isUnique, let owner = try lmdb.get(after, in: index.database), owner != keyBytes
                    {
                        throw LodeError.uniqueViolation(
                            type: T.schema.typeName, index: state.indexes[slot].definition.name,
                            value: "\(value.pointee)")
                    }
                    moves.append((slot, before, after))
                }
            }
            try lmdbWrite.put(record, forKey: keyBytes, in: records)
            for move in moves {
                let index = state.indexSlots[move.slot]
                try removeIndexEntry(
                    in: index.database, unique: index.isUnique, key: move.old, primaryKey: keyBytes)
                if index.isUnique {
                    try lmdbWrite.put(keyBytes, forKey: move.new, in: index.database, flags: .noOverwrite)
                } else {
                    try lmdbWrite.put(keyBytes, forKey: move.new, in: index.database)
                }
            }
            // A value of another kind than the field held (null before, say) is a shape to note.
            if kindChanged { try noteFields(of: record, key: keyBytes, state: state, known: nil) }
            if !historyCaptureChecked { try prepareHistoryCapture() }
            pendingChanges.recordUpdate(
                type: state.typeName, key: keyBytes, field: changed ? name : nil,
                before: pendingChanges.capturesValues ? Array(old) : nil, after: record)
            return value.pointee
        }
    }
}
