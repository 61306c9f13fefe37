import Foundation

/// Decodes `Decodable` values from CBOR written by ``CBOREncoder`` (or any writer that uses the
/// same conventions: maps keyed by text, tags 1, 37, 4, 2, 3 and 32 for dates, UUIDs, decimals,
/// bignums and URLs). Decoding reads the bytes in place.
public struct CBORDecoder: Sendable {
    /// Makes a decoder.
    public init() {}

    /// Decodes a `T` from `bytes`, which must hold exactly one data item.
    ///
    /// - Complexity: O(*b*) for *b* bytes: a field is found through an index of its map made once per map.
    /// - Throws: `DecodingError` when the bytes are not CBOR or do not hold a `T` (the error's coding path
    ///   names the field), or what `T`'s `init(from:)` throws.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        try decode(type, from: bytes, state: CBORDecodingState(bytes: bytes))
    }

    /// Decodes with the scratch space of earlier decodes (see ``CBORDecodingScratch``): for readers
    /// that decode many records in a row.
    package func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, scratch: CBORDecodingScratch
    ) throws -> T {
        try decode(type, from: bytes, state: scratch.state)
    }

    /// Decodes with a state that may have decoded other items before (see
    /// `CBORDecodingState.prepare(_:)`).
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, state: CBORDecodingState)
        throws -> T
    {
        state.prepare(bytes)
        defer { state.finish() }
        let value = try state.decodeValue(T.self, at: 0, path: [])
        // The item must be well formed to its end and be all there is.
        var end: Int
        if let root = state.root {
            do { try root.scanAll(bytes) } catch { throw state.corrupted(error, path: []) }
            end = root.end!
        } else {
            var reader = CBORReader(bytes)
            do { try reader.skipItem() } catch { throw state.corrupted(error, path: []) }
            end = reader.offset
        }
        guard end == bytes.count else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\(bytes.count - end) bytes follow the CBOR item"))
        }
        return value
    }

    /// Decodes a `T` from a byte array.
    ///
    /// - Complexity: O(*b*) for *b* bytes.
    /// - Throws: `DecodingError` when the bytes are not CBOR or do not hold a `T`, or what `T`'s
    ///   `init(from:)` throws.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try bytes.withUnsafeBytes { try decode(type, from: $0) }
    }
}

/// What one decoder keeps between the records it decodes in a row (the index of a record's map, made
/// once and reused), for a layer above the codec. The decoding state itself stays inside the codec,
/// so the compiler sees every access to it.
package struct CBORDecodingScratch {
    let state = CBORDecodingState(bytes: UnsafeRawBufferPointer(start: nil, count: 0))

    /// Fresh scratch space.
    package init() {}
}

final class CBORDecodingState: Decoder {
    var bytes: UnsafeRawBufferPointer
    /// Where the value being decoded starts.
    var offset = 0
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The index of the map at offset 0, when the item decoded is one: once it has scanned every
    /// entry it knows where the item ends, and the decode need not walk it again.
    var root: CBORMapIndex?
    /// The root index of the previous decode, reused by the next one when nothing else holds it (a
    /// state decoding many records allocates its index once).
    var spareRoot: CBORMapIndex?

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Points the state at the next item to decode.
    func prepare(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        offset = 0
        codingPath = []
        root = nil
    }

    /// Ends a decode: the root index is kept for the next one, the bytes are forgotten.
    func finish() {
        spareRoot = root
        root = nil
        bytes = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    func corrupted(_ failure: CBORReader.Failure, path: [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: path, debugDescription: failure.description))
    }

    func mismatch<T>(_ type: T.Type, at offset: Int, path: [any CodingKey], found: String? = nil)
        -> DecodingError
    {
        let what = found ?? describeItem(at: offset)
        return .typeMismatch(
            type, .init(codingPath: path, debugDescription: "expected \(type), found \(what)"))
    }

