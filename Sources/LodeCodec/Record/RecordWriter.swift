import Foundation

/// Writes a record for a type's generated code (see ``RecordCodable``): a CBOR map of the fields in
/// declared order, a `nil` optional left out — the bytes `CBOREncoder` writes for the type's
/// synthesized `Encodable` — and, as it goes, the record's shape (its field names and each value's
/// kind, as the catalog records them).
public struct RecordWriter: ~Copyable {
    /// Where the bytes go: the buffer's memory, as of the last growth (the writer holds no reference
    /// it would retain per write).
    @usableFromInline unowned(unsafe) let buffer: RecordBuffer
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline var capacity: Int
    /// Bytes written so far.
    @usableFromInline var count = 0
    /// The names (kept alive by the type's static property: not retained per record).
    @usableFromInline unowned(unsafe) let names: RecordFieldNames
    @usableFromInline let nameItems: UnsafeRawPointer
    @usableFromInline let nameStarts: UnsafePointer<Int>
    @usableFromInline let nameHashes: UnsafePointer<UInt64>
    /// How many fields were written.
    @usableFromInline var fieldCount = 0
    /// The shape so far, and where the last field's value starts (its kind is folded in when the next
    /// field begins, or at the end), or -1.
    @usableFromInline var shape = FieldShape.basis
    @usableFromInline var valueStart = -1
    /// Where the map's head is: a record begins with a one-byte head, moved when the count needs more.
    @usableFromInline var closed = false

    /// A writer of a record whose fields are `names`, into `buffer` (which must outlive the writer).
    public init(names: RecordFieldNames, into buffer: RecordBuffer) {
        self.buffer = buffer
        self.base = buffer.base
        self.capacity = buffer.capacity
        self.names = names
        self.nameItems = UnsafeRawPointer(names.itemBytes)
        self.nameStarts = UnsafePointer(names.startOffsets)
        self.nameHashes = UnsafePointer(names.nameHashes)
        // The map's head: a placeholder for the count, patched at the end.
        base.storeBytes(of: 0xa0, as: UInt8.self)
        count = 1
    }

    /// A writer of one value (no record around it), into `buffer`: ``writtenBytes`` are its bytes.
    package init(valueInto buffer: RecordBuffer) {
        self.buffer = buffer
        self.base = buffer.base
        self.capacity = buffer.capacity
        self.names = RecordFieldNames.none
        self.nameItems = UnsafeRawPointer(names.itemBytes)
        self.nameStarts = UnsafePointer(names.startOffsets)
        self.nameHashes = UnsafePointer(names.nameHashes)
        count = 0
        closed = true
    }

    /// What the writer wrote so far (valid until the buffer's next use).
    package var writtenBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A function that writes a `V` with a writer, chosen once for the type: its own writing when `V`
    /// is a ``RecordValue``, else `CBOREncoder`.
    package static func valueWriter<V: Encodable>(_ type: V.Type) -> (V, inout RecordWriter) throws -> Void {
        func own<R: RecordValue>(_ recordType: R.Type) -> (V, inout RecordWriter) throws -> Void {
            // `R` is `V`: the conformance found at run time, written without a cast per value.
            { value, writer in try unsafeBitCast(value, to: R.self).writeRecordValue(to: &writer) }
        }
        if let recordType = V.self as? any RecordValue.Type { return own(recordType) }
        return { value, writer in try writer.writeEncodable(value) }
    }

    /// The record's bytes and shape, valid until the buffer's next record: the map closed, the last
    /// field's kind in the shape.
    public mutating func finish() -> (bytes: UnsafeRawBufferPointer, shape: UInt64) {
        if !closed {
            foldPendingKind()
            closed = true
            if fieldCount < 24 {
                base.storeBytes(of: 0xa0 | UInt8(fieldCount), as: UInt8.self)
            } else {
                // A longer head: the fields move up to make room.
                var head = CBORWriter(capacity: 9)
                head.head(5, UInt64(fieldCount))
                let extra = head.bytes.count - 1
                reserve(extra)
                (base + 1 + extra).copyMemory(from: base + 1, byteCount: count - 1)
                head.bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                count += extra
            }
        }
        return (UnsafeRawBufferPointer(start: base, count: count), shape)
    }

