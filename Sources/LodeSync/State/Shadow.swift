/// What the client knows of an object on the server: the server version it last saw (or wrote), the
/// digest of the record that version is locally (nil: the server has no object — a tombstone or a row
/// outside the filter), and the object's key as the server names it.
///
/// An object is **dirty** — changed locally since, and to be uploaded — when its record's digest
/// differs from the shadow's (a missing record counts as nil; a missing shadow as version 0, nil).
/// Stored in `@sync.<Type>` under the object's key: 8 bytes of version (big-endian), a flag byte,
/// 16 bytes of digest when the flag is 1, then the key text.
struct Shadow: Equatable {
    var version: Int64
    var digest: RecordDigest?
    var keyText: String

    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(25 + keyText.utf8.count)
        withUnsafeBytes(of: UInt64(bitPattern: version).bigEndian) { bytes += $0 }
        if let digest {
            bytes.append(1)
            withUnsafeBytes(of: digest.high.bigEndian) { bytes += $0 }
            withUnsafeBytes(of: digest.low.bigEndian) { bytes += $0 }
        } else {
            bytes.append(0)
        }
        bytes += keyText.utf8
        return bytes
    }

    init(version: Int64, digest: RecordDigest?, keyText: String) {
        self.version = version
        self.digest = digest
        self.keyText = keyText
    }

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 9 else { return nil }
        func word(_ offset: Int) -> UInt64 {
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        version = Int64(bitPattern: word(0))
        var offset = 9
        if bytes[8] == 1 {
            guard bytes.count >= 25 else { return nil }
            digest = RecordDigest(high: word(9), low: word(17))
            offset = 25
        } else {
            digest = nil
        }
        keyText = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset...]), as: UTF8.self)
    }
}