    /// A short description of the item at `offset`, for error messages.
    func describeItem(at offset: Int) -> String {
        guard offset < bytes.count else { return "the end of the data" }
        let initial = bytes[offset]
        switch initial >> 5 {
        case 0, 1: return "an integer"
        case 2: return "a byte string"
        case 3: return "a text string"
        case 4: return "an array"
        case 5: return "a map"
        case 6: return "a tagged item"
        default:
            switch initial {
            case 0xf4, 0xf5: return "a boolean"
            case 0xf6: return "null"
            case 0xf7: return "undefined"
            case 0xf9, 0xfa, 0xfb: return "a floating-point number"
            default: return "a simple value"
            }
        }
    }

    func isNil(at offset: Int) -> Bool {
        offset < bytes.count && (bytes[offset] == 0xf6 || bytes[offset] == 0xf7)
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(
            try CBORKeyedDecodingContainer<Key>(state: self, offset: offset, path: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(state: self, offset: offset, path: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        CBORSingleValueDecodingContainer(state: self, offset: offset, path: codingPath)
    }

    // MARK: Values

    /// The container (major type 5, a map; 4, an array) whose head is at `offset`: its count (nil when
    /// indefinite) and where its first entry starts. Throws a type mismatch (naming `type`) for
    /// another kind of item, and a truncation for a count larger than the bytes could hold.
    func container<T>(at offset: Int, major: UInt8, as type: T.Type, path: [any CodingKey]) throws -> (
        count: Int?, firstEntry: Int
    ) {
        var reader = CBORReader(bytes, offset: offset)
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do { head = try reader.readHead() } catch { throw corrupted(error, path: path) }
        guard head.major == major else { throw mismatch(type, at: offset, path: path) }
        guard head.info == 31 || head.argument <= UInt64(bytes.count) else {
            throw corrupted(.truncated(at: offset), path: path)
        }
        return (head.info == 31 ? nil : Int(head.argument), reader.offset)
    }

    func decodeValue<T: Decodable>(_ type: T.Type, at offset: Int, path: [any CodingKey]) throws -> T {
        if T.self == String.self { return try decodeString(at: offset, path: path) as! T }
        if T.self == Int.self { return try decodeInteger(Int.self, at: offset, path: path) as! T }
        if T.self == Double.self { return try decodeFloatingPoint(at: offset, path: path) as! T }
        if T.self == Bool.self { return try decodeBool(at: offset, path: path) as! T }
        if T.self == Date.self { return try decodeDate(at: offset, path: path) as! T }
        if T.self == UUID.self { return try decodeUUID(at: offset, path: path) as! T }
        if T.self == Data.self { return try decodeData(at: offset, path: path) as! T }
        if T.self == Decimal.self { return try decodeDecimal(at: offset, path: path) as! T }
        if T.self == URL.self { return try decodeURL(at: offset, path: path) as! T }
        let savedOffset = self.offset
        let savedPath = codingPath
        self.offset = offset
        codingPath = path
        defer {
            self.offset = savedOffset
            codingPath = savedPath
        }
        return try T(from: self)
    }

    func decodeString(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> String {
        var reader = CBORReader(bytes, offset: offset)
        do {
            guard let utf8 = try reader.readStringBytes(major: 3) else {
                throw mismatch(String.self, at: offset, path: path())
            }
            // ASCII (most field text) is valid UTF-8 as it is; only other text needs validating.
            var isASCII = true
            for byte in utf8 where byte >= 0x80 {
                isASCII = false
                break
            }
            if isASCII { return String(decoding: utf8, as: UTF8.self) }
            guard let string = String(validating: utf8, as: UTF8.self) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "a text string is not valid UTF-8"))
            }
            return string
        } catch let failure as CBORReader.Failure {
            throw corrupted(failure, path: path())
        }
    }

    func decodeInteger<I: FixedWidthInteger>(
        _ type: I.Type, at offset: Int, path: @autoclosure () -> [any CodingKey]
    ) throws
        -> I
    {
        var reader = CBORReader(bytes, offset: offset)
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do { head = try reader.readHead() } catch { throw corrupted(error, path: path()) }
        switch head.major {
        case 0:
            if let value = I(exactly: head.argument) { return value }
        case 1:
            if head.argument <= UInt64(Int64.max), let value = I(exactly: -1 - Int64(head.argument)) {
                return value
            }
        case 7 where head.info >= 25 && head.info <= 27:
            let double = try decodeFloatingPoint(at: offset, path: path())
            if let value = I(exactly: double) { return value }
        default:
            throw mismatch(I.self, at: offset, path: path())
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: path(), debugDescription: "the number does not fit in \(I.self)"))
    }

