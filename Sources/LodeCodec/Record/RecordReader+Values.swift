import Foundation

// The values a reader reads at its position: what `CBORDecoder` accepts for each type, read in place.
extension RecordReader {
    /// The next head; a one- or two-byte head (small counts and numbers) read in place.
    @inlinable @inline(__always)
    mutating func head() throws -> (major: UInt8, argument: UInt64, info: UInt8) {
        let offset = cbor.offset
        if offset + 1 < cbor.bytes.count {
            let initial = cbor.bytes[offset]
            let info = initial & 0x1f
            if info < 24 {
                cbor.offset = offset + 1
                return (initial >> 5, UInt64(info), info)
            }
            if info == 24 {
                cbor.offset = offset + 2
                return (initial >> 5, UInt64(cbor.bytes[offset + 1]), info)
            }
            if info == 25, offset + 2 < cbor.bytes.count {
                cbor.offset = offset + 3
                return (
                    initial >> 5, UInt64(cbor.bytes[offset + 1]) << 8 | UInt64(cbor.bytes[offset + 2]), info
                )
            }
        }
        return try longHead()
    }

    @usableFromInline
    mutating func longHead() throws -> (major: UInt8, argument: UInt64, info: UInt8) {
        do throws(CBORReader.Failure) { return try cbor.readHead() } catch { throw Self.corrupted(error) }
    }

    @usableFromInline
    func mismatch(_ expected: String, at offset: Int) -> RecordDecodingError {
        let found: String
        if offset < cbor.bytes.count {
            let byte = cbor.bytes[offset]
            switch byte {
            case 0xf4, 0xf5: found = "a boolean"
            case 0xf6: found = "null"
            case 0xf9, 0xfa, 0xfb: found = "a float"
            default: found = Self.describe(major: byte >> 5)
            }
        } else {
            found = "the end of the record"
        }
        return RecordDecodingError(field: "", reason: "expected \(expected), found \(found)")
    }

