import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// A contiguous stretch of encoded keys: every key starts with `prefix` and lies within the bounds
/// (bounds include the prefix). A bound is compared as encoded values, not as bytes: a key that
/// starts with an inclusive upper bound's values is inside, and one that continues the text the bound
/// ends with is not (see ``position(of:)``).
///
/// The library's planner and the tools that plan over untyped records (Lode Studio's pages,
/// `lode-dump dump --where`) share it, with the walks in both directions it gives.
package struct KeyRange: Sendable {
    /// What every key inside starts with.
    package var prefix: [UInt8] = []
    /// The lower bound (nil: none beyond the prefix) and whether keys starting with it are inside.
    package var lower: [UInt8]?
    package var lowerInclusive = true
    /// The upper bound (nil: none beyond the prefix) and whether keys starting with it are inside.
    package var upper: [UInt8]?
    package var upperInclusive = true

    /// A range of the keys that start with `prefix`, within the bounds.
    package init(
        prefix: [UInt8] = [], lower: [UInt8]? = nil, lowerInclusive: Bool = true, upper: [UInt8]? = nil,
        upperInclusive: Bool = true
    ) {
        self.prefix = prefix
        self.lower = lower
        self.lowerInclusive = lowerInclusive
        self.upper = upper
        self.upperInclusive = upperInclusive
    }

    /// Whether the range holds every key.
    package var isWhole: Bool { prefix.isEmpty && lower == nil && upper == nil }

    /// Where a forward scan starts.
    package var start: [UInt8] { lower ?? prefix }

    /// Where a forward scan starts, nil for the first key (LMDB seeks no empty key).
    package var forwardStart: [UInt8]? { start.isEmpty ? nil : start }

    /// Where a backward scan starts (the last key at most this one, the keys after the range skipped):
    /// the smallest byte string after every key that starts with the upper bound or the prefix; nil
    /// for the last key.
    package var reverseStart: [UInt8]? {
        var bytes = upper ?? prefix
        while let last = bytes.last, last == 0xFF { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        bytes[bytes.count - 1] += 1
        return bytes
    }

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

    /// ``position(of:)`` of a key read in place, as a scan reads it: compared with `memcmp`, not byte by
    /// byte through a collection (a scan asks once per entry).
    package func position(of key: UnsafeRawBufferPointer) -> Position {
        if !Self.key(key, startsWithValues: prefix) {
            return Self.compare(key, prefix) < 0 ? .before : .after
        }
        if let lower {
            if Self.compare(key, lower) < 0 { return .before }
            if !lowerInclusive && Self.key(key, startsWithValues: lower) { return .before }
        }
        if let upper {
            if Self.key(key, startsWithValues: upper) { return upperInclusive ? .inside : .after }
            if Self.compare(key, upper) > 0 { return .after }
        }
        return .inside
    }

    /// How `key` and `bytes` compare as byte strings (unsigned bytes, a string before the longer ones
    /// it begins): negative, zero or positive.
    static func compare(_ key: UnsafeRawBufferPointer, _ bytes: [UInt8]) -> Int {
        let common = Swift.min(key.count, bytes.count)
        if common > 0 {
            let order = bytes.withUnsafeBytes { memcmp(key.baseAddress!, $0.baseAddress!, common) }
            if order != 0 { return Int(order) }
        }
        return key.count - bytes.count
    }

    /// ``key(_:startsWithValues:)`` of a key read in place.
    static func key(_ key: UnsafeRawBufferPointer, startsWithValues bytes: [UInt8]) -> Bool {
        guard key.count >= bytes.count else { return false }
        if !bytes.isEmpty {
            guard bytes.withUnsafeBytes({ memcmp(key.baseAddress!, $0.baseAddress!, bytes.count) }) == 0
            else {
                return false
            }
        }
        guard bytes.last == 0, key.count > bytes.count else { return true }
        return key[bytes.count] != 0xFF
    }

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
