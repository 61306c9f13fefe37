import Foundation

/// Encodes values as **order-preserving** key bytes: comparing two encodings with `memcmp` gives the
/// same order as comparing the values, so LMDB's default comparison sorts primary keys and index
/// entries by value. Every encoding is self-delimiting, so encodings concatenate into compound keys
/// that sort component by component. (A text or data encoding is a byte prefix of a longer value's
/// whose next byte is `FF`, an escaped zero; no tag is `FF`.)
///
/// | value | bytes |
/// |---|---|
/// | `nil` | `05` (before every value) |
/// | `false`, `true` | `10`, `11` |
/// | integers that fit `Int64` | `20` + 8 bytes big-endian with the sign bit flipped |
/// | larger `UInt64` | `21` + 8 bytes big-endian |
/// | `Double`, `Float` | `30` + 8 bytes: IEEE bits, sign bit flipped for positives, all bits for negatives (`-0` as `0`) |
/// | `String` | `40` + UTF-8 of the NFC form, `00` written `00 FF`, then `00` |
/// | `Data` | `50` + bytes, `00` written `00 FF`, then `00` |
/// | `UUID` | `60` + its 16 bytes |
/// | `Date` | `70` + seconds since 2001 (Foundation's reference date) as the `Double` encoding's 8 bytes |
/// | `Decimal` | as its `Double` value (tag `30`) |
/// | arrays | `80` + elements + `01` |
/// | structs and enums with payloads | `90` + (field name as a string, value)… + `01` |
///
/// Enums with raw values encode as their raw value, because that is how `Codable` writes them.
public struct KeyEncoder: Sendable {
    /// Makes an encoder.
    public init() {}

    /// The key bytes of `value`.
    ///
    /// - Complexity: O(*b*) for the *b* bytes written.
    /// - Throws: `EncodingError` for a value the key encoding cannot hold (a dictionary, a nested keyed
    ///   container), or what `T`'s `encode(to:)` throws.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try append(value, to: &bytes)
        return bytes
    }

    /// Whether `bytes` are the key encoding of the integer `value` (no bytes made to compare).
    @inlinable @inline(__always)
    public static func isKey(_ bytes: UnsafeBufferPointer<UInt8>, ofInteger value: Int64) -> Bool {
        guard bytes.count == 9, bytes[0] == KeyTag.integer else { return false }
        return UInt64(bigEndian: UnsafeRawPointer(bytes.baseAddress! + 1).loadUnaligned(as: UInt64.self))
            == KeyTag.integerWord(value)
    }

    /// Calls `body` with the key bytes of the integer `value`, made on the stack.
    /// - Throws: what `body` throws.
    package static func withIntegerKey<R>(_ value: Int64, _ body: (UnsafeRawBufferPointer) throws -> R)
        rethrows -> R
    {
        // The tag, then the integer's word big-endian (as `append` writes it).
        var storage: (UInt64, UInt64) = (0, 0)
        return try withUnsafeMutableBytes(of: &storage) { buffer in
            buffer[0] = KeyTag.integer
            buffer.storeBytes(of: KeyTag.integerWord(value).bigEndian, toByteOffset: 1, as: UInt64.self)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<9]))
        }
    }

    /// Appends the key bytes of `value` to `bytes`.
    ///
    /// - Throws: as ``encode(_:)``; `bytes` is left as it was.
    public func append<T: Encodable>(_ value: T, to bytes: inout [UInt8]) throws {
        if T.self == Int.self {
            // The most common key, without an encoder object.
            KeyEncodingState.appendInteger(Int64(unsafeBitCast(value, to: Int.self)), to: &bytes)
            return
        }
        if T.self == CBORValue.self {
            // A stored value (a link's key, an untyped record's field): an integer or a string as
            // the Swift value it holds, without its `Encodable` containers and their casts.
            switch unsafeBitCast(value, to: CBORValue.self) {
            case .unsigned(let number) where number <= UInt64(Int64.max):
                return KeyEncodingState.appendInteger(Int64(number), to: &bytes)
            case .negative(let number) where number <= UInt64(Int64.max):
                return KeyEncodingState.appendInteger(-1 - Int64(number), to: &bytes)
            case .text(let text):
                return try append(text, to: &bytes)
            default:
                break
            }
        }
        let state = KeyEncodingState()
        swap(&state.bytes, &bytes)
        defer { swap(&state.bytes, &bytes) }
        try state.encodeValue(value)
        state.closeAll()
    }

    /// The bytes every key of a string that starts with `prefix` starts with (for prefix scans).
    package static func stringPrefixBytes(_ prefix: String) -> [UInt8] {
        KeyEncodingState.stringPrefixBytes(prefix)
    }
}