    // MARK: Output

    /// Makes room for `more` bytes.
    @inlinable @inline(__always)
    mutating func reserve(_ more: Int) {
        if count + more > capacity {
            buffer.grow(keeping: count, toAtLeast: count + more)
            base = buffer.base
            capacity = buffer.capacity
        }
    }

    /// Appends one byte.
    @inlinable @inline(__always)
    public mutating func writeByte(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Appends bytes as they are.
    @inlinable
    public mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Appends a head: major type `major` with argument `value`, in the shortest form.
    @inlinable @inline(__always)
    public mutating func writeHead(_ major: UInt8, _ value: UInt64) {
        reserve(9)
        let type = major << 5
        if value < 24 {
            base.storeBytes(of: type | UInt8(value), toByteOffset: count, as: UInt8.self)
            count += 1
        } else if value <= 0xff {
            base.storeBytes(of: type | 24, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: UInt8(value), toByteOffset: count + 1, as: UInt8.self)
            count += 2
        } else if value <= 0xffff {
            base.storeBytes(of: type | 25, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: UInt16(value).bigEndian, toByteOffset: count + 1, as: UInt16.self)
            count += 3
        } else if value <= 0xffff_ffff {
            base.storeBytes(of: type | 26, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: UInt32(value).bigEndian, toByteOffset: count + 1, as: UInt32.self)
            count += 5
        } else {
            base.storeBytes(of: type | 27, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: value.bigEndian, toByteOffset: count + 1, as: UInt64.self)
            count += 9
        }
    }

    @inlinable @inline(__always)
    mutating func foldPendingKind() {
        if valueStart >= 0 {
            let kind = FieldKind.of(initialByte: base.load(fromByteOffset: valueStart, as: UInt8.self))
                .rawValue
            shape = (shape ^ UInt64(kind)) &* FieldShape.prime
            valueStart = -1
        }
    }

    /// Starts field `field` (an index into the names): writes its name.
    @inlinable @inline(__always)
    public mutating func beginField(_ field: Int) {
        foldPendingKind()
        let start = nameStarts[field]
        let length = nameStarts[field + 1] - start
        reserve(length)
        (base + count).copyMemory(from: nameItems + start, byteCount: length)
        count += length
        // The shape: a hash of each field's name, folded in order with each value's kind (an
        // in-memory memo of shapes seen; the catalog's own is computed from the record).
        shape = (shape ^ nameHashes[field]) &* FieldShape.prime
        fieldCount += 1
        valueStart = count
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

    /// Writes field `field` with a nested `Encodable` value, through `CBOREncoder`.
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

    /// Writes field `field` with `value`, or with null when it is nil: for an optional property with a
    /// default, whose nil must not read back as the default (a missing field does).
    @inlinable
    public mutating func encodeOrNull<V: RecordValue>(_ value: V?, field: Int) throws {
        if let value { try encode(value, field: field) } else { writeNullField(field) }
    }

    /// Writes field `field` with an enum's raw value, or with null when it is nil.
    public mutating func encodeOrNull<V: RawRepresentable & Encodable>(_ value: V?, field: Int) throws
    where V.RawValue: RecordValue {
        if let value { try encode(value, field: field) } else { writeNullField(field) }
    }

    /// Writes field `field` with a nested `Encodable` value, or with null when it is nil.
    public mutating func encodeOrNull<V: Encodable>(_ value: V?, field: Int) throws {
        if let value { try encode(value, field: field) } else { writeNullField(field) }
    }

    @usableFromInline
    mutating func writeNullField(_ field: Int) {
        beginField(field)
        writeNull()
    }

    // MARK: Values

    /// Appends an integer in its shortest head.
    @inlinable
    public mutating func writeInteger(_ value: Int64) {
        if value >= 0 {
            writeHead(0, UInt64(value))
        } else {
            writeHead(1, UInt64(bitPattern: -1 - value))
        }
    }

    /// Appends a non-negative integer.
    public mutating func writeUnsigned(_ value: UInt64) { writeHead(0, value) }

    /// Appends a float64.
    @inlinable
    public mutating func writeDouble(_ value: Double) {
        reserve(9)
        base.storeBytes(of: 0xfb, toByteOffset: count, as: UInt8.self)
        (base + count + 1).storeBytes(of: value.bitPattern.bigEndian, as: UInt64.self)
        count += 9
    }

    /// Appends a float32.
    public mutating func writeFloat(_ value: Float) {
        reserve(5)
        base.storeBytes(of: 0xfa, toByteOffset: count, as: UInt8.self)
        (base + count + 1).storeBytes(of: value.bitPattern.bigEndian, as: UInt32.self)
        count += 5
    }

    /// Appends `f5` or `f4`.
    @inlinable
    public mutating func writeBool(_ value: Bool) { writeByte(value ? 0xf5 : 0xf4) }

    /// Appends null (`f6`).
    public mutating func writeNull() { writeByte(0xf6) }

    /// Appends text.
    @inlinable
    public mutating func writeString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeHead(3, UInt64(utf8.count))
            writeBytes(UnsafeRawBufferPointer(utf8))
        }
    }

