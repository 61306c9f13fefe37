import Foundation

/// Text strings read from CBOR bytes: both decoders make their `String`s here.
enum UTF8Text {
    /// The string whose UTF-8 encoding is `utf8`, or nil when the bytes are not valid UTF-8.
    ///
    /// The string is made by copying the bytes into its own storage (a short string's inline form
    /// directly), which repairs invalid sequences; text with a byte of 0x80 or more is then compared
    /// with the bytes, so a repaired string is refused. (`String(validating:)` costs generic metadata
    /// lookups per call, several times the copy.)
    static func string(_ utf8: UnsafeRawBufferPointer) -> String? {
        if utf8.count <= 15, let string = SmallASCII.string(utf8) { return string }
        let bytes = utf8.assumingMemoryBound(to: UInt8.self)
        let string = String(unsafeUninitializedCapacity: bytes.count) { storage in
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return 0 }
            storage.baseAddress!.initialize(from: source, count: bytes.count)
            return bytes.count
        }
        if isASCII(utf8) { return string }
        var copy = string
        return copy.withUTF8 { $0.elementsEqual(bytes) } ? string : nil
    }

    /// Whether no byte of `bytes` is 0x80 or more: eight bytes at a time.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        let high: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset &+ 8 <= count {
            if base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & high != 0 { return false }
            offset &+= 8
        }
        while offset < count {
            if base.load(fromByteOffset: offset, as: UInt8.self) >= 0x80 { return false }
            offset &+= 1
        }
        return true
    }
}

/// Short ASCII text (most field values: names, codes, titles) made as the standard library's small
/// string directly: its two words hold the bytes and, in the last byte, the form and the count. The
/// standard library's own initializer validates the bytes again and calls through a closure, several
/// times the cost of the bytes themselves.
///
/// The layout is not taken on trust: it is read once from strings the standard library made, and
/// checked on strings of every short length; where it differs (another platform or runtime), every
/// string is made by the standard library.
@usableFromInline
enum SmallASCII {
    /// The last byte's form bits of a small ASCII string, or nil when the layout is not the one
    /// expected.
    static let form: UInt64? = {
        guard MemoryLayout<String>.size == 16 else { return nil }
        let probe = "abc"
        let words = unsafeBitCast(probe, to: (UInt64, UInt64).self)
        guard words.0 == 0x63_6261, words.1 >> 56 & 0x0f == 3 else { return nil }
        let form = words.1 >> 56 & 0xf0
        guard form != 0 else { return nil }
        // Every length, made both ways, the same string.
        let sample = Array("0123456789abcdef".utf8)
        for length in 0...15 {
            let expected = String(decoding: sample[0..<length], as: UTF8.self)
            guard
                let made = sample.withUnsafeBytes({
                    string(UnsafeRawBufferPointer(rebasing: $0[0..<length]), form: form)
                })
            else { return nil }
            let (madeWords, expectedWords) = (
                unsafeBitCast(made, to: (UInt64, UInt64).self),
                unsafeBitCast(expected, to: (UInt64, UInt64).self)
            )
            guard madeWords == expectedWords, made == expected, Array(made.utf8) == Array(sample[0..<length])
            else { return nil }
        }
        return form
    }()

    /// The string of the ASCII bytes `utf8` (at most 15), or nil when a byte is not ASCII or the
    /// layout is not known.
    @inline(__always)
    static func string(_ utf8: UnsafeRawBufferPointer) -> String? {
        guard let form else { return nil }
        return string(utf8, form: form)
    }

    /// The string of the ASCII bytes `utf8` (at most 15) made with the form bits `form` (read by
    /// ``form``), or nil when a byte is not ASCII.
    @inlinable @inline(__always)
    static func string(_ utf8: UnsafeRawBufferPointer, form: UInt64) -> String? {
        let words = load(utf8)
        guard (words.0 | words.1) & 0x8080_8080_8080_8080 == 0 else { return nil }
        return unsafeBitCast((words.0, words.1 | (form | UInt64(utf8.count)) << 56), to: String.self)
    }

    /// `utf8`'s bytes in two little-endian words, zeros after them.
    @inlinable @inline(__always)
    static func load(_ utf8: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var words: (UInt64, UInt64) = (0, 0)
        guard let base = utf8.baseAddress else { return words }
        let count = utf8.count
        if count >= 8 {
            words.0 = UInt64(littleEndian: base.loadUnaligned(as: UInt64.self))
            // The last eight bytes, shifted past those the first word holds.
            let last = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
            words.1 = count == 8 ? 0 : last >> UInt64((16 &- count) &* 8)
        } else if count >= 4 {
            // Two four-byte words, overlapping: the bytes they share land in the same places.
            let first = UInt64(UInt32(littleEndian: base.loadUnaligned(as: UInt32.self)))
            let last = UInt64(
                UInt32(littleEndian: base.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)))
            words.0 = first | last << UInt64((count &- 4) &* 8)
        } else {
            var shift: UInt64 = 0
            for offset in 0..<count {
                words.0 |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) << shift
                shift &+= 8
            }
        }
        return words
    }
}
