import Foundation

/// Reads a record's fields for a type's generated code (see ``RecordCodable``): the record is a CBOR
/// map (docs/FORMAT.md), read in place. Fields are expected in the type's declared order, one
/// comparison each; a field elsewhere (a record another version or writer made) is found by name, and
/// a field the type does not know is skipped.
///
/// ```swift
/// var id: Int?
/// while let field = try record.nextField() {
///     switch field {
///     case 0: id = try record.decode(Int.self)
///     default: try record.skipValue()
///     }
/// }
/// ```
///
/// Every read is bounds-checked: malformed bytes throw ``RecordDecodingError``, never trap.
public struct RecordReader: ~Copyable {
    @usableFromInline var cbor: CBORReader
    /// The names (kept alive by the type's static property: not retained per record).
    @usableFromInline unowned(unsafe) let names: RecordFieldNames
    @usableFromInline let nameItems: UnsafeRawPointer
    @usableFromInline let nameStarts: UnsafePointer<Int>
    @usableFromInline let nameCount: Int
    @usableFromInline let nameMatches: UnsafePointer<RecordFieldNames.FieldMatch>
    /// Entries of the map not read yet.
    @usableFromInline var remaining: Int
    /// The field the type expects next (the one after the last field read).
    @usableFromInline var expected = 0
    /// The field being read (for errors), or -1.
    @usableFromInline var current = -1
    /// The known fields read so far (the first 64), to refuse a field given twice.
    @usableFromInline var seen: UInt64 = 0
    /// The form bits of a small ASCII string (``SmallASCII``), 0 when strings are made by the standard
    /// library only.
    @usableFromInline let smallTextForm: UInt64
    /// Fields read so far beyond the first 64, and unknown field names: only when a record has them
    /// (a pointer, so that the reader holds no reference to retain and release).
    @usableFromInline var others: UnsafeMutableRawPointer?

    /// The names a record held beyond the first 64 known fields.
    final class SeenNames {
        var names: Set<[UInt8]> = []
    }

    deinit {
        if let others { Unmanaged<SeenNames>.fromOpaque(others).release() }
    }

    /// The names seen beyond the first 64 known fields.
    var seenNames: SeenNames? { others.map { Unmanaged<SeenNames>.fromOpaque($0).takeUnretainedValue() } }

    /// A reader of the record in `bytes`, whose fields are `names`.
    /// - Throws: ``RecordDecodingError`` when the bytes do not start with a map.
    @inlinable @inline(__always)
    public init(_ bytes: UnsafeRawBufferPointer, names: RecordFieldNames) throws {
        var cbor = CBORReader(bytes)
        if let base = bytes.baseAddress, !bytes.isEmpty, case let first = base.load(as: UInt8.self),
            first >= 0xa0 && first < 0xb8
        {
            // A map of fewer than 24 fields: its head is one byte.
            cbor.offset = 1
            remaining = Int(first & 0x1f)
        } else {
            remaining = try Self.fieldCount(&cbor)
        }
        self.cbor = cbor
        self.names = names
        self.nameItems = UnsafeRawPointer(names.itemBytes)
        self.nameStarts = UnsafePointer(names.startOffsets)
        self.nameCount = names.count
        self.nameMatches = UnsafePointer(names.matches)
        self.smallTextForm = names.smallTextForm
    }

    /// Reads the head of the record's map (of 24 fields or more, or not a map at all): how many
    /// fields it holds.
    @usableFromInline
    static func fieldCount(_ cbor: inout CBORReader) throws -> Int {
        guard !cbor.bytes.isEmpty else { throw Self.corrupted(.truncated(at: 0)) }
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do throws(CBORReader.Failure) { head = try cbor.readHead() } catch { throw Self.corrupted(error) }
        guard head.major == 5 else {
            throw RecordDecodingError(
                field: "", reason: "expected a map of fields, found \(Self.describe(major: head.major))")
        }
        guard head.info != 31 else { throw Self.corrupted(.indefinite(major: 5, at: 0)) }
        guard head.argument <= UInt64(cbor.bytes.count) else {
            throw Self.corrupted(.truncated(at: 0))
        }
        return Int(head.argument)
    }