    func decodeFloatingPoint(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        var reader = CBORReader(bytes, offset: offset)
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do { head = try reader.readHead() } catch { throw corrupted(error, path: path()) }
        switch (head.major, head.info) {
        case (7, 25): return Double(Float16Bits(UInt16(head.argument)).value)
        case (7, 26): return Double(Float(bitPattern: UInt32(head.argument)))
        case (7, 27): return Double(bitPattern: head.argument)
        case (0, _): return Double(head.argument)
        case (1, _): return -1 - Double(head.argument)
        default: throw mismatch(Double.self, at: offset, path: path())
        }
    }

    func decodeBool(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard offset < bytes.count else { throw corrupted(.truncated(at: offset), path: path()) }
        switch bytes[offset] {
        case 0xf4: return false
        case 0xf5: return true
        default: throw mismatch(Bool.self, at: offset, path: path())
        }
    }

    /// Reads a tag if one is at `offset`; returns it and the offset of the tagged item.
    func tag(at offset: Int) throws -> (tag: UInt64?, content: Int) {
        var reader = CBORReader(bytes, offset: offset)
        guard offset < bytes.count, bytes[offset] >> 5 == 6 else { return (nil, offset) }
        let head = try reader.readHead()
        return (head.argument, reader.offset)
    }

