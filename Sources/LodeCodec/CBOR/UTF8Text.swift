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
