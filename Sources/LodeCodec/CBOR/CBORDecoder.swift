import Foundation

/// Decodes `Decodable` values from CBOR written by ``CBOREncoder`` (or any writer that uses the
/// same conventions: definite lengths, maps keyed by text, tags 1, 37, 4, 2, 3 and 32 for dates,
/// UUIDs, decimals, bignums and URLs). Decoding reads the bytes in place. A string, array or map of
/// indefinite length is refused, as every reader of Lode records refuses it.
public struct CBORDecoder: Sendable {
    /// Makes a decoder.
    public init() {}

    /// Decodes a `T` from `bytes`, which must hold exactly one data item.
    ///
    /// - Complexity: O(*b*) for *b* bytes when fields are asked for in the order they were written (as
    ///   synthesized `Decodable` code does); a field asked for out of order costs a walk of its map.
    /// - Throws: `DecodingError` when the bytes are not CBOR or do not hold a `T` (the error's coding path
    ///   names the field), or what `T`'s `init(from:)` throws.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        let state = CBORDecodingState.borrow()
        defer { state.giveBack() }
        return try decode(type, from: bytes, state: state)
    }

    /// Decodes with a state that may have decoded other items before (see
    /// `CBORDecodingState.prepare(_:)`).
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, state: CBORDecodingState)
        throws -> T
    {
        state.prepare(bytes)
        defer { state.finish() }
        let value = try state.decodeValue(T.self, at: 0, parent: -1, key: .none)
        // The item must be well formed to its end and be all there is.
        let end: Int
        var duplicate: String?
        do throws(CBORReader.Failure) {
            if let root = state.rootFrame {
                end = try state.scanToEnd(root)
                duplicate = try state.duplicateKey(in: root)
            } else {
                var reader = CBORReader(bytes)
                try reader.skipItem()
                end = reader.offset
            }
        } catch {
            throw state.corrupted(error, path: [])
        }
        guard end == bytes.count else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\(bytes.count - end) bytes follow the CBOR item"))
        }
        // RFC 8949 §5.6: a map with a key twice is not valid; reading either value would hide the other.
        if let duplicate {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [FieldNameKey(stringValue: duplicate)],
                    debugDescription: "the map holds the field \"\(duplicate)\" twice"))
        }
        return value
    }

    /// The names of the top-level fields of the record `bytes` that `T`'s `init(from:)` asks for
    /// (looks up, decodes, checks for or lists) while it decodes the record: the fields the type knows.
    ///
    /// - Throws: what ``decode(_:from:)-(_,UnsafeRawBufferPointer)`` throws.
    package func fieldsRead<T: Decodable>(by type: T.Type, from bytes: UnsafeRawBufferPointer) throws
        -> Set<String>
    {
        // A state of its own: the thread's caches its record containers, and this decode is rare.
        let state = CBORDecodingState()
        state.storage.pointee.notesFields = true
        _ = try decode(type, from: bytes, state: state)
        return state.storage.pointee.fieldsRead
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

/// The key under which each thread keeps the decoding state it reuses (see
/// `CBORDecodingState.borrow()`).
private let threadStateKey = makeThreadStateKey()

/// The state of one decode: the bytes, where the value being decoded starts and the path to it, and
/// a table of the maps opened so far (one frame each), so that containers are two words (the state
/// and a frame number) and a coding path is put together only when someone asks for it.
///
/// A thread reuses one state for decode after decode (`borrow()`): no allocation per record but the
/// container boxes `Codable` itself makes.
final class CBORDecodingState: Decoder, ThreadCodingState {
    /// One map (or array) opened by a container: where it is, how far lookups have walked it, and the
    /// key that leads to it from its parent (for coding paths).
    struct Frame {
        /// The frame this one's value sits in (-1: the item decoded), and the key or array position
        /// under which it sits there.
        var parent: Int
        var key: PathKey
        /// The number of entries and where the first starts.
        var count: Int
        var firstEntry: Int
        /// The next entry a lookup looks at, and where it starts.
        var cursorIndex: Int
        var cursorOffset: Int
        /// How many entries have been read (and their keys checked) and where the next unread one
        /// starts: after the last entry, where the map ends.
        var frontierIndex: Int
        var frontierOffset: Int
        /// The entry found last, to answer `contains`, `decodeNil` and `decode` for one key with one walk:
        /// where its key's text starts (-1: none yet), its length and where its value starts.
        var lastKeyStart = -1
        var lastKeyLength = 0
        var lastValue = 0
    }

    /// Everything a decode changes, behind a pointer: the class has no stored `var` whose every access
    /// would pay a dynamic exclusivity check.
    struct Storage {
        var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        /// Where the value being decoded by `T(from: self)` starts, and the frame and key it sits under.
        var offset = 0
        var valueParent = -1
        var valueKey = PathKey.none
        /// The frames, `frameCount` of `frameCapacity` initialized.
        var frames: UnsafeMutablePointer<Frame>
        var frameCount = 0
        var frameCapacity: Int
        /// The frame of the map at offset 0, when the item decoded is one: the decode walks on from
        /// where its lookups stopped to find where the item ends.
        var rootFrame: Int?
        /// Set while a decode uses this state.
        var isInUse = false
        /// The failure a map walk ran into (see `valueOffset(forUTF8:in:)`).
        var failure: CBORReader.Failure?
        /// Whether this is a thread's state (see `borrow()`), and the record containers it made, by
        /// key type (see `container(keyedBy:)`): a few, the types the thread reads.
        var isThreadState = false
        var rootContainers: [(type: ObjectIdentifier, container: AnyObject)] = []
        /// Whether the decode notes the top-level field names the type asks for (see
        /// ``CBORDecoder/fieldsRead(by:from:)``), and the names noted.
        var notesFields = false
        var fieldsRead: Set<String> = []
    }

    let storage: UnsafeMutablePointer<Storage>

    var bytes: UnsafeRawBufferPointer {
        get { storage.pointee.bytes }
        set { storage.pointee.bytes = newValue }
    }
    var offset: Int {
        get { storage.pointee.offset }
        set { storage.pointee.offset = newValue }
    }
    var valueParent: Int {
        get { storage.pointee.valueParent }
        set { storage.pointee.valueParent = newValue }
    }
    var valueKey: PathKey {
        get { storage.pointee.valueKey }
        set { storage.pointee.valueKey = newValue }
    }
    var frames: UnsafeMutablePointer<Frame> {
        get { storage.pointee.frames }
        set { storage.pointee.frames = newValue }
    }
    var frameCount: Int {
        get { storage.pointee.frameCount }
        set { storage.pointee.frameCount = newValue }
    }
    var frameCapacity: Int {
        get { storage.pointee.frameCapacity }
        set { storage.pointee.frameCapacity = newValue }
    }
    var rootFrame: Int? {
        get { storage.pointee.rootFrame }
        set { storage.pointee.rootFrame = newValue }
    }
    var isInUse: Bool {
        get { storage.pointee.isInUse }
        set { storage.pointee.isInUse = newValue }
    }
    var failure: CBORReader.Failure? {
        get { storage.pointee.failure }
        set { storage.pointee.failure = newValue }
    }

    var codingPath: [any CodingKey] { path(valueParent, valueKey) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: Storage(frames: .allocate(capacity: 8), frameCapacity: 8))
    }

    deinit {
        frames.deinitialize(count: frameCount)
        frames.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// This thread's state when no decode on the thread is using it, else a new one.
    static func borrow() -> CBORDecodingState {
        if let raw = pthread_getspecific(threadStateKey) {
            let state = Unmanaged<CBORDecodingState>.fromOpaque(raw).takeUnretainedValue()
            if !state.isInUse {
                state.isInUse = true
                return state
            }
            let nested = CBORDecodingState()
            nested.isInUse = true
            return nested
        }
        let state = CBORDecodingState()
        state.isInUse = true
        state.storage.pointee.isThreadState = true
        pthread_setspecific(threadStateKey, Unmanaged.passRetained(state).toOpaque())
        return state
    }

    /// Ends a borrowed state's decode.
    func giveBack() { isInUse = false }

    func dropCachedContainers() { storage.pointee.rootContainers = [] }

    /// Points the state at the next item to decode.
    func prepare(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        offset = 0
        valueParent = -1
        valueKey = .none
        rootFrame = nil
        failure = nil
        if frameCount > 0 {
            frames.deinitialize(count: frameCount)
            frameCount = 0
        }
    }

    /// Ends a decode: the frames stay allocated for the next one, the bytes are forgotten.
    func finish() {
        bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        valueKey = .none
    }

    /// The coding path of the value under `key` in frame `parent` (-1: the item decoded).
    func path(_ parent: Int, _ key: PathKey) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        key.append(to: &keys)
        var frame = parent
        while frame >= 0 {
            frames[frame].key.append(to: &keys)
            frame = frames[frame].parent
        }
        return keys.reversed()
    }

    /// The coding path of the value under `key` in frame `parent`.
    func path(_ parent: Int, _ key: some CodingKey) -> [any CodingKey] { path(parent, .none) + [key] }

    /// The coding path of the container of `frame`.
    func path(of frame: Int) -> [any CodingKey] { path(frames[frame].parent, frames[frame].key) }

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
        guard offset == 0, valueParent == -1, frameCount == 0, storage.pointee.isThreadState else {
            return KeyedDecodingContainer(
                try CBORKeyedDecodingContainer<Key>(
                    state: self, offset: offset, parent: valueParent, key: valueKey))
        }
        // A record's own container (frame 0) is the same for every record of a type: made once per type
        // and thread, it saves the generic metadata lookups and the box `KeyedDecodingContainer`
        // allocates.
        let frame = try openFrame(at: 0, major: 5, as: [String: Any].self, parent: -1, key: .none)
        let type = ObjectIdentifier(Key.self)
        for entry in storage.pointee.rootContainers where entry.type == type {
            return unsafeDowncast(entry.container, to: CachedContainer<KeyedDecodingContainer<Key>>.self)
                .value
        }
        let container = KeyedDecodingContainer(CBORKeyedDecodingContainer<Key>(state: self, frame: frame))
        if storage.pointee.rootContainers.count == 8 { storage.pointee.rootContainers.removeFirst() }
        storage.pointee.rootContainers.append((type, CachedContainer(container)))
        return container
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(state: self, offset: offset, parent: valueParent, key: valueKey)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        CBORSingleValueDecodingContainer(state: self, offset: offset, parent: valueParent, key: valueKey)
    }

    // MARK: Frames

    /// Opens a frame for the container (major type 5, a map; 4, an array) whose head is at `offset`,
    /// under `key` in frame `parent`. Throws a type mismatch (naming `type`) for another kind of item,
    /// and a truncation for a count larger than the bytes could hold.
    func openFrame<T>(at offset: Int, major: UInt8, as type: T.Type, parent: Int, key: PathKey) throws
        -> Int
    {
        var reader = CBORReader(bytes, offset: offset)
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do { head = try reader.readHead() } catch { throw corrupted(error, path: path(parent, key)) }
        guard head.major == major else { throw mismatch(type, at: offset, path: path(parent, key)) }
        guard head.info != 31 else {
            throw corrupted(.indefinite(major: major, at: offset), path: path(parent, key))
        }
        guard head.argument <= UInt64(bytes.count) else {
            throw corrupted(.truncated(at: offset), path: path(parent, key))
        }
        if frameCount == frameCapacity {
            let larger = UnsafeMutablePointer<Frame>.allocate(capacity: frameCapacity * 2)
            larger.moveInitialize(from: frames, count: frameCount)
            frames.deallocate()
            frames = larger
            frameCapacity *= 2
        }
        let count = Int(head.argument)
        (frames + frameCount).initialize(
            to: Frame(
                parent: parent, key: key, count: count, firstEntry: reader.offset, cursorIndex: 0,
                cursorOffset: reader.offset, frontierIndex: 0, frontierOffset: reader.offset))
        frameCount += 1
        if offset == 0, parent == -1, major == 5, rootFrame == nil { rootFrame = frameCount - 1 }
        return frameCount - 1
    }

    // MARK: Values

    func decodeValue<T: Decodable>(_ type: T.Type, at offset: Int, parent: Int, key: PathKey) throws -> T {
        if T.self == String.self {
            return unsafeBitCast(try decodeString(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Int.self {
            return unsafeBitCast(try decodeInteger(Int.self, at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Double.self {
            return unsafeBitCast(try decodeFloatingPoint(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Bool.self {
            return unsafeBitCast(try decodeBool(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Date.self {
            return unsafeBitCast(try decodeDate(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == UUID.self {
            return unsafeBitCast(try decodeUUID(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Data.self {
            return unsafeBitCast(try decodeData(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == Decimal.self {
            return unsafeBitCast(try decodeDecimal(at: offset, path: path(parent, key)), to: T.self)
        }
        if T.self == URL.self {
            return unsafeBitCast(try decodeURL(at: offset, path: path(parent, key)), to: T.self)
        }
        let saved = (self.offset, valueParent, valueKey)
        self.offset = offset
        valueParent = parent
        valueKey = key
        defer { (self.offset, valueParent, valueKey) = saved }
        return try T(from: self)
    }

    func decodeString(at offset: Int, path: @autoclosure () -> [any CodingKey]) throws -> String {
        var reader = CBORReader(bytes, offset: offset)
        do {
            guard let utf8 = try reader.readStringBytes(major: 3) else {
                throw mismatch(String.self, at: offset, path: path())
            }
            guard let string = UTF8Text.string(utf8) else {
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
        case nil where JSONForms.areAccepted && offset < bytes.count && isNumber(bytes[offset]):
            return Date(timeIntervalSince1970: try decodeFloatingPoint(at: offset, path: path()))
        default:
            throw mismatch(Date.self, at: offset, path: path(), found: tag.map { "tag \($0)" })
        }
    }

    /// Whether the item whose first byte is `initial` is an integer or a floating-point number.
    private func isNumber(_ initial: UInt8) -> Bool {
        initial >> 5 <= 1 || (initial >= 0xf9 && initial <= 0xfb)
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
        if JSONForms.areAccepted, offset < bytes.count, bytes[offset] >> 5 == 3 {
            let text = try decodeString(at: offset, path: path())
            guard let data = JSONForms.base64(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path(), debugDescription: "not Base64 data"))
            }
            return data
        }
        return Data(try byteString(at: offset, path: path()))
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
            if JSONForms.areAccepted, tag == nil, offset < bytes.count, isNumber(bytes[offset]) {
                let number = try decodeFloatingPoint(at: offset, path: path())
                if number.isFinite, let decimal = Decimal(string: "\(number)") { return decimal }
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
@usableFromInline struct Float16Bits {
    let bits: UInt16
    @usableFromInline init(_ bits: UInt16) { self.bits = bits }
    @usableFromInline var value: Float {
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
/// A container a coder keeps for reuse, found again by its key type (the cache is keyed by it, so the
/// unchecked downcast back is safe).
final class CachedContainer<Value> {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A step of a coding path as the decoder keeps it: no existential to copy per value, made into a
/// `CodingKey` only when a path is asked for.
enum PathKey {
    case none
    case name(String)
    case index(Int)

    func append(to keys: inout [any CodingKey]) {
        switch self {
        case .none: break
        case .name(let name): keys.append(FieldNameKey(stringValue: name))
        case .index(let index): keys.append(ArrayIndexKey(index))
        }
    }
}

/// A field's name as a coding key in a decoding error's path.
struct FieldNameKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

// MARK: - Maps

extension CBORDecodingState {
    /// Reads the entry at `offset` of a map: where its key's text starts and its length (-1 for a key
    /// that is not text), where its value starts, and where the next entry starts. A key read for the
    /// first time (`checkKey`) must be valid UTF-8, or no field could ever match it and the decode
    /// would report a missing field instead of the bad name.
    @inline(__always)
    private func readEntry(at offset: Int, checkKey: Bool) throws(CBORReader.Failure) -> (
        keyStart: Int, keyLength: Int, value: Int, next: Int
    ) {
        guard offset < bytes.count else { throw .truncated(at: offset) }
        let initial = bytes[offset]
        let keyStart: Int
        let keyLength: Int
        let value: Int
        if initial >= 0x60 && initial < 0x78 {
            // A text key shorter than 24 bytes, as field names are: its length is in the head.
            keyStart = offset + 1
            keyLength = Int(initial &- 0x60)
            value = keyStart + keyLength
            guard value <= bytes.count else { throw .truncated(at: offset) }
        } else {
            var reader = CBORReader(bytes, offset: offset)
            if let text = try reader.readStringBytes(major: 3) {
                keyStart = reader.offset - text.count
                keyLength = text.count
            } else {
                try reader.skipItem()
                keyStart = 0
                keyLength = -1
            }
            value = reader.offset
        }
        if checkKey { try checkKeyText(keyStart, keyLength) }
        return (keyStart, keyLength, value, try itemEnd(at: value))
    }

    /// Throws when the text key of `length` bytes at `start` (in bounds) is not valid UTF-8.
    @inline(__always)
    private func checkKeyText(_ start: Int, _ length: Int) throws(CBORReader.Failure) {
        guard length > 0, !isASCII(start, length) else { return }
        if String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<start + length]), as: UTF8.self)
            == nil
        {
            throw .malformed("the field name at byte \(start) is not valid UTF-8", at: start)
        }
    }

    /// Where the item at `offset` ends: integers, floats, simple values and short strings read here,
    /// anything else (and anything malformed or truncated) by the reader.
    @inline(__always)
    func itemEnd(at offset: Int) throws(CBORReader.Failure) -> Int {
        guard offset < bytes.count else { throw .truncated(at: offset) }
        let initial = bytes[offset]
        let info = Int(initial & 0x1f)
        var end = -1
        switch initial >> 5 {
        case 0, 1:
            if info < 24 {
                end = offset + 1
            } else if info <= 27 {
                end = offset + 1 + (1 << (info - 24))
            }
        case 2, 3:
            if info < 24 { end = offset + 1 + info }
        case 7:
            if info < 24 {
                end = offset + 1
            } else if info >= 25 && info <= 27 {
                end = offset + 1 + (1 << (info - 24))
            }
        default:
            break
        }
        if end < 0 || end > bytes.count {
            var reader = CBORReader(bytes, offset: offset)
            try reader.skipItem()
            return reader.offset
        }
        return end
    }

    /// Whether the `length` bytes at `start` (in bounds) are ASCII: eight at a time, then one by one.
    @inline(__always)
    private func isASCII(_ start: Int, _ length: Int) -> Bool {
        let base = bytes.baseAddress! + start
        var position = 0
        var bits: UInt64 = 0
        while position + 8 <= length {
            bits |= base.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            position += 8
        }
        while position < length {
            bits |= UInt64(base.load(fromByteOffset: position, as: UInt8.self))
            position += 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    /// Whether the key of `length` bytes at `start` (in bounds) is `name`: eight bytes at a time.
    @inline(__always)
    private func keyMatches(_ start: Int, _ length: Int, _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard length == name.count else { return false }
        guard length > 0 else { return true }
        let key = bytes.baseAddress! + start
        let other = UnsafeRawPointer(name.baseAddress!)
        var position = 0
        while position + 8 <= length {
            if key.loadUnaligned(fromByteOffset: position, as: UInt64.self)
                != other.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            {
                return false
            }
            position += 8
        }
        while position < length {
            if key.load(fromByteOffset: position, as: UInt8.self)
                != other.load(fromByteOffset: position, as: UInt8.self)
            {
                return false
            }
            position += 1
        }
        return true
    }

    /// Whether the map of `frame` has an entry at its `index`th position, or has ended.
    @inline(__always)
    private func hasEntry(_ frame: UnsafeMutablePointer<Frame>, index: Int) -> Bool {
        index < frame.pointee.count
    }

    /// Where the value under the key `name` starts in the map of frame `number`: -1 when there is no
    /// such key, -2 when the map is malformed (`failure` says how).
    ///
    /// Synthesized `Decodable` code asks for fields in declaration order, which is the order the
    /// encoder wrote them, so the entry at the cursor is nearly always the one asked for: the walk
    /// reads one entry per field. A field asked for again (`decodeIfPresent` asks `contains`,
    /// `decodeNil` and `decode`) is the last one found; a field out of order walks on to the end, then
    /// from the start to the cursor.
    func valueOffset(forUTF8 name: UnsafeBufferPointer<UInt8>, in number: Int) -> Int {
        let frame = frames + number
        if frame.pointee.lastKeyStart >= 0,
            keyMatches(frame.pointee.lastKeyStart, frame.pointee.lastKeyLength, name)
        {
            return frame.pointee.lastValue
        }
        do throws(CBORReader.Failure) {
            let cursor = frame.pointee.cursorIndex
            var index = cursor
            var offset = frame.pointee.cursorOffset
            while hasEntry(frame, index: index) {
                // A key read for the first time is checked unless it is the name asked for (valid text).
                let entry = try readEntry(at: offset, checkKey: false)
                let firstRead = index >= frame.pointee.frontierIndex
                if firstRead {
                    frame.pointee.frontierIndex = index + 1
                    frame.pointee.frontierOffset = entry.next
                }
                index += 1
                offset = entry.next
                let matches = keyMatches(entry.keyStart, entry.keyLength, name)
                if firstRead && !matches { try checkKeyText(entry.keyStart, entry.keyLength) }
                if matches {
                    frame.pointee.cursorIndex = index
                    frame.pointee.cursorOffset = offset
                    frame.pointee.lastKeyStart = entry.keyStart
                    frame.pointee.lastKeyLength = entry.keyLength
                    frame.pointee.lastValue = entry.value
                    return entry.value
                }
            }
            index = 0
            offset = frame.pointee.firstEntry
            while index < cursor {
                let entry = try readEntry(at: offset, checkKey: false)
                index += 1
                offset = entry.next
                if keyMatches(entry.keyStart, entry.keyLength, name) {
                    frame.pointee.cursorIndex = index
                    frame.pointee.cursorOffset = offset
                    frame.pointee.lastKeyStart = entry.keyStart
                    frame.pointee.lastKeyLength = entry.keyLength
                    frame.pointee.lastValue = entry.value
                    return entry.value
                }
            }
            return -1
        } catch {
            failure = error
            return -2
        }
    }

    /// Reads the rest of the map of frame `number` (what no lookup read) and returns where it ends.
    func scanToEnd(_ number: Int) throws(CBORReader.Failure) -> Int {
        let frame = frames + number
        var index = frame.pointee.frontierIndex
        var offset = frame.pointee.frontierOffset
        while hasEntry(frame, index: index) {
            offset = try readEntry(at: offset, checkKey: true).next
            index += 1
        }
        frame.pointee.frontierIndex = index
        frame.pointee.frontierOffset = offset
        return offset
    }

    /// A text key the map of frame `number` holds more than once, or nil. The map has been read to
    /// its end (`scanToEnd`). Compares each key with the ones before it: records have a few fields.
    func duplicateKey(in number: Int) throws(CBORReader.Failure) -> String? {
        let frame = frames + number
        let count = frame.pointee.frontierIndex
        guard count > 1 else { return nil }
        return try withUnsafeTemporaryAllocation(of: (start: Int, length: Int).self, capacity: count) {
            keys throws(CBORReader.Failure) -> String? in
            var offset = frame.pointee.firstEntry
            for index in 0..<count {
                let entry = try readEntry(at: offset, checkKey: false)
                offset = entry.next
                keys[index] = (entry.keyStart, entry.keyLength)
                guard entry.keyLength >= 0 else { continue }
                for earlier in 0..<index where keys[earlier].length == entry.keyLength {
                    let name = UnsafeBufferPointer(
                        start: (bytes.baseAddress! + entry.keyStart).assumingMemoryBound(to: UInt8.self),
                        count: entry.keyLength)
                    if keyMatches(keys[earlier].start, keys[earlier].length, name) {
                        return String(decoding: name, as: UTF8.self)
                    }
                }
            }
            return nil
        }
    }

    /// Every text key of the map of frame `number`, in order.
    func allKeys(in number: Int) throws(CBORReader.Failure) -> [String] {
        _ = try scanToEnd(number)
        let frame = frames + number
        var keys: [String] = []
        var index = 0
        var offset = frame.pointee.firstEntry
        while hasEntry(frame, index: index) {
            let entry = try readEntry(at: offset, checkKey: false)
            if entry.keyLength >= 0 {
                keys.append(
                    String(
                        decoding: UnsafeRawBufferPointer(
                            rebasing: bytes[entry.keyStart..<entry.keyStart + entry.keyLength]),
                        as: UTF8.self))
            }
            index += 1
            offset = entry.next
        }
        if storage.pointee.notesFields { noteFields(keys, frame: number) }
        return keys
    }

    /// Notes `names` as read by the type when `frame` is the record's own map.
    func noteFields(_ names: [String], frame: Int) {
        guard frames[frame].parent == -1 else { return }
        storage.pointee.fieldsRead.formUnion(names)
    }
}

// MARK: - Containers

struct CBORKeyedDecodingContainer<Key: CodingKey>: IntegerForwardingKeyedDecoder {
    let state: CBORDecodingState
    let frame: Int
    var codingPath: [any CodingKey] { state.path(of: frame) }

    init(state: CBORDecodingState, offset: Int, parent: Int, key: PathKey) throws {
        self.state = state
        frame = try state.openFrame(at: offset, major: 5, as: [String: Any].self, parent: parent, key: key)
    }

    /// A container for a frame already open.
    init(state: CBORDecodingState, frame: Int) {
        self.state = state
        self.frame = frame
    }

    var allKeys: [Key] { ((try? state.allKeys(in: frame)) ?? []).compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { (try? lookup(key)) ?? -1 >= 0 }

    /// Where the value under `key` starts, or -1.
    @inline(__always)
    private func lookup(_ key: Key) throws -> Int {
        var name = key.stringValue
        if state.storage.pointee.notesFields { state.noteFields([name], frame: frame) }
        let found = name.withUTF8 { state.valueOffset(forUTF8: $0, in: frame) }
        if found == -2, let failure = state.failure { throw state.corrupted(failure, path: codingPath) }
        return found
    }

    private func offset(for key: Key) throws -> Int {
        let found = try lookup(key)
        guard found >= 0 else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath, debugDescription: "the record has no field \"\(key.stringValue)\""
                ))
        }
        return found
    }

    /// Where the value under `key` starts, or nil when the map has no such key or holds null there.
    private func presentOffset(for key: Key) throws -> Int? {
        let found = try lookup(key)
        return found < 0 || state.isNil(at: found) ? nil : found
    }

    func decodeNil(forKey key: Key) throws -> Bool { state.isNil(at: try offset(for: key)) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try state.decodeBool(at: try offset(for: key), path: state.path(frame, key))
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try state.decodeString(at: try offset(for: key), path: state.path(frame, key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try state.decodeFloatingPoint(at: try offset(for: key), path: state.path(frame, key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try state.decodeFloatingPoint(at: try offset(for: key), path: state.path(frame, key)))
    }

    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type, forKey key: Key) throws -> I {
        try state.decodeInteger(I.self, at: try offset(for: key), path: state.path(frame, key))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try decodeInt(at: try offset(for: key), key)
    }

    /// The `Int` at `at`: the common case (an integer head that fits) without the generic path.
    @inline(__always)
    private func decodeInt(at: Int, _ key: Key) throws -> Int {
        var reader = CBORReader(state.bytes, offset: at)
        if let head = try? reader.readHead(), head.argument <= UInt64(Int.max) {
            if head.major == 0 { return Int(head.argument) }
            if head.major == 1 { return -1 - Int(head.argument) }
        }
        return try state.decodeInteger(Int.self, at: at, path: state.path(frame, key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let at = try offset(for: key)
        if state.isNil(at: at) {
            // Optional fields written as null decode through decodeIfPresent; anything else is missing.
            throw DecodingError.valueNotFound(
                type, .init(codingPath: state.path(frame, key), debugDescription: "the field is null"))
        }
        return try state.decodeValue(T.self, at: at, parent: frame, key: .name(key.stringValue))
    }

    // One walk for an optional field, where the protocol's own versions ask three times.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let at = try presentOffset(for: key) else { return nil }
        return try state.decodeBool(at: at, path: state.path(frame, key))
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let at = try presentOffset(for: key) else { return nil }
        return try state.decodeString(at: at, path: state.path(frame, key))
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let at = try presentOffset(for: key) else { return nil }
        return try state.decodeFloatingPoint(at: at, path: state.path(frame, key))
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let at = try presentOffset(for: key) else { return nil }
        return try decodeInt(at: at, key)
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let at = try presentOffset(for: key) else { return nil }
        return try state.decodeValue(T.self, at: at, parent: frame, key: .name(key.stringValue))
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(
            try CBORKeyedDecodingContainer<NestedKey>(
                state: state, offset: try offset(for: key), parent: frame, key: .name(key.stringValue)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(
            state: state, offset: try offset(for: key), parent: frame, key: .name(key.stringValue))
    }

    func superDecoder() throws -> any Decoder { try superDecoder(forKey: Key(stringValue: "super")!) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        CBORNestedDecoder(
            state: state, offset: try offset(for: key), parent: frame, key: .name(key.stringValue))
    }
}

/// A decoder positioned on one value (for super decoders).
struct CBORNestedDecoder: Decoder {
    let state: CBORDecodingState
    let offset: Int
    let parent: Int
    let key: PathKey
    var codingPath: [any CodingKey] { state.path(parent, key) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(
            try CBORKeyedDecodingContainer<Key>(state: state, offset: offset, parent: parent, key: key))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try CBORUnkeyedDecodingContainer(state: state, offset: offset, parent: parent, key: key)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        CBORSingleValueDecodingContainer(state: state, offset: offset, parent: parent, key: key)
    }
}

struct CBORUnkeyedDecodingContainer: IntegerForwardingUnkeyedDecoder {
    let state: CBORDecodingState
    /// The array's frame: it gives the elements their coding paths.
    let frame: Int
    /// How many elements the array holds.
    let elementCount: Int
    var count: Int? { elementCount }
    var currentIndex = 0
    var position: Int
    var codingPath: [any CodingKey] { state.path(of: frame) }

    init(state: CBORDecodingState, offset: Int, parent: Int, key: PathKey) throws {
        self.state = state
        frame = try state.openFrame(at: offset, major: 4, as: [Any].self, parent: parent, key: key)
        let opened = state.frames[frame]
        elementCount = opened.count
        position = opened.firstEntry
    }

    var isAtEnd: Bool { currentIndex >= elementCount }

    private var elementPath: [any CodingKey] { state.path(frame, ArrayIndexKey(currentIndex)) }

    private mutating func next<T>(_ body: (CBORDecodingState, Int) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, .init(codingPath: elementPath, debugDescription: "the array has no more elements"))
        }
        let value = try body(state, position)
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
        let path = { [state, frame, currentIndex] in state.path(frame, ArrayIndexKey(currentIndex)) }
        return try next { try $0.decodeBool(at: $1, path: path()) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let path = { [state, frame, currentIndex] in state.path(frame, ArrayIndexKey(currentIndex)) }
        return try next { try $0.decodeString(at: $1, path: path()) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let path = { [state, frame, currentIndex] in state.path(frame, ArrayIndexKey(currentIndex)) }
        return try next { try $0.decodeFloatingPoint(at: $1, path: path()) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let path = { [state, frame, currentIndex] in state.path(frame, ArrayIndexKey(currentIndex)) }
        return try next { Float(try $0.decodeFloatingPoint(at: $1, path: path())) }
    }

    mutating func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        let path = { [state, frame, currentIndex] in state.path(frame, ArrayIndexKey(currentIndex)) }
        return try next { try $0.decodeInteger(I.self, at: $1, path: path()) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (frame, index) = (frame, currentIndex)
        return try next { try $0.decodeValue(T.self, at: $1, parent: frame, key: .index(index)) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (frame, index) = (frame, currentIndex)
        return try next {
            KeyedDecodingContainer(
                try CBORKeyedDecodingContainer<NestedKey>(
                    state: $0, offset: $1, parent: frame, key: .index(index)))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (frame, index) = (frame, currentIndex)
        return try next {
            try CBORUnkeyedDecodingContainer(state: $0, offset: $1, parent: frame, key: .index(index))
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        let (frame, index) = (frame, currentIndex)
        return try next { CBORNestedDecoder(state: $0, offset: $1, parent: frame, key: .index(index)) }
    }
}

struct CBORSingleValueDecodingContainer: IntegerForwardingSingleValueDecoder {
    let state: CBORDecodingState
    let offset: Int
    let parent: Int
    let key: PathKey
    var codingPath: [any CodingKey] { state.path(parent, key) }

    func decodeNil() -> Bool { state.isNil(at: offset) }
    func decode(_ type: Bool.Type) throws -> Bool { try state.decodeBool(at: offset, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try state.decodeString(at: offset, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double {
        try state.decodeFloatingPoint(at: offset, path: codingPath)
    }
    func decode(_ type: Float.Type) throws -> Float {
        Float(try state.decodeFloatingPoint(at: offset, path: codingPath))
    }
    func decodeInteger<I: FixedWidthInteger & Decodable>(_ type: I.Type) throws -> I {
        try state.decodeInteger(I.self, at: offset, path: codingPath)
    }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try state.decodeValue(T.self, at: offset, parent: parent, key: key)
    }
}

// MARK: - Fields of a record

/// Reads single top-level fields of one record (see ``CBORDecoder/withFields(of:_:)``).
package struct CBORFieldReader: ~Copyable {
    let state: CBORDecodingState
    /// The root map's frame, or nil when the record is not a map.
    let root: Int?

    /// The value of the top-level field `name` as a `T`, or nil when the record has no such field.
    /// - Throws: `DecodingError` when the field's value is not a `T` or is malformed.
    package func value<T: Decodable>(_ type: T.Type, named name: String) throws -> T? {
        var result: T?
        _ = try value(T.self, named: name) { result = $0 }
        return result
    }

    /// Hands `found` the value of the top-level field `name` as a `T`; false when the record has no
    /// such field (no optional of `T` on the way: unspecialized generic code looks up the metadata of
    /// each one it makes).
    /// - Throws: `DecodingError` when the field's value is not a `T` or is malformed.
    package func value<T: Decodable>(_ type: T.Type, named name: String, _ found: (T) throws -> Void) throws
        -> Bool
    {
        guard let root else { return false }
        var name = name
        let offset = name.withUTF8 { state.valueOffset(forUTF8: $0, in: root) }
        if offset == -2, let failure = state.failure { throw state.corrupted(failure, path: []) }
        guard offset >= 0 else { return false }
        try found(try state.decodeValue(T.self, at: offset, parent: root, key: .name(name)))
        return true
    }
}

extension CBORDecoder {
    /// Hands `body` a reader of the top-level fields of the record in `bytes`: each field asked for is
    /// found and decoded alone, without decoding the rest of the record (nor checking it: a record
    /// damaged elsewhere is not noticed; `check` finds it).
    package func withFields<R>(
        of bytes: UnsafeRawBufferPointer, _ body: (borrowing CBORFieldReader) throws -> R
    )
        rethrows -> R
    {
        let state = CBORDecodingState.borrow()
        defer { state.giveBack() }
        state.prepare(bytes)
        defer { state.finish() }
        let root =
            bytes.count > 0 && bytes[0] >> 5 == 5
            ? try? state.openFrame(at: 0, major: 5, as: [String: Any].self, parent: -1, key: .none) : nil
        return try body(CBORFieldReader(state: state, root: root))
    }
}