    /// Reads an integer of type `I` (an integer item, or a float with an integral value that fits).
    @inlinable @inline(__always)
    public mutating func readInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let start = cbor.offset
        let head = try head()
        switch head.major {
        case 0:
            if let value = I(exactly: head.argument) { return value }
        case 1:
            if head.argument <= UInt64(Int64.max), let value = I(exactly: -1 - Int64(head.argument)) {
                return value
            }
        case 7 where head.info >= 25 && head.info <= 27:
            if let value = I(exactly: Self.float(head)) { return value }
        default:
            throw mismatch("\(I.self)", at: start)
        }
        throw RecordDecodingError(field: "", reason: "the number does not fit in \(I.self)")
    }

    @usableFromInline
    static func float(_ head: (major: UInt8, argument: UInt64, info: UInt8)) -> Double {
        switch head.info {
        case 25: Double(Float16Bits(UInt16(head.argument)).value)
        case 26: Double(Float(bitPattern: UInt32(head.argument)))
        default: Double(bitPattern: head.argument)
        }
    }

    /// Reads a number as `Double`: a float of any width, or an integer.
    @inlinable
    public mutating func readDouble() throws -> Double {
        let start = cbor.offset
        if start + 9 <= cbor.bytes.count, cbor.bytes[start] == 0xfb {
            // A float64, as Lode writes doubles.
            cbor.offset = start + 9
            return Double(
                bitPattern: UInt64(
                    bigEndian: cbor.bytes.baseAddress!.loadUnaligned(
                        fromByteOffset: start + 1, as: UInt64.self)))
        }
        let head = try head()
        switch (head.major, head.info) {
        case (7, 25), (7, 26), (7, 27): return Self.float(head)
        case (0, _): return Double(head.argument)
        case (1, _): return -1 - Double(head.argument)
        default: throw mismatch("Double", at: start)
        }
    }

    /// Reads `true` or `false`.
    @inlinable
    public mutating func readBool() throws -> Bool {
        guard cbor.offset < cbor.bytes.count else { throw Self.corrupted(.truncated(at: cbor.offset)) }
        switch cbor.bytes[cbor.offset] {
        case 0xf4:
            cbor.offset += 1
            return false
        case 0xf5:
            cbor.offset += 1
            return true
        default: throw mismatch("Bool", at: cbor.offset)
        }
    }

    /// Reads null (true), or leaves the position as it is (false).
    public mutating func readNull() throws -> Bool {
        guard cbor.offset < cbor.bytes.count else { throw Self.corrupted(.truncated(at: cbor.offset)) }
        // null, or undefined, which `CBORDecoder` also reads as nil
        guard cbor.bytes[cbor.offset] == 0xf6 || cbor.bytes[cbor.offset] == 0xf7 else { return false }
        cbor.offset += 1
        return true
    }

    /// Reads text, checking that it is UTF-8.
    @inlinable
    public mutating func readString() throws -> String {
        let start = cbor.offset
        if start < cbor.bytes.count {
            let initial = cbor.bytes[start]
            // Text shorter than 24 bytes: a one-byte head.
            if initial >= 0x60 && initial < 0x78 {
                let length = Int(initial & 0x1f)
                if length <= cbor.bytes.count - start - 1 {
                    cbor.offset = start + 1 + length
                    let text = UnsafeRawBufferPointer(
                        start: cbor.bytes.baseAddress! + start + 1, count: length)
                    // Short ASCII text: the small string made here, in the caller's code.
                    if length <= 15 && smallTextForm != 0,
                        let string = SmallASCII.string(text, form: smallTextForm)
                    {
                        return string
                    }
                    return try Self.string(text)
                }
            }
        }
        let utf8: UnsafeRawBufferPointer?
        do throws(CBORReader.Failure) { utf8 = try cbor.readStringBytes(major: 3) } catch {
            throw Self.corrupted(error)
        }
        guard let utf8 else { throw mismatch("String", at: start) }
        return try Self.string(utf8)
    }

    @usableFromInline
    static func string(_ utf8: UnsafeRawBufferPointer) throws -> String {
        guard let string = UTF8Text.string(utf8) else {
            throw RecordDecodingError(field: "", reason: "a text string is not valid UTF-8")
        }
        return string
    }

    /// Reads a byte string's bytes (valid while the record's bytes are).
    public mutating func readByteString() throws -> UnsafeRawBufferPointer {
        let start = cbor.offset
        let raw: UnsafeRawBufferPointer?
        do throws(CBORReader.Failure) { raw = try cbor.readStringBytes(major: 2) } catch {
            throw Self.corrupted(error)
        }
        guard let raw else { throw mismatch("Data", at: start) }
        return raw
    }

    /// Reads `Data`: a byte string (or, where `JSONForms` are accepted, Base64 text).
    public mutating func readData() throws -> Data {
        if JSONForms.areAccepted, cbor.offset < cbor.bytes.count, cbor.bytes[cbor.offset] >> 5 == 3 {
            guard let data = JSONForms.base64(try readString()) else {
                throw RecordDecodingError(field: "", reason: "not Base64 data")
            }
            return data
        }
        return Data(try readByteString())
    }

    /// Reads a tag if one is next.
    mutating func readTag() throws -> UInt64? {
        guard cbor.offset < cbor.bytes.count, cbor.bytes[cbor.offset] >> 5 == 6 else { return nil }
        return try head().argument
    }

    /// Reads a date: tag 1 (seconds since 1970), tag 40001 (seconds since 2001) or tag 0 (RFC 3339).
    public mutating func readDate() throws -> Date {
        let start = cbor.offset
        switch try readTag() {
        case 1?: return Date(timeIntervalSince1970: try readDouble())
        case CBORTags.referenceDate?: return Date(timeIntervalSinceReferenceDate: try readDouble())
        case 0?:
            let text = try readString()
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw RecordDecodingError(field: "", reason: "not an RFC 3339 date: \(text)")
            }
            return date
        case let tag?: throw RecordDecodingError(field: "", reason: "expected Date, found tag \(tag)")
        case nil:
            if JSONForms.areAccepted, start < cbor.bytes.count,
                cbor.bytes[start] >> 5 <= 1 || (cbor.bytes[start] >= 0xf9 && cbor.bytes[start] <= 0xfb)
            {
                return Date(timeIntervalSince1970: try readDouble())
            }
            throw mismatch("Date", at: start)
        }
    }

    /// Reads a UUID: tag 37 over 16 bytes, the 16 bytes alone, or its text.
    public mutating func readUUID() throws -> UUID {
        if cbor.offset < cbor.bytes.count, cbor.bytes[cbor.offset] >> 5 == 3 {
            let text = try readString()
            guard let uuid = UUID(uuidString: text) else {
                throw RecordDecodingError(field: "", reason: "not a UUID: \(text)")
            }
            return uuid
        }
        if let tag = try readTag(), tag != 37 {
            throw RecordDecodingError(field: "", reason: "expected UUID, found tag \(tag)")
        }
        let raw = try readByteString()
        guard raw.count == 16 else {
            throw RecordDecodingError(field: "", reason: "a UUID needs 16 bytes, not \(raw.count)")
        }
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: raw) }
        return UUID(uuid: uuid)
    }

    /// Reads a URL: tag 32 over text, or the text alone.
    public mutating func readURL() throws -> URL {
        if let tag = try readTag(), tag != 32 {
            throw RecordDecodingError(field: "", reason: "expected URL, found tag \(tag)")
        }
        let text = try readString()
        guard let url = URL(string: text) else {
            throw RecordDecodingError(field: "", reason: "not a URL: \(text)")
        }
        return url
    }

    /// Reads an array's head: how many items follow.
    public mutating func readArrayHead() throws -> Int { try readContainerHead(major: 4, "an array") }

    /// Reads a map's head: how many entries follow.
    public mutating func readMapHead() throws -> Int { try readContainerHead(major: 5, "a map") }

    private mutating func readContainerHead(major: UInt8, _ name: String) throws -> Int {
        let start = cbor.offset
        let head = try head()
        guard head.major == major else { throw mismatch(name, at: start) }
        guard head.info != 31 else { throw Self.corrupted(.indefinite(major: major, at: start)) }
        // Every item takes a byte at least.
        guard head.argument <= UInt64(cbor.bytes.count - cbor.offset) else {
            throw Self.corrupted(.truncated(at: start))
        }
        return Int(head.argument)
    }

    /// Reads a `Decodable` value with `CBORDecoder` (a nested `Codable` type).
    public mutating func readDecodable<V: Decodable>(_ type: V.Type) throws -> V {
        let start = cbor.offset
        do throws(CBORReader.Failure) { try cbor.skipItem() } catch { throw Self.corrupted(error) }
        let item = UnsafeRawBufferPointer(rebasing: cbor.bytes[start..<cbor.offset])
        do { return try CBORDecoder().decode(V.self, from: item) } catch {
            throw RecordDecodingError.from(error)
        }
    }

    // MARK: A field's value

    /// Reads the current field's value.
    /// - Throws: ``RecordDecodingError`` naming the field.
    @inlinable
    public mutating func decode<V: RecordValue>(_ type: V.Type) throws -> V {
        do { return try V(recordValue: &self) } catch { throw failure(error) }
    }

    /// Reads the current field's integer.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Int.Type) throws -> Int {
        do { return try readInteger(Int.self) } catch { throw failure(error) }
    }

    /// Reads the current field's text.
    @inlinable @inline(__always)
    public mutating func decode(_ type: String.Type) throws -> String {
        do { return try readString() } catch { throw failure(error) }
    }

    /// Reads the current field's number.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Double.Type) throws -> Double {
        do { return try readDouble() } catch { throw failure(error) }
    }

    /// Reads the current field's boolean.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Bool.Type) throws -> Bool {
        do { return try readBool() } catch { throw failure(error) }
    }

    /// Reads the current field's value as its raw value (an enum with raw values).
    public mutating func decode<V: RawRepresentable & Decodable>(_ type: V.Type) throws -> V
    where V.RawValue: RecordValue {
        let start = cbor.offset
        let raw: V.RawValue
        do { raw = try V.RawValue(recordValue: &self) } catch { throw failure(error) }
        guard let value = V(rawValue: raw) else {
            throw failure(
                RecordDecodingError(
                    field: "", reason: "\(raw) (at byte \(start)) is not a raw value of \(V.self)"))
        }
        return value
    }

    /// Reads the current field's value with `CBORDecoder` (a nested `Codable` type).
    public mutating func decode<V: Decodable>(_ type: V.Type) throws -> V {
        do { return try readDecodable(V.self) } catch { throw failure(error) }
    }

    /// Reads the current field's value of an optional property: null is nil.
    @inlinable
    public mutating func decodeIfPresent<V: RecordValue>(_ type: V.Type) throws -> V? {
        if try readNullInField() { return nil }
        return try decode(V.self)
    }

    /// Reads the current field's value of an optional raw-value property: null is nil.
    public mutating func decodeIfPresent<V: RawRepresentable & Decodable>(_ type: V.Type) throws -> V?
    where V.RawValue: RecordValue {
        if try readNullInField() { return nil }
        return try decode(V.self)
    }

    /// Reads the current field's value of an optional `Codable` property: null is nil.
    public mutating func decodeIfPresent<V: Decodable>(_ type: V.Type) throws -> V? {
        if try readNullInField() { return nil }
        return try decode(V.self)
    }

    @usableFromInline
    mutating func readNullInField() throws -> Bool {
        do { return try readNull() } catch { throw failure(error) }
    }
}

extension RecordReader {
    /// Reads the item at the position whole, as a ``CBORValue`` (a value kept in its stored form).
    public mutating func readCBORValue() throws -> CBORValue {
        do throws(CBORReader.Failure) { return try CBORValue.read(&cbor, depth: 0) } catch {
            throw Self.corrupted(error)
        }
    }
}

extension RecordReader {
    /// Not a stored type: what a `@Model` property whose type is not `Decodable` meets, in place of
    /// "no exact matches" (the model macro's own error names the property).
    @available(*, unavailable, message: "a stored property of a @Model type must be Codable")
    public mutating func decode<V>(_ type: V.Type) throws -> V { fatalError("unavailable") }

    /// Not a stored type (see the unavailable `decode(_:)`).
    @available(*, unavailable, message: "a stored property of a @Model type must be Codable")
    public mutating func decodeIfPresent<V>(_ type: V.Type) throws -> V? { fatalError("unavailable") }
}
