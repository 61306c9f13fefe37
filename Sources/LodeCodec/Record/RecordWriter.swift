import Foundation

/// Writes a record for a type's generated code (see ``RecordCodable``): a CBOR map of the fields in
/// declared order, a `nil` optional left out — the bytes ``CBOREncoder`` writes for the type's
/// synthesized `Encodable` — and, as it goes, the record's shape (its field names and each value's
/// kind, as the catalog records them).
public struct RecordWriter {
    @usableFromInline var cbor: CBORWriter
    @usableFromInline let names: RecordFieldNames
    /// Where the map's head is, and how many fields were written.
    @usableFromInline var mapStart = 0
    @usableFromInline var fieldCount = 0
    /// The shape so far, and where the last field's value starts (its kind is folded in when the next
    /// field begins, or at the end), or -1.
    @usableFromInline var shape = FieldShape.basis
    @usableFromInline var valueStart = -1

    /// A writer of records whose fields are `names`, reusing `buffer`'s storage.
    public init(names: RecordFieldNames, buffer: [UInt8] = []) {
        var cbor = CBORWriter(capacity: 0)
        cbor.bytes = buffer
        cbor.bytes.removeAll(keepingCapacity: true)
        if cbor.bytes.capacity < 64 { cbor.bytes.reserveCapacity(128) }
        self.cbor = cbor
        self.names = names
        mapStart = 0
        cbor.bytes.append(0xa0)
        self.cbor = cbor
    }

    /// The record's bytes once every field is written.
    public var bytes: [UInt8] {
        mutating get {
            finish()
            return cbor.bytes
        }
    }

    /// The record's shape once every field is written: the hash the catalog keys record shapes by.
    public var recordShape: UInt64 {
        mutating get {
            finish()
            return shape
        }
    }

    /// Closes the record: the last field's kind joins the shape, the map gets its count.
    @usableFromInline
    mutating func finish() {
        foldPendingKind()
        if fieldCount >= 0 {
            cbor.patchCount(at: mapStart, major: 5, count: fieldCount)
            // Patched once: later calls only read.
            fieldCount = -1 - fieldCount
        }
    }

    @inlinable
    mutating func foldPendingKind() {
        if valueStart >= 0 {
            shape = FieldShape.adding(kind: FieldKind.of(initialByte: cbor.bytes[valueStart]), to: shape)
            valueStart = -1
        }
    }

    /// Starts field `field` (an index into the names): writes its name.
    @inlinable
    public mutating func beginField(_ field: Int) {
        foldPendingKind()
        let start = names.starts[field]
        let end = names.starts[field + 1]
        names.items.withUnsafeBufferPointer { items in
            cbor.append(UnsafeBufferPointer(rebasing: items[start..<end]))
            // The shape hashes the name's text, after its head.
            let headLength = RecordFieldNames.headLength(names.names[field].utf8.count)
            shape = FieldShape.adding(
                bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: items[start + headLength..<end])),
                to: shape)
        }
        fieldCount += 1
        valueStart = cbor.bytes.count
    }

    // MARK: Fields

    /// Writes field `field` with a value.
    /// - Throws: what a nested `Encodable` value throws.
    @inlinable
    public mutating func encode<V: RecordValue>(_ value: V, field: Int) throws {
        beginField(field)
        try value.writeRecordValue(to: &self)
    }

    /// Writes field `field` with an integer (throws nothing: every field's write is `try`'d alike).
    @inlinable
    public mutating func encode(_ value: Int, field: Int) throws {
        beginField(field)
        writeInteger(Int64(value))
    }

    /// Writes field `field` with text.
    @inlinable
    public mutating func encode(_ value: String, field: Int) throws {
        beginField(field)
        writeString(value)
    }

    /// Writes field `field` with a number.
    @inlinable
    public mutating func encode(_ value: Double, field: Int) throws {
        beginField(field)
        writeDouble(value)
    }

    /// Writes field `field` with a boolean.
    @inlinable
    public mutating func encode(_ value: Bool, field: Int) throws {
        beginField(field)
        writeBool(value)
    }

    /// Writes field `field` with an enum's raw value.
    public mutating func encode<V: RawRepresentable & Encodable>(_ value: V, field: Int) throws
    where V.RawValue: RecordValue {
        beginField(field)
        try value.rawValue.writeRecordValue(to: &self)
    }

    /// Writes field `field` with a nested `Encodable` value, through ``CBOREncoder``.
    public mutating func encode<V: Encodable>(_ value: V, field: Int) throws {
        beginField(field)
        try writeEncodable(value)
    }

    /// Writes field `field` when `value` is not nil (a nil optional is left out, as `Codable` does).
    @inlinable
    public mutating func encodeIfPresent<V: RecordValue>(_ value: V?, field: Int) throws {
        if let value { try encode(value, field: field) }
    }

    /// Writes field `field` with an enum's raw value when `value` is not nil.
    public mutating func encodeIfPresent<V: RawRepresentable & Encodable>(_ value: V?, field: Int) throws
    where V.RawValue: RecordValue {
        if let value { try encode(value, field: field) }
    }

    /// Writes field `field` with a nested `Encodable` value when `value` is not nil.
    public mutating func encodeIfPresent<V: Encodable>(_ value: V?, field: Int) throws {
        if let value { try encode(value, field: field) }
    }

    // MARK: Values

    /// Appends an integer in its shortest head.
    @inlinable
    public mutating func writeInteger(_ value: Int64) {
        if value >= 0 {
            cbor.head(0, UInt64(value))
        } else {
            cbor.head(1, UInt64(bitPattern: -1 - value))
        }
    }

    /// Appends a non-negative integer.
    public mutating func writeUnsigned(_ value: UInt64) { cbor.head(0, value) }

    /// Appends a float64.
    @inlinable
    public mutating func writeDouble(_ value: Double) {
        cbor.bytes.append(0xfb)
        cbor.appendBigEndian(value.bitPattern)
    }

    /// Appends a float32.
    public mutating func writeFloat(_ value: Float) {
        cbor.bytes.append(0xfa)
        cbor.appendBigEndian(value.bitPattern)
    }

    /// Appends `f5` or `f4`.
    @inlinable
    public mutating func writeBool(_ value: Bool) { cbor.bytes.append(value ? 0xf5 : 0xf4) }

    /// Appends text.
    @inlinable
    public mutating func writeString(_ value: String) { cbor.text(value) }

    /// Appends a date as ``CBOREncoder`` does.
    public mutating func writeDate(_ value: Date) { cbor.date(value) }

    /// Appends a UUID: tag 37 over its 16 bytes.
    public mutating func writeUUID(_ value: UUID) {
        cbor.tag(37)
        withUnsafeBytes(of: value.uuid) { cbor.byteString($0) }
    }

    /// Appends a nested `Encodable` value as ``CBOREncoder`` writes it.
    /// - Throws: `EncodingError`, or what the value's `encode(to:)` throws.
    public mutating func writeEncodable<V: Encodable>(_ value: V) throws {
        let bytes = try CBOREncoder().encode(value)
        cbor.bytes.append(contentsOf: bytes)
    }
}

extension RecordWriter {
    /// Appends a ``CBORValue`` as ``CBORValue/encoded`` writes it.
    public mutating func writeCBORValue(_ value: CBORValue) { value.write(into: &cbor) }
}