    func decodeDate(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Date {
        let (tag, content) = try tag(at: offset)
        switch tag {
        case 1?:
            return Date(timeIntervalSince1970: try decodeFloatingPoint(at: content, path: path()))
        case CBORTags.referenceDate?:
            return Date(timeIntervalSinceReferenceDate: try decodeFloatingPoint(at: content, path: path()))
        case 0?:
            let text = try decodeString(at: content, path: path())
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "not an RFC 3339 date: \(text)"))
            }
            return date
        default:
            throw mismatch(Date.self, at: offset, path: path(), found: tag.map { "tag \($0)" })
        }
    }

    func byteString(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> UnsafeRawBufferPointer
    {
        var reader = CBORReader(bytes, offset: offset)
        do {
            guard let raw = try reader.readStringBytes(major: 2) else {
                throw mismatch(Data.self, at: offset, path: path())
            }
            return raw
        } catch let failure as CBORReader.Failure {
            throw corrupted(failure, path: path())
        }
    }

    func decodeUUID(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> UUID {
        let (tag, content) = try tag(at: offset)
        if tag == nil, offset < bytes.count, bytes[offset] >> 5 == 3 {
            let text = try decodeString(at: offset, path: path())
            guard let uuid = UUID(uuidString: text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "not a UUID: \(text)"))
            }
            return uuid
        }
        guard tag == 37 || tag == nil else {
            throw mismatch(UUID.self, at: offset, path: path(), found: "tag \(tag!)")
        }
        let raw = try byteString(at: content, path: path())
        guard raw.count == 16 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "a UUID needs 16 bytes, not \(raw.count)"))
        }
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: raw) }
        return UUID(uuid: uuid)
    }

    func decodeData(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Data {
        Data(try byteString(at: offset, path: path()))
    }

    func decodeURL(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> URL {
        let (tag, content) = try tag(at: offset)
        let text = try decodeString(at: tag == 32 ? content : offset, path: path())
        guard let url = URL(string: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "not a URL: \(text)"))
        }
        return url
    }

    func decodeDecimal(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> Decimal {
        let (tag, content) = try tag(at: offset)
        guard tag == 4 else {
            // A plain number is accepted too.
            if tag == nil, offset < bytes.count, bytes[offset] >> 5 <= 1 {
                return Decimal(try decodeInteger(Int64.self, at: offset, path: path()))
            }
            throw mismatch(Decimal.self, at: offset, path: path())
        }
        var reader = CBORReader(bytes, offset: content)
        let head = try reader.readHead()
        guard head.major == 4, head.argument == 2 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "tag 4 needs [exponent, mantissa]"))
        }
        let exponent = try decodeInteger(Int.self, at: reader.offset, path: path())
        try reader.skipItem()
        let mantissaOffset = reader.offset
        var magnitude = Decimal(0)
        var negative = false
        let (mantissaTag, mantissaContent) = try self.tag(at: mantissaOffset)
        if let mantissaTag {
            guard mantissaTag == 2 || mantissaTag == 3 else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "a bad decimal mantissa"))
            }
            for byte in try byteString(at: mantissaContent, path: path()) {
                magnitude = magnitude * 256 + Decimal(byte)
            }
            if mantissaTag == 3 {
                negative = true
                magnitude += 1
            }
        } else {
            var mantissaReader = CBORReader(bytes, offset: mantissaOffset)
            let mantissaHead = try mantissaReader.readHead()
            guard mantissaHead.major <= 1 else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "a bad decimal mantissa"))
            }
            magnitude = Decimal(mantissaHead.argument)
            if mantissaHead.major == 1 {
                negative = true
                magnitude += 1
            }
        }
        return Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: magnitude)
    }
}

/// IEEE half-precision bits → Float (CBOR's smallest float).
struct Float16Bits {
    let bits: UInt16
    init(_ bits: UInt16) { self.bits = bits }
    var value: Float {
        let sign: Float = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1f)
        let fraction = Float(bits & 0x3ff)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default:
            return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}

/// The entries of one CBOR map, found as they are asked for: synthesized `Decodable` code asks for
/// fields in declaration order, which is the order they were written, so each lookup usually
/// finds its key right where the previous one stopped.
///
/// One allocation holds the scan state and the entries seen (a `ManagedBuffer`), and every access
/// goes through its pointers: a decode asks this index once per field, so it does without the
/// dynamic exclusivity checks and array growth that class properties would cost.
final class CBORMapIndex: ManagedBuffer<CBORMapIndex.Header, CBORMapIndex.Entry> {
    struct Header {
        /// How many entries the map has.
        var count: Int
        /// How many entries have been scanned.
        var known = 0
        /// Where the next unseen entry starts (after the last one: where the map ends).
        var scanOffset: Int
        /// Where the next lookup starts looking.
        var cursor = 0
        /// 1 for an indefinite-length map: the break byte that ends it after the last entry.
        var trailer = 0
    }

    struct Entry {
        /// Where the key's text starts, and its length (-1 for a key that is not text).
        var keyStart: Int
        package var keyLength: Int
        /// Where the value starts.
        var value: Int
    }

