import Foundation

/// Encodes `Encodable` values as CBOR (RFC 8949): structs and classes as maps keyed by field name,
/// arrays as arrays, optionals as null, and Foundation's value types as their standard tagged forms so
/// any CBOR decoder reads them: `Date` as tag 1 (seconds since 1970, a float; tag 40001, seconds since
/// 2001, when tag 1 would round it), `UUID` as tag 37 over
/// 16 bytes, `Data` as a byte string, `Decimal` as tag 4 (a decimal fraction), `URL` as tag 32.
///
/// The output is written in one pass into one buffer: no intermediate tree, no per-field copies.
public struct CBOREncoder: Sendable {
    /// Makes an encoder.
    public init() {}

    /// The CBOR bytes of `value`.
    ///
    /// - Complexity: O(*b*) for the *b* bytes written.
    /// - Throws: `EncodingError` for a value CBOR cannot hold (a non-string map key, a nested container used
    ///   twice), or what `T`'s `encode(to:)` throws.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let state = CBOREncodingState.borrow(tracksShape: false)
        defer { state.giveBack() }
        try state.encodeValue(value)
        state.closeContainers(from: 0)
        return state.writer.bytes
    }

    /// The CBOR bytes of a record, with a hash of its top-level field names in order and the kind of
    /// each one's value (see ``FieldKind``), so a writer can tell a record shape it has seen without
    /// reading the record again.
    package func encodeRecord<T: Encodable>(_ value: T) throws -> (bytes: [UInt8], shape: UInt64) {
        try withEncodedRecord(value) { (Array($0), $1) }
    }

    /// Encodes a record as ``encodeRecord(_:)`` does and hands `body` its bytes, in a buffer the
    /// thread reuses record after record (valid only during `body`), and its shape.
    ///
    /// A nil optional is left out of the record, as synthesized `Codable` leaves it out, except for a
    /// top-level field in `nullFields`: there it is written as null. Those are the fields with a
    /// schema default, which a record that lacks the field reads as: a nil left out would read back
    /// as the default.
    package func withEncodedRecord<T: Encodable, R>(
        _ value: T, nullFields: Set<String>? = nil, _ body: (UnsafeRawBufferPointer, UInt64) throws -> R
    ) throws -> R {
        let state = CBOREncodingState.borrow(tracksShape: true)
        defer { state.giveBack() }
        if let nullFields { state.storage.pointee.nullFields = nullFields }
        try state.encodeValue(value)
        state.foldPendingKind()
        state.closeContainers(from: 0)
        return try state.writer.bytes.withUnsafeBytes { try body($0, state.topLevelShape) }
    }
}

/// The key under which each thread keeps the encoding state it reuses (see
/// `CBOREncodingState.borrow(tracksShape:)`).
private let threadEncoderKey = makeThreadStateKey()

/// The encoder that `Encodable` values write into. Containers are written in place as they are
/// opened; each one's item count is patched in when the next write at an outer level (or the end)
/// closes it.
///
/// A thread reuses one state (its buffer and its table of open containers) for encode after encode.
final class CBOREncodingState: Encoder, ThreadCodingState {
    struct OpenContainer {
        var position: Int
        var major: UInt8
        var count: Int
    }

