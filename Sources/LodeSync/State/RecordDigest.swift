/// A 128-bit digest of a record's bytes: what the server is known to hold for an object, compared
/// with the local record to tell whether the object has changed locally since (and must be uploaded).
/// Two independent 64-bit lanes of a multiply–rotate hash; not cryptographic — the records are the
/// app's own, not an adversary's.
struct RecordDigest: Hashable, Sendable {
    var high: UInt64
    var low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        var a: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(bytes.count)
        var b: UInt64 = 0xc2b2_ae3d_27d4_eb4f &+ UInt64(bytes.count)
        var index = 0
        func mix(_ word: UInt64) {
            a = (a ^ word) &* 0xff51_afd7_ed55_8ccd
            a = (a << 31) | (a >> 33)
            b = (b &+ word) &* 0xc4ce_b9fe_1a85_ec53
            b = (b << 29) | (b >> 35)
            b ^= a
        }
        while index + 8 <= bytes.count {
            mix(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        mix(tail ^ 0x8000_0000_0000_0000)
        func finish(_ x: UInt64) -> UInt64 {
            var x = x
            x ^= x >> 33
            x = x &* 0xff51_afd7_ed55_8ccd
            x ^= x >> 33
            x = x &* 0xc4ce_b9fe_1a85_ec53
            return x ^ (x >> 33)
        }
        high = finish(a)
        low = finish(b ^ a)
    }

    init(_ bytes: [UInt8]) { self = bytes.withUnsafeBytes { RecordDigest($0) } }
}