    /// An index of the map whose head has been read: `count` entries (nil: indefinite length, counted
    /// here) starting at `firstEntry`.
    static func make(
        count: Int?, firstEntry: Int, in bytes: UnsafeRawBufferPointer, reusing spare: CBORMapIndex? = nil
    ) throws(CBORReader.Failure) -> CBORMapIndex {
        var entries = count ?? 0
        if count == nil {
            var reader = CBORReader(bytes, offset: firstEntry)
            while try reader.peekByte() != 0xff {
                try reader.skipItem()
                try reader.skipItem()
                entries += 1
            }
        }
        if let spare, spare.capacity >= entries {
            // Entries are plain integers: the old ones need no deinitializing.
            spare.withUnsafeMutablePointerToHeader {
                $0.pointee = Header(count: entries, scanOffset: firstEntry, trailer: count == nil ? 1 : 0)
            }
            return spare
        }
        let buffer = create(minimumCapacity: entries) { _ in
            Header(count: entries, scanOffset: firstEntry, trailer: count == nil ? 1 : 0)
        }
        return unsafeDowncast(buffer, to: CBORMapIndex.self)
    }

    /// Where the map ends (after its break byte, if indefinite), once every entry has been scanned.
    var end: Int? {
        withUnsafeMutablePointerToHeader {
            $0.pointee.known == $0.pointee.count ? $0.pointee.scanOffset + $0.pointee.trailer : nil
        }
    }

    /// Reads the next entry; false at the end.
    @inline(__always)
    private func scanNext(
        _ header: UnsafeMutablePointer<Header>, _ entries: UnsafeMutablePointer<Entry>,
        _ bytes: UnsafeRawBufferPointer
    ) throws(CBORReader.Failure) -> Bool {
        let known = header.pointee.known
        guard known < header.pointee.count else { return false }
        var reader = CBORReader(bytes, offset: header.pointee.scanOffset)
        let keyStart: Int
        let keyLength: Int
        if let text = try reader.readStringBytes(major: 3) {
            keyStart = text.baseAddress! - bytes.baseAddress!
            keyLength = text.count
            // Field names are nearly always ASCII; anything else must be UTF-8, or no field could
            // ever match it and the decode would report a missing field instead of the bad name.
            if !text.allSatisfy({ $0 < 0x80 }), String(validating: text, as: UTF8.self) == nil {
                throw .malformed("the field name at byte \(keyStart) is not valid UTF-8", at: keyStart)
            }
        } else {
            try reader.skipItem()
            keyStart = 0
            keyLength = -1
        }
        let value = reader.offset
        try reader.skipItem()
        (entries + known).initialize(to: Entry(keyStart: keyStart, keyLength: keyLength, value: value))
        header.pointee.known = known + 1
        header.pointee.scanOffset = reader.offset
        return true
    }

    /// Scans every remaining entry.
    func scanAll(_ bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) {
        try withUnsafeMutablePointers { header, entries throws(CBORReader.Failure) in
            while try scanNext(header, entries, bytes) {}
        }
    }

    @inline(__always)
    private static func matches(
        _ entry: Entry, _ name: UnsafeBufferPointer<UInt8>, _ bytes: UnsafeRawBufferPointer
    )
        -> Bool
    {
        guard entry.keyLength == name.count else { return false }
        var index = 0
        while index < name.count {
            if bytes[entry.keyStart + index] != name[index] { return false }
            index += 1
        }
        return true
    }

    /// The offset of the value under `name`, or nil.
    func valueOffset(for name: String, in bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) -> Int? {
        var failure: CBORReader.Failure?
        let found = name.utf8.withContiguousStorageIfAvailable { utf8 -> Int? in
            do throws(CBORReader.Failure) { return try valueOffset(forUTF8: utf8, in: bytes) } catch {
                failure = error
                return nil
            }
        }
        if let failure { throw failure }
        if let found { return found }
        let copy = Array(name.utf8)
        return try copy.withUnsafeBufferPointer { utf8 throws(CBORReader.Failure) in
            try valueOffset(forUTF8: utf8, in: bytes)
        }
    }

