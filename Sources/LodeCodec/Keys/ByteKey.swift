/// Key bytes as a dictionary key that hashes as one run of bytes (an array of bytes hashes them one
/// by one, several times slower for the keys Lode looks up by the thousand).
package struct ByteKey: Hashable {
    /// The bytes.
    package let bytes: [UInt8]

    /// `bytes` as a key.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Hashes the bytes as one run.
    package func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}
