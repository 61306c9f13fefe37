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
        var isASCII = true
        for byte in bytes where byte >= 0x80 {
            isASCII = false
            break
        }
        if isASCII { return string }
        var copy = string
        return copy.withUTF8 { $0.elementsEqual(bytes) } ? string : nil
    }
}