@usableFromInline
enum KeyTag {
    /// An integer key's eight bytes after its tag, as a word written big-endian: the value with its
    /// sign bit flipped, so that keys sort as the integers do.
    @inlinable @inline(__always)
    static func integerWord(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }

    static let null: UInt8 = 0x05
    static let `false`: UInt8 = 0x10
    static let `true`: UInt8 = 0x11
    @inlinable static var integer: UInt8 { 0x20 }
    static let largeUnsigned: UInt8 = 0x21
    static let double: UInt8 = 0x30
    static let string: UInt8 = 0x40
    static let data: UInt8 = 0x50
    static let uuid: UInt8 = 0x60
    static let date: UInt8 = 0x70
    static let array: UInt8 = 0x80
    static let map: UInt8 = 0x90
    static let end: UInt8 = 0x01
}

final class KeyEncodingState: Encoder {
    var bytes: [UInt8] = []
    /// Containers opened and not yet closed (each gets an end byte when closed), with the depth of
    /// the value that opened them.
    var openCount = 0
    var valueDepth = 0
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func closeContainers(from depth: Int) {
        while openCount > depth {
            bytes.append(KeyTag.end)
            openCount -= 1
        }
    }

    func closeAll() { closeContainers(from: 0) }

    func open(_ tag: UInt8) -> Int {
        if openCount > valueDepth {
            closeContainers(from: valueDepth + 1)
            return valueDepth
        }
        bytes.append(tag)
        openCount += 1
        return openCount - 1
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyKeyedContainer<Key>(state: self, depth: open(KeyTag.map)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        KeyUnkeyedContainer(state: self, depth: open(KeyTag.array))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        KeySingleValueContainer(state: self)
    }

    // MARK: Scalars

    func integer(_ value: Int64) { Self.appendInteger(value, to: &bytes) }

    static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + 9)
        bytes.append(KeyTag.integer)
        let flipped = KeyTag.integerWord(value)
        // Byte by byte, most significant first: cheaper than a generic copy of eight bytes.
        var shift = 56
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: flipped >> UInt64(shift)))
            shift -= 8
        }
    }

    func unsigned(_ value: UInt64) {
        if value <= UInt64(Int64.max) {
            integer(Int64(value))
        } else {
            bytes.append(KeyTag.largeUnsigned)
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
    }

    static func orderedBits(_ value: Double) -> UInt64 {
        let normalized = value == 0 ? 0.0 : value  // -0 sorts with 0
        let bits = normalized.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    func double(_ value: Double, tag: UInt8 = KeyTag.double) {
        bytes.append(tag)
        withUnsafeBytes(of: Self.orderedBits(value).bigEndian) { bytes.append(contentsOf: $0) }
    }

    func bool(_ value: Bool) { bytes.append(value ? KeyTag.true : KeyTag.false) }

    func null() { bytes.append(KeyTag.null) }

    func escaped(_ raw: UnsafeRawBufferPointer, tag: UInt8) {
        bytes.append(tag)
        for byte in raw {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xff) }
        }
        bytes.append(0)
    }

    func string(_ value: String) {
        var normalized = KeyEncodingState.isASCII(value) ? value : value.precomposedStringWithCanonicalMapping
        normalized.withUTF8 { escaped(UnsafeRawBufferPointer($0), tag: KeyTag.string) }
    }

    /// The bytes `string` contributes before its terminator: what every string starting with it
    /// begins with (for prefix scans).
    static func stringPrefixBytes(_ value: String) -> [UInt8] {
        let state = KeyEncodingState()
        state.string(value)
        state.bytes.removeLast()  // the terminator
        return state.bytes
    }

    static func isASCII(_ value: String) -> Bool { value.utf8.allSatisfy { $0 < 0x80 } }

    func encodeValue<T: Encodable>(_ value: T) throws {
        if T.self == String.self {
            string(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            integer(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Double.self {
            double(unsafeBitCast(value, to: Double.self))
        } else if T.self == Bool.self {
            bool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == UUID.self {
            bytes.append(KeyTag.uuid)
            withUnsafeBytes(of: unsafeBitCast(value, to: UUID.self).uuid) { bytes.append(contentsOf: $0) }
        } else if T.self == Date.self {
            double(unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate, tag: KeyTag.date)
        } else if T.self == Data.self {
            (value as! Data).withUnsafeBytes { escaped($0, tag: KeyTag.data) }
        } else if T.self == Decimal.self {
            double(NSDecimalNumber(decimal: value as! Decimal).doubleValue)
        } else if T.self == URL.self {
            string((value as! URL).absoluteString)
        } else {
            let start = bytes.count
            let saved = valueDepth
            valueDepth = openCount
            defer { valueDepth = saved }
            try value.encode(to: self)
            closeContainers(from: valueDepth)
            if bytes.count == start {
                bytes.append(KeyTag.map)
                bytes.append(KeyTag.end)
            }
        }
    }

    func encodeInteger<I: BinaryInteger>(_ value: I) {
        if let signed = Int64(exactly: value) {
            integer(signed)
        } else {
            unsigned(UInt64(value))
        }
    }
}

struct KeyKeyedContainer<Key: CodingKey>: IntegerForwardingKeyedEncoder {
    let state: KeyEncodingState
    let depth: Int
    var codingPath: [any CodingKey] { state.codingPath }

    private func begin(_ key: Key) {
        state.closeContainers(from: depth + 1)
        state.string(key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws {
        begin(key)
        state.null()
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        begin(key)
        state.bool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        begin(key)
        state.string(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        begin(key)
        state.double(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        begin(key)
        state.double(Double(value))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        begin(key)
        state.integer(Int64(value))
    }

    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I, forKey key: Key) throws {
        begin(key)
        state.encodeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        begin(key)
        try state.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        begin(key)
        state.bytes.append(KeyTag.map)
        state.openCount += 1
        return KeyedEncodingContainer(KeyKeyedContainer<NestedKey>(state: state, depth: state.openCount - 1))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        begin(key)
        state.bytes.append(KeyTag.array)
        state.openCount += 1
        return KeyUnkeyedContainer(state: state, depth: state.openCount - 1)
    }

    mutating func superEncoder() -> any Encoder { state }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        begin(key)
        return state
    }
}

struct KeyUnkeyedContainer: IntegerForwardingUnkeyedEncoder {
    let state: KeyEncodingState
    let depth: Int
    var count = 0
    var codingPath: [any CodingKey] { state.codingPath }

    private mutating func begin() {
        state.closeContainers(from: depth + 1)
        count += 1
    }

    mutating func encodeNil() throws {
        begin()
        state.null()
    }
    mutating func encode(_ value: Bool) throws {
        begin()
        state.bool(value)
    }
    mutating func encode(_ value: String) throws {
        begin()
        state.string(value)
    }
    mutating func encode(_ value: Double) throws {
        begin()
        state.double(value)
    }
    mutating func encode(_ value: Float) throws {
        begin()
        state.double(Double(value))
    }
    mutating func encode(_ value: Int) throws {
        begin()
        state.integer(Int64(value))
    }

    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I) throws {
        begin()
        state.encodeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        begin()
        try state.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        begin()
        state.bytes.append(KeyTag.map)
        state.openCount += 1
        return KeyedEncodingContainer(KeyKeyedContainer<NestedKey>(state: state, depth: state.openCount - 1))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        begin()
        state.bytes.append(KeyTag.array)
        state.openCount += 1
        return KeyUnkeyedContainer(state: state, depth: state.openCount - 1)
    }

    mutating func superEncoder() -> any Encoder {
        begin()
        return state
    }
}

struct KeySingleValueContainer: IntegerForwardingSingleValueEncoder {
    let state: KeyEncodingState
    var codingPath: [any CodingKey] { state.codingPath }

    mutating func encodeNil() throws { state.null() }
    mutating func encode(_ value: Bool) throws { state.bool(value) }
    mutating func encode(_ value: String) throws { state.string(value) }
    mutating func encode(_ value: Double) throws { state.double(value) }
    mutating func encode(_ value: Float) throws { state.double(Double(value)) }
    mutating func encode(_ value: Int) throws { state.integer(Int64(value)) }
    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I) throws {
        state.encodeInteger(value)
    }
    mutating func encode<T: Encodable>(_ value: T) throws { try state.encodeValue(value) }
}
