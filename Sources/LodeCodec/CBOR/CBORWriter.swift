import Foundation

/// Low-level CBOR (RFC 8949) output: heads, scalars and strings appended to a byte buffer.
@usableFromInline package struct CBORWriter {
    @usableFromInline package var bytes: [UInt8] = []

    @usableFromInline package init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    /// A date: tag 1 (seconds since 1970) when that float gives back exactly the same `Date`;
    /// otherwise tag 40001 over Foundation's own float (seconds since 2001), so no date ever changes
    /// on a round trip.
    @usableFromInline package mutating func date(_ date: Date) {
        let epoch = date.timeIntervalSince1970
        if Date(timeIntervalSince1970: epoch) == date {
            tag(1)
            double(epoch)
        } else {
            tag(CBORTags.referenceDate)
            double(date.timeIntervalSinceReferenceDate)
        }
    }

    /// Appends a head: major type `major` (0...7) with argument `value`, in the shortest form.
    @inline(__always)
    @usableFromInline package mutating func head(_ major: UInt8, _ value: UInt64) {
        let type = major << 5
        if value < 24 {
            bytes.append(type | UInt8(value))
        } else if value <= UInt64(UInt8.max) {
            bytes.append(type | 24)
            bytes.append(UInt8(value))
        } else if value <= UInt64(UInt16.max) {
            bytes.append(type | 25)
            appendBigEndian(UInt16(value))
        } else if value <= UInt64(UInt32.max) {
            bytes.append(type | 26)
            appendBigEndian(UInt32(value))
        } else {
            bytes.append(type | 27)
            appendBigEndian(value)
        }
    }

    @inline(__always)
    @usableFromInline mutating func appendBigEndian<I: FixedWidthInteger>(_ value: I) {
        // Byte by byte: for a few bytes, cheaper than a generic copy.
        var shift = I.bitWidth - 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    /// Appends raw bytes: short runs (field names, most text) byte by byte, long ones in one copy.
    @inline(__always)
    @usableFromInline mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        if source.count <= 16 {
            for byte in source { bytes.append(byte) }
        } else {
            bytes.append(contentsOf: source)
        }
    }

    package mutating func integer(_ value: Int64) {
        if value >= 0 {
            head(0, UInt64(value))
        } else {
            head(1, UInt64(bitPattern: -1 - value))
        }
    }

    package mutating func unsigned(_ value: UInt64) { head(0, value) }

    package mutating func double(_ value: Double) {
        bytes.append(0xfb)
        appendBigEndian(value.bitPattern)
    }

    mutating func float(_ value: Float) {
        bytes.append(0xfa)
        appendBigEndian(value.bitPattern)
    }

    package mutating func bool(_ value: Bool) { bytes.append(value ? 0xf5 : 0xf4) }
    @usableFromInline package mutating func null() { bytes.append(0xf6) }

    /// Appends a text string; returns where its UTF-8 bytes start.
    @discardableResult
    @usableFromInline package mutating func text(_ value: String) -> Int {
        var value = value
        return value.withUTF8 { utf8 in
            head(3, UInt64(utf8.count))
            let start = bytes.count
            append(utf8)
            return start
        }
    }

    /// Appends `item`, one encoded CBOR item (or several, inside a head written before), as it is.
    package mutating func raw(_ item: UnsafeRawBufferPointer) {
        appendBytes(item)
    }

    @usableFromInline package mutating func byteString(_ value: UnsafeRawBufferPointer) {
        head(2, UInt64(value.count))
        appendBytes(value)
    }

    /// Appends `source` in one copy (a raw buffer appended as a sequence goes byte by byte through
    /// generic code: ten times the instructions).
    @inline(__always)
    @usableFromInline mutating func appendBytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        bytes.append(
            contentsOf: UnsafeBufferPointer(
                start: base.assumingMemoryBound(to: UInt8.self), count: source.count))
    }

    @usableFromInline package mutating func tag(_ value: UInt64) { head(6, value) }

    /// Rewrites the head at `position` (written as a one-byte head with a placeholder count) to
    /// carry `count`, shifting what follows when the count needs a longer head.
    @usableFromInline package mutating func patchCount(at position: Int, major: UInt8, count: Int) {
        if count < 24 {
            bytes[position] = major << 5 | UInt8(count)
            return
        }
        var head = CBORWriter(capacity: 9)
        head.head(major, UInt64(count))
        bytes.replaceSubrange(position..<position + 1, with: head.bytes)
    }
}

extension Array where Element == UInt8 {
    /// A copy of `bytes`, made in one copy (`Array(bytes)` goes byte by byte through generic code).
    @inlinable package init(copying bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            self = []
            return
        }
        self.init(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }
}
