import Foundation

/// How index keys longer than LMDB's 511 bytes are stored: the first ``prefixLength`` bytes of the
/// encoding followed by an 8-byte FNV-1a hash of the whole encoding (``truncatedLength`` bytes in
/// all). Such a key still sorts by its prefix; queries always re-check candidates found through a
/// possibly truncated key against the decoded record, and an index walk that meets one sorts in
/// memory instead of trusting index order. Documented in `docs/FORMAT.md`.
package enum IndexKeyLimit {
    package static let maximum = 511
    package static let prefixLength = 500
    static let truncatedLength = prefixLength + 8

    /// The stored form of an encoded index key.
    package static func stored(_ encoded: [UInt8]) -> [UInt8] {
        guard encoded.count > maximum else { return encoded }
        var key = Array(encoded[0..<prefixLength])
        withUnsafeBytes(of: fnv1a64(encoded).bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// True when a stored key may be a truncated one (it has exactly the truncated length).
    package static func mayBeTruncated(_ key: some Collection<UInt8>) -> Bool { key.count == truncatedLength }

    /// FNV-1a 64 of `bytes`.
    package static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