    /// Everything an encode changes, behind a pointer: the class has no stored `var` whose every
    /// access would pay a dynamic exclusivity check.
    struct Storage {
        var writer = CBORWriter()
        var open: [OpenContainer] = []
        /// The depth at which the value being encoded places its container.
        var valueDepth = 0
        /// The coding path, kept as the enclosing container's path plus the key being encoded, so
        /// that encoding a field allocates no array.
        var basePath: [any CodingKey] = []
        var currentKey: (any CodingKey)?
        /// Whether `currentKey` is set (cheaper to test than the optional existential).
        var hasCurrentKey = false
        /// Whether the top-level shape is hashed (records), and the hash so far.
        var tracksShape = false
        var topLevelShape = FieldShape.basis
        /// Where the value of the last top-level field written begins (its kind is folded into the
        /// shape when the next field begins, or at the end), or -1.
        var pendingValueStart = -1
        /// Set while an encode uses this state.
        var isInUse = false
        /// Whether this is a thread's state (see `borrow(tracksShape:)`), and the record containers it
        /// made, by key type (see `container(keyedBy:)`): a few, the types the thread writes.
        var isThreadState = false
        var rootContainers: [(type: ObjectIdentifier, container: AnyObject)] = []
        /// The top-level fields whose nil is written as null, not left out (see
        /// `CBOREncoder.withEncodedRecord(_:nullFields:_:)`).
        var nullFields: Set<String> = []
    }

    let storage: UnsafeMutablePointer<Storage>

    var writer: CBORWriter {
        get { storage.pointee.writer }
        _modify { yield &storage.pointee.writer }
    }
    var open: [OpenContainer] {
        get { storage.pointee.open }
        _modify { yield &storage.pointee.open }
    }
    var valueDepth: Int {
        get { storage.pointee.valueDepth }
        set { storage.pointee.valueDepth = newValue }
    }
    var basePath: [any CodingKey] {
        get { storage.pointee.basePath }
        set { storage.pointee.basePath = newValue }
    }
    var currentKey: (any CodingKey)? {
        get { storage.pointee.hasCurrentKey ? storage.pointee.currentKey : nil }
        set {
            storage.pointee.currentKey = newValue
            storage.pointee.hasCurrentKey = newValue != nil
        }
    }
    var topLevelShape: UInt64 {
        get { storage.pointee.topLevelShape }
        set { storage.pointee.topLevelShape = newValue }
    }
    var pendingValueStart: Int {
        get { storage.pointee.pendingValueStart }
        set { storage.pointee.pendingValueStart = newValue }
    }

    var codingPath: [any CodingKey] {
        get {
            guard storage.pointee.hasCurrentKey, let key = storage.pointee.currentKey else { return basePath }
            return basePath + [key]
        }
        set {
            basePath = newValue
            currentKey = nil
        }
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: Storage())
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// This thread's state, emptied, when no encode on the thread is using it, else a new one.
    static func borrow(tracksShape: Bool) -> CBOREncodingState {
        let state: CBOREncodingState
        if let raw = pthread_getspecific(threadEncoderKey) {
            let cached = Unmanaged<CBOREncodingState>.fromOpaque(raw).takeUnretainedValue()
            state = cached.storage.pointee.isInUse ? CBOREncodingState() : cached
        } else {
            state = CBOREncodingState()
            state.storage.pointee.isThreadState = true
            pthread_setspecific(threadEncoderKey, Unmanaged.passRetained(state).toOpaque())
        }
        state.storage.pointee.isInUse = true
        state.storage.pointee.tracksShape = tracksShape
        return state
    }

    func dropCachedContainers() { storage.pointee.rootContainers = [] }

    /// Ends a borrowed state's encode: its buffers are emptied and kept for the next one (a buffer
    /// grown past 64 KiB by a large value is let go).
    func giveBack() {
        let storage = self.storage
        if storage.pointee.writer.bytes.capacity > 1 << 16 {
            storage.pointee.writer = CBORWriter()
        } else {
            storage.pointee.writer.bytes.removeAll(keepingCapacity: true)
        }
        storage.pointee.topLevelShape = FieldShape.basis
        storage.pointee.pendingValueStart = -1
        if !storage.pointee.nullFields.isEmpty { storage.pointee.nullFields = [] }
        // A finished encode closed its containers and restored its path; one that threw may not have.
        if !storage.pointee.open.isEmpty || storage.pointee.valueDepth != 0
            || !storage.pointee.basePath.isEmpty
            || storage.pointee.hasCurrentKey
        {
            storage.pointee.open.removeAll(keepingCapacity: true)
            storage.pointee.valueDepth = 0
            storage.pointee.basePath = []
            storage.pointee.currentKey = nil
            storage.pointee.hasCurrentKey = false
        }
        storage.pointee.isInUse = false
    }

