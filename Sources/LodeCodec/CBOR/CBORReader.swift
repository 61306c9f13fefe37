import Foundation

/// Low-level CBOR (RFC 8949) input over borrowed bytes: reads heads and scalars, and skips whole
/// data items. Every read is bounds-checked; malformed input throws, it never traps.
@usableFromInline package struct CBORReader {
    @usableFromInline package let bytes: UnsafeRawBufferPointer
    @usableFromInline package var offset: Int

    @usableFromInline package init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    @usableFromInline package enum Failure: Error, CustomStringConvertible {
        case truncated(at: Int)
        case malformed(String, at: Int)
        /// A string, array or map of indefinite length (`what` names it): valid CBOR, but not a form
        /// Lode writes or reads (see docs/FORMAT.md, "Encoding").
        case indefiniteLength(String, at: Int)

        @usableFromInline package var description: String {
            switch self {
            case .truncated(let offset): return "the CBOR data ends early (at byte \(offset))"
            case .malformed(let what, let offset): return "malformed CBOR at byte \(offset): \(what)"
            case .indefiniteLength(let what, let offset):
                return "an indefinite-length \(what) at byte \(offset), a form Lode neither writes nor reads"
            }
        }

        /// The indefinite-length item's name for a head of major type `major` (2 to 5) at `offset`.
        @usableFromInline package static func indefinite(major: UInt8, at offset: Int) -> Failure {
            let names = ["byte string", "text string", "array", "map"]
            return .indefiniteLength(names[Int(major) - 2], at: offset)
        }
    }

    var isAtEnd: Bool { offset >= bytes.count }

    @inline(__always)
    func peekByte() throws(Failure) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(at: offset) }
        return bytes[offset]
    }

    @inline(__always)
    mutating func readByte() throws(Failure) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(at: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always)
    mutating func readBigEndian<I: FixedWidthInteger>(_: I.Type) throws(Failure) -> I {
        let size = MemoryLayout<I>.size
        guard offset + size <= bytes.count else { throw .truncated(at: offset) }
        var value = I.zero
        for i in 0..<size { value = value << 8 | I(bytes[offset + i]) }
        offset += size
        return value
    }

    /// Major type and argument of the next head. For major type 7 the argument is the raw
    /// additional-information value (or the float bits). `indefinite` marks an indefinite length.
    @usableFromInline package mutating func readHead() throws(Failure) -> (
        major: UInt8, argument: UInt64, info: UInt8
    ) {
        let initial = try readByte()
        let major = initial >> 5
        let info = initial & 0x1f
        switch info {
        case 0..<24: return (major, UInt64(info), info)
        case 24: return (major, UInt64(try readByte()), info)
        case 25: return (major, UInt64(try readBigEndian(UInt16.self)), info)
        case 26: return (major, UInt64(try readBigEndian(UInt32.self)), info)
        case 27: return (major, try readBigEndian(UInt64.self), info)
        case 31 where major >= 2 && major <= 5 || major == 7: return (major, 0, info)
        default: throw .malformed("reserved additional information \(info)", at: offset - 1)
        }
    }

    /// Skips one complete data item (with nested items and tags). An item of indefinite length, at
    /// any depth, throws ``Failure/indefiniteLength(_:at:)``: Lode reads definite lengths only.
    @usableFromInline package mutating func skipItem(depth: Int = 0) throws(Failure) {
        guard depth < 512 else { throw .malformed("nesting deeper than 512", at: offset) }
        let start = offset
        let (major, argument, info) = try readHead()
        switch major {
        case 0, 1:
            return
        case 2, 3:
            guard info != 31 else { throw .indefinite(major: major, at: start) }
            guard argument <= UInt64(bytes.count - offset) else { throw .truncated(at: start) }
            offset += Int(argument)
        case 4, 5:
            guard info != 31 else { throw .indefinite(major: major, at: start) }
            let perEntry = major == 5 ? 2 : 1
            guard argument <= UInt64(bytes.count) else { throw .truncated(at: start) }
            for _ in 0..<Int(argument) * perEntry { try skipItem(depth: depth + 1) }
        case 6:
            try skipItem(depth: depth + 1)
        default:
            if info == 31 { throw .malformed("unexpected break", at: start) }
        }
    }

    /// Reads a text or byte string's bytes, or returns nil (the offset unchanged) for an item of another
    /// major type. A string of indefinite length throws ``Failure/indefiniteLength(_:at:)``.
    @usableFromInline package mutating func readStringBytes(major expected: UInt8) throws(Failure)
        -> UnsafeRawBufferPointer?
    {
        let start = offset
        let (major, argument, info) = try readHead()
        guard major == expected else {
            offset = start
            return nil
        }
        guard info != 31 else { throw .indefinite(major: major, at: start) }
        guard argument <= UInt64(bytes.count - offset) else { throw .truncated(at: start) }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(argument)])
        offset += Int(argument)
        return slice
    }
}