    /// The index (in declared order) of the next field, -1 for a field the type does not know (skip
    /// its value), or nil after the last.
    /// - Throws: ``RecordDecodingError`` when the key is not text, or a field is given twice.
    @inlinable @inline(__always)
    public mutating func nextField() throws -> Int? {
        guard remaining > 0 else { return nil }
        remaining &-= 1
        let field = expected
        guard field < nameCount else { return try lookUpField() }
        let offset = cbor.offset
        let available = cbor.bytes.count &- offset
        let match = nameMatches[field]
        if match.mask != 0 && available >= 8 {
            // The expected name's item, eight bytes at once.
            let word = UInt64(
                littleEndian: cbor.bytes.baseAddress!.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            guard (word ^ match.word) & match.mask == 0 else { return try lookUpField() }
            cbor.offset = offset &+ match.length
            return try expectedFound(field)
        }
        // A long name, or one at the end of the record: byte by byte.
        let start = nameStarts[field]
        let length = nameStarts[field &+ 1] &- start
        guard length <= available else { return try lookUpField() }
        let record = cbor.bytes.baseAddress! + offset
        let name = nameItems + start
        var position = 0
        while position < length,
            record.load(fromByteOffset: position, as: UInt8.self)
                == name.load(fromByteOffset: position, as: UInt8.self)
        {
            position &+= 1
        }
        guard position == length else { return try lookUpField() }
        cbor.offset = offset &+ length
        return try expectedFound(field)
    }

    /// Whether the next field is `field` (one of the first 64, with a name of at most seven bytes):
    /// then its name is read and the reader is at its value; else nothing is read, and
    /// ``nextField()`` finds what comes. The generated code asks for each field in declared order
    /// first — the order its records are written in — with one comparison each and no dispatch.
    @inlinable @inline(__always)
    public mutating func nextFieldIs(_ field: Int) -> Bool {
        guard remaining > 0, field < 64 else { return false }
        let offset = cbor.offset
        let match = nameMatches[field]
        guard match.mask != 0, cbor.bytes.count &- offset >= 8 else { return false }
        let word = UInt64(
            littleEndian: cbor.bytes.baseAddress!.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        let bit: UInt64 = 1 &<< UInt64(field)
        guard (word ^ match.word) & match.mask == 0, seen & bit == 0 else { return false }
        cbor.offset = offset &+ match.length
        remaining &-= 1
        seen |= bit
        expected = field &+ 1
        current = field
        return true
    }

    /// Notes that the expected field `field` was read (its name just passed).
    @inlinable @inline(__always)
    mutating func expectedFound(_ field: Int) throws -> Int {
        if field < 64 {
            let bit: UInt64 = 1 &<< UInt64(field)
            if seen & bit == 0 {
                seen |= bit
                expected = field &+ 1
                current = field
                return field
            }
        }
        return try found(field)
    }

    /// Notes that `field` was read; refuses it a second time.
    @usableFromInline
    mutating func found(_ field: Int) throws -> Int {
        if field < 64 {
            let bit: UInt64 = 1 << UInt64(field)
            guard seen & bit == 0 else { throw twice(names.names[field]) }
            seen |= bit
        } else {
            guard note(Array(names.names[field].utf8)) else { throw twice(names.names[field]) }
        }
        expected = field + 1
        current = field
        return field
    }

    /// Notes a name beyond the first 64 fields; false when it was seen before.
    mutating func note(_ name: [UInt8]) -> Bool {
        if others == nil { others = Unmanaged.passRetained(SeenNames()).toOpaque() }
        return seenNames!.names.insert(name).inserted
    }

    /// Reads the next key when it is not the expected field.
    @usableFromInline
    mutating func lookUpField() throws -> Int {
        let start = cbor.offset
        let text: UnsafeRawBufferPointer?
        do throws(CBORReader.Failure) { text = try cbor.readStringBytes(major: 3) } catch {
            throw Self.corrupted(error)
        }
        guard let text else {
            throw RecordDecodingError(field: "", reason: "a field name at byte \(start) is not text")
        }
        if let field = names.index(ofUTF8: text) { return try found(field) }
        // A field this type does not know: skipped by the caller, but not twice either.
        guard note(Array(text)) else {
            throw twice(String(decoding: text, as: UTF8.self))
        }
        current = -1
        return -1
    }

    @usableFromInline
    func twice(_ name: String) -> RecordDecodingError {
        RecordDecodingError(field: name, reason: "the map holds the field \"\(name)\" twice")
    }

    /// Skips the value of the field just read (one the type does not know).
    /// - Throws: ``RecordDecodingError`` when the value is malformed.
    @inlinable @inline(__always)
    public mutating func skipValue() throws {
        let offset = cbor.offset
        if offset < cbor.bytes.count {
            // A number, a simple value or a short string: its length is in its first byte.
            let initial = cbor.bytes.load(fromByteOffset: offset, as: UInt8.self)
            let length: Int
            switch initial {
            case 0x00...0x17, 0x20...0x37, 0xf4...0xf7: length = 1
            case 0x18, 0x38: length = 2
            case 0x19, 0x39, 0xf9: length = 3
            case 0x1a, 0x3a, 0xfa: length = 5
            case 0x1b, 0x3b, 0xfb: length = 9
            case 0x40...0x57, 0x60...0x77: length = 1 &+ Int(initial & 0x1f)
            default: length = 0
            }
            if length > 0 && length <= cbor.bytes.count &- offset {
                cbor.offset = offset &+ length
                return
            }
        }
        try skipItem()
    }

    /// Skips an item whose length is not in its first byte (or that is malformed).
    @usableFromInline
    mutating func skipItem() throws {
        do throws(CBORReader.Failure) { try cbor.skipItem() } catch { throw failure(Self.corrupted(error)) }
    }

    /// Checks that the record ends where its map ends.
    /// - Throws: ``RecordDecodingError`` when bytes follow it.
    public func finish() throws {
        guard cbor.offset == cbor.bytes.count else {
            throw RecordDecodingError(
                field: "", reason: "\(cbor.bytes.count - cbor.offset) bytes follow the CBOR item")
        }
    }

    /// `error` placed in the field being read.
    @usableFromInline
    func failure(_ error: any Error) -> RecordDecodingError {
        let error = RecordDecodingError.from(error)
        return current >= 0 ? error.inside(names.names[current]) : error
    }

    @usableFromInline static func corrupted(_ failure: CBORReader.Failure) -> RecordDecodingError {
        RecordDecodingError(field: "", reason: failure.description)
    }

    @usableFromInline static func describe(major: UInt8) -> String {
        switch major {
        case 0, 1: "an integer"
        case 2: "a byte string"
        case 3: "text"
        case 4: "an array"
        case 5: "a map"
        case 6: "a tagged item"
        default: "a simple value"
        }
    }
}

extension RecordReader {
    /// Whether the record held field `field` (among those read so far).
    public func hasField(_ field: Int) -> Bool {
        field < 64
            ? seen & (1 << UInt64(field)) != 0
            : seenNames?.names.contains(Array(names.names[field].utf8)) ?? false
    }
}

extension RecordReader {
    /// Moves to the value of field `field`, skipping the fields before it: true when there, false when
    /// the record does not hold it (before the position). For reading one field of a record.
    /// - Throws: ``RecordDecodingError`` when the record is malformed on the way.
    public mutating func seek(field: Int) throws -> Bool {
        while let next = try nextField() {
            if next == field { return true }
            try skipValue()
        }
        return false
    }

    /// A function that reads a `V` at a reader's position, chosen once for the type: its own reading
    /// when `V` is a ``RecordValue``, else `CBORDecoder`.
    package static func valueReader<V: Decodable>(_ type: V.Type) -> (inout RecordReader) throws -> V {
        func own<R: RecordValue>(_ recordType: R.Type) -> (inout RecordReader) throws -> V {
            // `R` is `V`: the conformance found at run time, read without a cast per value.
            { reader in unsafeBitCast(try R(recordValue: &reader), to: V.self) }
        }
        if let recordType = V.self as? any RecordValue.Type { return own(recordType) }
        return { reader in try reader.readDecodable(V.self) }
    }

    /// A function that reads a `V` at a reader's position into uninitialized memory for one `V` (left
    /// uninitialized when it throws), chosen once for the type as ``valueReader(_:)`` is: unspecialized
    /// code that collects values in place copies none of them.
    package static func valuePlacer<V: Decodable>(_ type: V.Type) -> (
        inout RecordReader, UnsafeMutablePointer<V>
    ) throws -> Void {
        func own<R: RecordValue>(_ recordType: R.Type) -> (inout RecordReader, UnsafeMutablePointer<V>) throws
            -> Void
        {
            // `R` is `V`: the conformance found at run time, read without a cast per value.
            { reader, value in
                UnsafeMutableRawPointer(value).assumingMemoryBound(to: R.self).initialize(
                    to: try R(recordValue: &reader))
            }
        }
        if let recordType = V.self as? any RecordValue.Type { return own(recordType) }
        return { reader, value in value.initialize(to: try reader.readDecodable(V.self)) }
    }
}

extension RecordReader {
    /// Where the reader is in the record's bytes.
    package var position: Int { cbor.offset }

    /// Moves back to `position`, a ``position`` this reader had: to read the value there again.
    package mutating func rewind(to position: Int) { cbor.offset = position }
}
