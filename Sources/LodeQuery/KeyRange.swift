import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// A contiguous stretch of encoded keys: every key starts with `prefix` and lies within the bounds
/// (bounds include the prefix).
package struct KeyRange {
    var prefix: [UInt8] = []
    var lower: [UInt8]?
    var lowerInclusive = true
    var upper: [UInt8]?
    var upperInclusive = true

    /// Where a forward scan starts.
    package var start: [UInt8] { lower ?? prefix }

    /// The range with every byte string cut to the 500 bytes that stored index keys keep (see
    /// ``IndexKeyLimit``), widened so it still holds every match; `lossy` says it was widened.
    /// With bounds that short, a truncated key compares to them exactly as its full encoding would.
    package func normalized() -> (range: KeyRange, lossy: Bool) {
        let limit = IndexKeyLimit.prefixLength
        var range = self
        var lossy = false
        if range.prefix.count > limit {
            range.prefix = Array(range.prefix.prefix(limit))
            range.lower = nil
            range.upper = nil
            lossy = true
        }
        if let lower = range.lower, lower.count > limit {
            range.lower = Array(lower.prefix(limit))
            range.lowerInclusive = true
            lossy = true
        }
        if let upper = range.upper, upper.count > limit {
            range.upper = Array(upper.prefix(limit))
            range.upperInclusive = true
            lossy = true
        }
        return (range, lossy)
    }

    package enum Position { case before, inside, after }

    /// True when `key` starts with the encoded values `bytes` and the value `bytes` ends with is not
    /// continued in `key`. Text and data end with `00` and write a zero byte as `00 FF`, so `"a"`
    /// (`40 61 00`) is a byte prefix of `"a\0"` (`40 61 00 FF 00`) although the values differ; no other
    /// encoding, and no type tag, starts with `FF`, so that byte alone marks a continuation.
    static func key(_ key: some Collection<UInt8>, startsWithValues bytes: [UInt8]) -> Bool {
        guard key.starts(with: bytes) else { return false }
        guard bytes.last == 0, key.count > bytes.count else { return true }
        return key[key.index(key.startIndex, offsetBy: bytes.count)] != 0xFF
    }

    /// Where `key` lies relative to the range.
    package func position(of key: some Collection<UInt8>) -> Position {
        if !Self.key(key, startsWithValues: prefix) {
            return key.lexicographicallyPrecedes(prefix) ? .before : .after
        }
        if let lower {
            if key.lexicographicallyPrecedes(lower) { return .before }
            if !lowerInclusive && Self.key(key, startsWithValues: lower) { return .before }
        }
        if let upper {
            if Self.key(key, startsWithValues: upper) { return upperInclusive ? .inside : .after }
            if upper.lexicographicallyPrecedes(key) { return .after }
        }
        return .inside
    }
}