    private func valueOffset(forUTF8 name: UnsafeBufferPointer<UInt8>, in bytes: UnsafeRawBufferPointer)
        throws(CBORReader.Failure) -> Int?
    {
        try withUnsafeMutablePointers { header, entries throws(CBORReader.Failure) -> Int? in
            // Look from the cursor to the end of what is known, then scan on, then wrap around.
            let cursor = header.pointee.cursor
            var index = cursor
            while index < header.pointee.known {
                if Self.matches(entries[index], name, bytes) {
                    header.pointee.cursor = index + 1
                    return entries[index].value
                }
                index += 1
            }
            while try scanNext(header, entries, bytes) {
                let last = header.pointee.known - 1
                if Self.matches(entries[last], name, bytes) {
                    header.pointee.cursor = last + 1
                    return entries[last].value
                }
            }
            index = 0
            while index < min(cursor, header.pointee.known) {
                if Self.matches(entries[index], name, bytes) {
                    header.pointee.cursor = index + 1
                    return entries[index].value
                }
                index += 1
            }
            return nil
        }
    }

    /// Every text key of the map, in order.
    func allKeys(in bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) -> [String] {
        try scanAll(bytes)
        return withUnsafeMutablePointers { header, entries in
            (0..<header.pointee.known).compactMap { index in
                let entry = entries[index]
                guard entry.keyLength >= 0 else { return nil }
                return String(
                    decoding: UnsafeRawBufferPointer(
                        rebasing: bytes[entry.keyStart..<entry.keyStart + entry.keyLength]),
                    as: UTF8.self)
            }
        }
    }

    deinit {
        _ = withUnsafeMutablePointers { header, entries in entries.deinitialize(count: header.pointee.known) }
    }
}

struct CBORKeyedDecodingContainer<Key: CodingKey>: IntegerForwardingKeyedDecoder {
    let state: CBORDecodingState
    let path: [any CodingKey]
    let index: CBORMapIndex
    var codingPath: [any CodingKey] { path }

    init(state: CBORDecodingState, offset: Int, path: [any CodingKey]) throws {
        self.state = state
        self.path = path
        let (count, firstEntry) = try state.container(
            at: offset, major: 5, as: [String: Any].self, path: path)
        var spare: CBORMapIndex?
        if offset == 0, var candidate = state.spareRoot {
            state.spareRoot = nil
            if isKnownUniquelyReferenced(&candidate) { spare = candidate }
        }
        do {
            index = try CBORMapIndex.make(
                count: count, firstEntry: firstEntry, in: state.bytes, reusing: spare)
        } catch { throw state.corrupted(error, path: path) }
        if offset == 0 { state.root = index }
    }

    var allKeys: [Key] { ((try? index.allKeys(in: state.bytes)) ?? []).compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        (try? index.valueOffset(for: key.stringValue, in: state.bytes)) != nil
    }

    private func offset(for key: Key) throws -> Int {
        let found: Int?
        do { found = try index.valueOffset(for: key.stringValue, in: state.bytes) } catch {
            throw state.corrupted(error, path: path)
        }
        guard let found else {
            throw DecodingError.keyNotFound(
                key,
                .init(codingPath: path, debugDescription: "the record has no field \"\(key.stringValue)\""))
        }
        return found
    }