    /// Appends a byte string.
    public mutating func writeByteString(_ bytes: UnsafeRawBufferPointer) {
        writeHead(2, UInt64(bytes.count))
        writeBytes(bytes)
    }

    /// Appends a tag's head.
    public mutating func writeTag(_ tag: UInt64) { writeHead(6, tag) }

    /// Appends a date as `CBOREncoder` does: tag 1 over seconds since 1970 when that float gives back
    /// the same date, else tag 40001 over seconds since 2001.
    public mutating func writeDate(_ value: Date) {
        var writer = CBORWriter(capacity: 12)
        writer.date(value)
        writer.bytes.withUnsafeBytes { writeBytes($0) }
    }

    /// Appends a UUID: tag 37 over its 16 bytes.
    public mutating func writeUUID(_ value: UUID) {
        writeTag(37)
        withUnsafeBytes(of: value.uuid) { writeByteString($0) }
    }

    /// Appends a nested `Encodable` value as `CBOREncoder` writes it.
    /// - Throws: `EncodingError`, or what the value's `encode(to:)` throws.
    public mutating func writeEncodable<V: Encodable>(_ value: V) throws {
        let bytes = try CBOREncoder().encode(value)
        bytes.withUnsafeBytes { writeBytes($0) }
    }

    /// Appends a ``CBORValue`` as `CBORValue.encoded` writes it.
    public mutating func writeCBORValue(_ value: CBORValue) {
        value.encoded.withUnsafeBytes { writeBytes($0) }
    }
}

extension RecordWriter {
    /// Not a stored type: what a `@Model` property whose type is not `Encodable` meets, in place of
    /// "no exact matches" (the model macro's own error names the property).
    @available(*, unavailable, message: "a stored property of a @Model type must be Codable")
    public mutating func encode<V>(_ value: V, field: Int) throws { fatalError("unavailable") }

    /// Not a stored type (see the unavailable `encode(_:field:)`).
    @available(*, unavailable, message: "a stored property of a @Model type must be Codable")
    public mutating func encodeIfPresent<V>(_ value: V?, field: Int) throws { fatalError("unavailable") }

    /// Not a stored type (see the unavailable `encode(_:field:)`).
    @available(*, unavailable, message: "a stored property of a @Model type must be Codable")
    public mutating func encodeOrNull<V>(_ value: V?, field: Int) throws { fatalError("unavailable") }
}