    /// Folds the kind of the last top-level field's value into the shape.
    func foldPendingKind() {
        let start = pendingValueStart
        guard start >= 0, start < writer.bytes.count else { return }
        topLevelShape = FieldShape.adding(
            kind: FieldKind.of(initialByte: writer.bytes[start]), to: topLevelShape)
        pendingValueStart = -1
    }

    /// Finalizes every container at `depth` and deeper.
    func closeContainers(from depth: Int) {
        while open.count > depth {
            let container = open.removeLast()
            writer.patchCount(at: container.position, major: container.major, count: container.count)
        }
    }

    /// Opens a container for the current value, or returns the one it already opened.
    func openContainer(major: UInt8) -> Int {
        if open.count > valueDepth {
            closeContainers(from: valueDepth + 1)
            return valueDepth
        }
        open.append(OpenContainer(position: writer.bytes.count, major: major, count: 0))
        writer.bytes.append(major << 5)  // placeholder head, patched when the container closes
        return open.count - 1
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let depth = openContainer(major: 5)
        guard depth == 0, storage.pointee.isThreadState else {
            return KeyedEncodingContainer(
                CBORKeyedEncodingContainer<Key>(state: self, depth: depth, path: codingPath))
        }
        // A record's own container (depth 0, an empty path) is the same for every record of a type:
        // made once per type and thread, it saves the generic metadata lookups and the box that
        // `KeyedEncodingContainer` allocates.
        let type = ObjectIdentifier(Key.self)
        for entry in storage.pointee.rootContainers where entry.type == type {
            return unsafeDowncast(entry.container, to: CachedContainer<KeyedEncodingContainer<Key>>.self)
                .value
        }
        let container = KeyedEncodingContainer(
            CBORKeyedEncodingContainer<Key>(state: self, depth: 0, path: []))
        if storage.pointee.rootContainers.count == 8 { storage.pointee.rootContainers.removeFirst() }
        storage.pointee.rootContainers.append((type, CachedContainer(container)))
        return container
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        CBORUnkeyedEncodingContainer(state: self, depth: openContainer(major: 4), path: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        CBORSingleValueEncodingContainer(state: self, path: codingPath)
    }

    /// Writes one value at the current position.
    func encodeValue<T: Encodable>(_ value: T) throws {
        // Type identity checks are cheap; a dynamic cast per value would not be.
        if T.self == String.self {
            writer.text(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            writer.integer(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Double.self {
            writer.double(unsafeBitCast(value, to: Double.self))
        } else if T.self == Bool.self {
            writer.bool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Date.self {
            writer.date(unsafeBitCast(value, to: Date.self))
        } else if T.self == UUID.self {
            writer.tag(37)
            withUnsafeBytes(of: unsafeBitCast(value, to: UUID.self).uuid) { writer.byteString($0) }
        } else if T.self == Data.self {
            (value as! Data).withUnsafeBytes { writer.byteString($0) }
        } else if T.self == Decimal.self {
            try encodeDecimal(value as! Decimal)
        } else if T.self == URL.self {
            writer.tag(32)
            writer.text((value as! URL).absoluteString)
        } else {
            try encodeComposite(value)
        }
    }

    private func encodeComposite<T: Encodable>(_ value: T) throws {
        let start = writer.bytes.count
        let savedDepth = valueDepth
        valueDepth = open.count
        defer { valueDepth = savedDepth }
        try value.encode(to: self)
        closeContainers(from: valueDepth)
        if writer.bytes.count == start { writer.bytes.append(0xa0) }  // encoded nothing: an empty map
    }

    /// Tag 4: `[exponent, mantissa]`, the mantissa an integer or a bignum (tags 2 and 3).
    private func encodeDecimal(_ decimal: Decimal) throws {
        guard decimal.isFinite else {
            throw EncodingError.invalidValue(
                decimal, .init(codingPath: codingPath, debugDescription: "NaN Decimal cannot be stored"))
        }
        // The significand's decimal digits, turned into a big-endian magnitude.
        var mantissa: [UInt8] = []
        for digit in decimal.significand.magnitude.description.utf8 where digit >= 48 && digit <= 57 {
            var carry = Int(digit - 48)
            for index in mantissa.indices.reversed() {
                let value = Int(mantissa[index]) * 10 + carry
                mantissa[index] = UInt8(value & 0xff)
                carry = value >> 8
            }
            while carry > 0 {
                mantissa.insert(UInt8(carry & 0xff), at: 0)
                carry >>= 8
            }
        }
        if mantissa.isEmpty { mantissa = [0] }
        let negative = decimal.sign == .minus && !decimal.isZero
        writer.tag(4)
        writer.head(4, 2)
        writer.integer(Int64(decimal.exponent))
        if mantissa.count <= 8 {
            let magnitude = mantissa.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if negative {
                writer.head(1, magnitude - 1)
            } else {
                writer.head(0, magnitude)
            }
        } else {
            if negative {
                // Tag 3 holds -1 - n: subtract one from the magnitude.
                var index = mantissa.count - 1
                while mantissa[index] == 0 {
                    mantissa[index] = 0xff
                    index -= 1
                }
                mantissa[index] -= 1
            }
            writer.tag(negative ? 3 : 2)
            mantissa.withUnsafeBytes { writer.byteString($0) }
        }
    }

    func encodeInteger<I: BinaryInteger>(_ value: I) {
        if let small = Int64(exactly: value) {
            writer.integer(small)
        } else {
            writer.unsigned(UInt64(value))
        }
    }
}

struct CBORKeyedEncodingContainer<Key: CodingKey>: IntegerForwardingKeyedEncoder, NilAwareKeyedEncoder {
    let state: CBOREncodingState
    let depth: Int
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }

    @inline(__always)
    private func beginEntry(_ key: Key) {
        state.closeContainers(from: depth + 1)
        state.open[depth].count += 1
        let name = key.stringValue
        guard depth == 0, state.storage.pointee.tracksShape else {
            state.writer.text(name)
            return
        }
        state.foldPendingKind()
        let start = state.writer.text(name)
        state.topLevelShape = state.writer.bytes.withUnsafeBytes {
            FieldShape.adding(bytes: UnsafeRawBufferPointer(rebasing: $0[start...]), to: state.topLevelShape)
        }
        state.pendingValueStart = state.writer.bytes.count
    }

    mutating func encodeNil(forKey key: Key) throws {
        beginEntry(key)
        state.writer.null()
    }

    /// What `encodeIfPresent` writes for nil: nothing, or null for a top-level field whose nil must
    /// not read back as its schema default.
    mutating func encodeAbsent(forKey key: Key) throws {
        guard depth == 0, !state.storage.pointee.nullFields.isEmpty,
            state.storage.pointee.nullFields.contains(key.stringValue)
        else { return }
        try encodeNil(forKey: key)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        beginEntry(key)
        state.writer.bool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        beginEntry(key)
        state.writer.text(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        beginEntry(key)
        state.writer.double(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        beginEntry(key)
        state.writer.float(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        beginEntry(key)
        state.writer.integer(Int64(value))
    }

    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I, forKey key: Key) throws {
        beginEntry(key)
        state.encodeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        beginEntry(key)
        let (savedBase, savedKey) = (state.basePath, state.currentKey)
        state.basePath = path
        state.currentKey = key
        defer { (state.basePath, state.currentKey) = (savedBase, savedKey) }
        try state.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        beginEntry(key)
        state.open.append(.init(position: state.writer.bytes.count, major: 5, count: 0))
        state.writer.bytes.append(5 << 5)
        return KeyedEncodingContainer(
            CBORKeyedEncodingContainer<NestedKey>(
                state: state, depth: state.open.count - 1, path: path + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        beginEntry(key)
        state.open.append(.init(position: state.writer.bytes.count, major: 4, count: 0))
        state.writer.bytes.append(4 << 5)
        return CBORUnkeyedEncodingContainer(state: state, depth: state.open.count - 1, path: path + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        beginEntry(key)
        return CBORNestedEncoder(state: state, path: path + [key])
    }
}

/// An encoder for a value whose position is already reserved (a super encoder): its first
/// container or single value lands there.
struct CBORNestedEncoder: Encoder {
    let state: CBOREncodingState
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        state.valueDepth = state.open.count
        return state.container(keyedBy: type)
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        state.valueDepth = state.open.count
        return state.unkeyedContainer()
    }
    func singleValueContainer() -> any SingleValueEncodingContainer {
        CBORSingleValueEncodingContainer(state: state, path: path)
    }
}

struct CBORUnkeyedEncodingContainer: IntegerForwardingUnkeyedEncoder {
    let state: CBOREncodingState
    let depth: Int
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }
    var count: Int { state.open.count > depth ? state.open[depth].count : 0 }

    @inline(__always)
    private func beginElement() {
        state.closeContainers(from: depth + 1)
        state.open[depth].count += 1
    }

    mutating func encodeNil() throws {
        beginElement()
        state.writer.null()
    }
    mutating func encode(_ value: Bool) throws {
        beginElement()
        state.writer.bool(value)
    }
    mutating func encode(_ value: String) throws {
        beginElement()
        state.writer.text(value)
    }
    mutating func encode(_ value: Double) throws {
        beginElement()
        state.writer.double(value)
    }
    mutating func encode(_ value: Float) throws {
        beginElement()
        state.writer.float(value)
    }
    mutating func encode(_ value: Int) throws {
        beginElement()
        state.writer.integer(Int64(value))
    }

    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I) throws {
        beginElement()
        state.encodeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        beginElement()
        let (savedBase, savedKey) = (state.basePath, state.currentKey)
        state.basePath = path
        state.currentKey = ArrayIndexKey(count - 1)
        defer { (state.basePath, state.currentKey) = (savedBase, savedKey) }
        try state.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        beginElement()
        state.open.append(.init(position: state.writer.bytes.count, major: 5, count: 0))
        state.writer.bytes.append(5 << 5)
        return KeyedEncodingContainer(
            CBORKeyedEncodingContainer<NestedKey>(state: state, depth: state.open.count - 1, path: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        beginElement()
        state.open.append(.init(position: state.writer.bytes.count, major: 4, count: 0))
        state.writer.bytes.append(4 << 5)
        return CBORUnkeyedEncodingContainer(state: state, depth: state.open.count - 1, path: path)
    }

    mutating func superEncoder() -> any Encoder {
        beginElement()
        return CBORNestedEncoder(state: state, path: path)
    }
}

struct CBORSingleValueEncodingContainer: IntegerForwardingSingleValueEncoder {
    let state: CBOREncodingState
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }

    mutating func encodeNil() throws { state.writer.null() }
    mutating func encode(_ value: Bool) throws { state.writer.bool(value) }
    mutating func encode(_ value: String) throws { state.writer.text(value) }
    mutating func encode(_ value: Double) throws { state.writer.double(value) }
    mutating func encode(_ value: Float) throws { state.writer.float(value) }
    mutating func encode(_ value: Int) throws { state.writer.integer(Int64(value)) }
    mutating func encodeInteger<I: BinaryInteger & Encodable>(_ value: I) throws {
        state.encodeInteger(value)
    }
    mutating func encode<T: Encodable>(_ value: T) throws { try state.encodeValue(value) }
}