    func decodeNil(forKey key: Key) throws -> Bool { state.isNil(at: try offset(for: key)) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try state.decodeBool(at: try offset(for: key), path: path + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try state.decodeString(at: try offset(for: key), path: path + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try state.decodeFloatingPoint(at: try offset(for: key), path: path + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try state.decodeFloatingPoint(at: try offset(for: key), path: path + [key]))
    }

    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type, forKey key: Key) throws -> I {
        try state.decodeInteger(I.self, at: try offset(for: key), path: path + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        let at = try offset(for: key)
        // The common case without the generic path: an integer head that fits.
        var reader = CBORReader(state.bytes, offset: at)
        if let head = try? reader.readHead(), head.argument <= UInt64(Int.max) {
            if head.major == 0 { return Int(head.argument) }
            if head.major == 1 { return -1 - Int(head.argument) }
        }
        return try state.decodeInteger(Int.self, at: at, path: path + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let at = try offset(for: key)
        if state.isNil(at: at) {
            // Optional fields written as null decode through decodeIfPresent; anything else is missing.
            throw DecodingError.valueNotFound(
                type, .init(codingPath: path + [key], debugDescription: "the field is null"))
        }
        return try state.decodeValue(T.self, at: at, path: path + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(
            try CBORKeyedDecodingContainer<NestedKey>(
                state: state, offset: try offset(for: key), path: path + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(state: state, offset: try offset(for: key), path: path + [key])
    }

    func superDecoder() throws -> any Decoder { try superDecoder(forKey: Key(stringValue: "super")!) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        CBORNestedDecoder(state: state, offset: try offset(for: key), path: path + [key])
    }
}

/// A decoder positioned on one value (for super decoders).
struct CBORNestedDecoder: Decoder {
    let state: CBORDecodingState
    let offset: Int
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try CBORKeyedDecodingContainer<Key>(state: state, offset: offset, path: path))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(state: state, offset: offset, path: path)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        CBORSingleValueDecodingContainer(state: state, offset: offset, path: path)
    }
}

struct CBORUnkeyedDecodingContainer: IntegerForwardingUnkeyedDecoder {
    let state: CBORDecodingState
    let path: [any CodingKey]
    let count: Int?
    var currentIndex = 0
    var position: Int
    var codingPath: [any CodingKey] { path }

    init(state: CBORDecodingState, offset: Int, path: [any CodingKey]) throws {
        self.state = state
        self.path = path
        (count, position) = try state.container(at: offset, major: 4, as: [Any].self, path: path)
    }

    var isAtEnd: Bool {
        if let count { return currentIndex >= count }
        return position >= state.bytes.count || state.bytes[position] == 0xff
    }

    private var elementPath: [any CodingKey] { path + [ArrayIndexKey(currentIndex)] }

    private mutating func next<T>(_ body: (CBORDecodingState, Int, [any CodingKey]) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, .init(codingPath: elementPath, debugDescription: "the array has no more elements"))
        }
        let value = try body(state, position, elementPath)
        var reader = CBORReader(state.bytes, offset: position)
        do { try reader.skipItem() } catch { throw state.corrupted(error, path: elementPath) }
        position = reader.offset
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, state.isNil(at: position) else { return false }
        position += 1
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try next { try $0.decodeBool(at: $1, path: $2) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        try next { try $0.decodeString(at: $1, path: $2) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try next { try $0.decodeFloatingPoint(at: $1, path: $2) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        try next { Float(try $0.decodeFloatingPoint(at: $1, path: $2)) }
    }

    mutating func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        try next { try $0.decodeInteger(I.self, at: $1, path: $2) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next { try $0.decodeValue(T.self, at: $1, path: $2) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try next {
            KeyedDecodingContainer(try CBORKeyedDecodingContainer<NestedKey>(state: $0, offset: $1, path: $2))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next { try CBORUnkeyedDecodingContainer(state: $0, offset: $1, path: $2) }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next { CBORNestedDecoder(state: $0, offset: $1, path: $2) }
    }
}

struct CBORSingleValueDecodingContainer: IntegerForwardingSingleValueDecoder {
    let state: CBORDecodingState
    let offset: Int
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }

    func decodeNil() -> Bool { state.isNil(at: offset) }
    func decode(_ type: Bool.Type) throws -> Bool { try state.decodeBool(at: offset, path: path) }
    func decode(_ type: String.Type) throws -> String { try state.decodeString(at: offset, path: path) }
    func decode(_ type: Double.Type) throws -> Double {
        try state.decodeFloatingPoint(at: offset, path: path)
    }
    func decode(_ type: Float.Type) throws -> Float {
        Float(try state.decodeFloatingPoint(at: offset, path: path))
    }
    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        try state.decodeInteger(I.self, at: offset, path: path)
    }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try state.decodeValue(T.self, at: offset, path: path)
    }
}
