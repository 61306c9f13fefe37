import Foundation

/// The hash of a record's top-level field names in order: FNV-1a 64 over each name's UTF-8 bytes,
/// each name followed by `FF` (a byte UTF-8 never contains).
@usableFromInline package enum FieldShape {
    @usableFromInline package static let basis: UInt64 = 0xcbf2_9ce4_8422_2325
    @inlinable static var prime: UInt64 { 0x0000_0100_0000_01b3 }

    @inline(__always)
    package static func adding(_ name: some Sequence<UInt8>, to hash: UInt64) -> UInt64 {
        var hash = hash
        for byte in name {
            hash ^= UInt64(byte)
            hash = hash &* prime
        }
        hash ^= 0xff
        return hash &* prime
    }

    package static func adding(_ name: String, to hash: UInt64) -> UInt64 { adding(name.utf8, to: hash) }

    /// Adds a name given as its UTF-8 bytes (the same hash as ``adding(_:to:)-(String,_)``).
    @usableFromInline package static func adding(bytes name: UnsafeRawBufferPointer, to hash: UInt64)
        -> UInt64
    {
        var hash = hash
        var position = 0
        while position < name.count {
            hash = (hash ^ UInt64(name[position])) &* prime
            position += 1
        }
        return (hash ^ 0xff) &* prime
    }

    /// Adds the kind of a field's value (a one-byte sequence, as records fold it).
    @usableFromInline package static func adding(kind: FieldKind, to hash: UInt64) -> UInt64 {
        (((hash ^ UInt64(kind.rawValue)) &* prime) ^ 0xff) &* prime
    }
}
