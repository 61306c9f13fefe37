import Foundation

/// Primary keys kept in order by a layer above this one — live results' rows — that a ``KeyList``
/// reads in place instead of copying them.
package protocol OrderedPrimaryKeys: Sendable {
    /// The primary key of the entry at `position`.
    func primaryKey(at position: Int) -> ArraySlice<UInt8>
}

/// A list of byte strings (primary keys): either in one buffer (one allocation for a million keys
/// instead of a million), or a range of ordered entries kept by a layer above (live results' rows,
/// shared copy-on-write so that handing out the current results after a commit copies nothing).
package struct KeyList: Sendable {
    /// The keys' bytes, one after another, in `storage[0..<used]`; the bytes after are room made for
    /// more keys (zeros), so that appending one copies into the array's own elements without the
    /// generic append's checks.
    private var storage: [UInt8] = []
    private var used = 0
    private var ends: [Int] = []
    private var rows: (keys: any OrderedPrimaryKeys, lower: Int, count: Int)?
    /// Whether `rows` is set: read per key instead of `rows` (testing the optional copies its
    /// existential).
    private var readsRows = false

    package init() {}

    /// The keys whose bytes are `bytes`, one after another, the one at *i* ending at `ends[i]`.
    package init(bytes: [UInt8], ends: [Int]) {
        precondition(ends.last ?? 0 == bytes.count, "the keys' ends are not their bytes'")
        storage = bytes
        used = bytes.count
        self.ends = ends
    }

    /// The primary keys of `keys`' entries in `range`.
    package static func rows(_ keys: any OrderedPrimaryKeys, _ range: Range<Int>) -> KeyList {
        var list = KeyList()
        list.rows = (keys, range.lowerBound, range.count)
        list.readsRows = true
        return list
    }

    package var count: Int { readsRows ? rows!.count : ends.count }
    var isEmpty: Bool { count == 0 }

    package subscript(index: Int) -> ArraySlice<UInt8> {
        if readsRows { return rows!.keys.primaryKey(at: rows!.lower + index) }
        return storage[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    /// Whether the key at `a` sorts before the key at `b`: bytes compared unsigned, a key before the
    /// longer keys it begins (LMDB's order of keys).
    package func precedes(_ a: Int, _ b: Int) -> Bool {
        guard !readsRows else { return self[a].lexicographicallyPrecedes(self[b]) }
        let aStart = a == 0 ? 0 : ends[a - 1]
        let bStart = b == 0 ? 0 : ends[b - 1]
        let aCount = ends[a] - aStart
        let bCount = ends[b] - bStart
        let common = Swift.min(aCount, bCount)
        guard common > 0 else { return aCount < bCount }
        let order = storage.withUnsafeBytes { bytes in
            // Eight bytes at a time as big-endian words (an integer key is decided by its first
            // word), the rest byte by byte.
            let (a, b) = (bytes.baseAddress! + aStart, bytes.baseAddress! + bStart)
            var offset = 0
            while offset &+ 8 <= common {
                let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                if x != y { return x < y ? Int32(-1) : 1 }
                offset &+= 8
            }
            while offset < common {
                let (x, y) = (
                    a.load(fromByteOffset: offset, as: UInt8.self),
                    b.load(fromByteOffset: offset, as: UInt8.self)
                )
                if x != y { return x < y ? Int32(-1) : 1 }
                offset &+= 1
            }
            return 0
        }
        return order != 0 ? order < 0 : aCount < bCount
    }

    /// The positions of the keys in key order (ties, equal keys, in list order): each key's first
    /// two words (sixteen bytes: an integer key's nine, a UUID's) ordered first, as integers, and
    /// its bytes compared only where the words are equal.
    func keyOrder() -> [Int] {
        var entries = [WordEntry]()
        entries.reserveCapacity(count)
        for index in 0..<count {
            let words = leadingWords(index)
            entries.append(WordEntry(high: words.0, low: words.1, position: index))
        }
        Self.sortByWords(&entries)
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count && entries[end].high == entries[start].high
                && entries[end].low == entries[start].low
            {
                end += 1
            }
            if end - start > 1 {
                entries[start..<end].sort { a, b in
                    if precedes(a.position, b.position) { return true }
                    return !precedes(b.position, a.position) && a.position < b.position
                }
            }
            start = end
        }
        return entries.map(\.position)
    }

    /// A key's first sixteen bytes as two big-endian words, and its position in the list.
    struct WordEntry {
        var high: UInt64
        var low: UInt64
        var position: Int
    }

    /// Sorts `entries` by their words, ties in position order (the order they come in). Where few
    /// of the sixteen bytes differ between keys (integer keys: the low two or three), a
    /// least-significant-digit radix sort by those bytes alone: a pass per byte that differs, no
    /// comparisons (a comparison sort was a sixth of an encrypted scan's instructions). Otherwise,
    /// and for short lists, a comparison sort.
    static func sortByWords(_ entries: inout [WordEntry]) {
        guard let first = entries.first else { return }
        // The bytes that differ somewhere: set in `changing` where some key's bits differ from the first's.
        var changing = (high: UInt64(0), low: UInt64(0))
        for entry in entries {
            changing.high |= entry.high ^ first.high
            changing.low |= entry.low ^ first.low
        }
        // Digits 0–7 are the low word's bytes from its least significant, 8–15 the high word's.
        let digits = (0..<16).filter { digit in
            let word = digit < 8 ? changing.low : changing.high
            return (word >> UInt64(8 * (digit % 8))) & 0xff != 0
        }
        guard entries.count >= 64, digits.count <= 8 else {
            entries.sort { a, b in
                if a.high != b.high { return a.high < b.high }
                if a.low != b.low { return a.low < b.low }
                return a.position < b.position
            }
            return
        }
        var other = entries
        var counts = [Int](repeating: 0, count: 256)
        entries.withUnsafeMutableBufferPointer { source in
            other.withUnsafeMutableBufferPointer { target in
                var (from, to) = (source, target)
                for digit in digits {
                    let shift = UInt64(8 * (digit % 8))
                    let high = digit >= 8
                    func bucket(_ entry: WordEntry) -> Int {
                        Int(((high ? entry.high : entry.low) >> shift) & 0xff)
                    }
                    for index in counts.indices { counts[index] = 0 }
                    for entry in from { counts[bucket(entry)] += 1 }
                    var offset = 0
                    for index in counts.indices {
                        let count = counts[index]
                        counts[index] = offset
                        offset += count
                    }
                    // Stable: entries of one bucket keep the order they came in.
                    for entry in from {
                        let slot = bucket(entry)
                        to[counts[slot]] = entry
                        counts[slot] += 1
                    }
                    swap(&from, &to)
                }
                // After an odd number of passes the sorted entries are in `other`'s memory.
                if from.baseAddress != source.baseAddress {
                    source.baseAddress!.update(from: from.baseAddress!, count: from.count)
                }
            }
        }
    }

    /// The first sixteen bytes of the key at `index` as two big-endian words, zeros after a shorter
    /// key: keys whose words differ are in the words' order (equal words say nothing: ask
    /// ``precedes(_:_:)``).
    private func leadingWords(_ index: Int) -> (UInt64, UInt64) {
        if readsRows {
            var padded: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &padded) { out in
                for (position, byte) in self[index].prefix(16).enumerated() { out[position] = byte }
            }
            return (UInt64(bigEndian: padded.0), UInt64(bigEndian: padded.1))
        }
        let start = index == 0 ? 0 : ends[index - 1]
        let count = Swift.min(ends[index] - start, 16)
        guard count > 0 else { return (0, 0) }
        return storage.withUnsafeBytes { bytes in
            let base = bytes.baseAddress! + start
            if count == 16 {
                return (
                    UInt64(bigEndian: base.loadUnaligned(as: UInt64.self)),
                    UInt64(bigEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                )
            }
            // A shorter key (an integer's nine bytes) copied into zeros.
            var padded: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &padded) { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
            return (UInt64(bigEndian: padded.0), UInt64(bigEndian: padded.1))
        }
    }

    /// Makes room for `count` more keys (of an integer key's nine bytes each; longer keys grow the
    /// buffer as they come).
    package mutating func reserve(_ count: Int) {
        precondition(!readsRows, "a list of live rows is read-only")
        ends.reserveCapacity(ends.count + count)
        makeRoom(bytes: count * 9)
    }

    /// Makes sure `bytes` more bytes fit after the keys' bytes.
    private mutating func makeRoom(bytes: Int) {
        let room = storage.count - used
        guard room < bytes else { return }
        // At least doubling, as an array grows.
        storage.append(contentsOf: repeatElement(0, count: Swift.max(bytes - room, storage.count)))
    }

    package mutating func append(_ key: some Collection<UInt8>) {
        if key.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) == nil {
            Array(key).withUnsafeBytes { append($0) }
        }
    }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        precondition(!readsRows, "a list of live rows is read-only")
        let count = key.count
        if count > 0 {
            if storage.count - used < count { makeRoom(bytes: count) }
            let start = used
            storage.withUnsafeMutableBufferPointer { bytes in
                UnsafeMutableRawPointer(bytes.baseAddress! + start).copyMemory(
                    from: key.baseAddress!, byteCount: count)
            }
            used = start + count
        }
        ends.append(used)
    }

    /// The keys in the order `permutation` gives.
    func reordered(_ permutation: [Int]) -> KeyList {
        var result = KeyList()
        result.makeRoom(bytes: readsRows ? permutation.count * 17 : used)
        result.ends.reserveCapacity(permutation.count)
        if readsRows {
            for index in permutation { result.append(self[index]) }
            return result
        }
        // Bytes copied straight from this list's buffer (a slice per key retains the buffer).
        storage.withUnsafeBytes { bytes in
            for index in permutation {
                let start = index == 0 ? 0 : ends[index - 1]
                result.append(UnsafeRawBufferPointer(rebasing: bytes[start..<ends[index]]))
            }
        }
        return result
    }

    /// The keys from `range`.
    func slice(_ range: Range<Int>) -> KeyList {
        if let rows {
            return .rows(rows.keys, (rows.lower + range.lowerBound)..<(rows.lower + range.upperBound))
        }
        return reordered(Array(range))
    }
}
