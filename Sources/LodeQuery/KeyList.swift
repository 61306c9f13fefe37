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
    /// two words (sixteen bytes: an integer key's nine, a UUID's) compared first, as integers, and
    /// its bytes only when they are equal.
    func keyOrder() -> [Int] {
        // Words and positions sort as integers (a closure over the list per comparison cost a tenth
        // of an encrypted scan); the keys of a run of equal words are compared after.
        var entries = (0..<count).map { (words: leadingWords($0), position: $0) }
        entries.sort { a, b in
            if a.words.0 != b.words.0 { return a.words.0 < b.words.0 }
            if a.words.1 != b.words.1 { return a.words.1 < b.words.1 }
            return a.position < b.position
        }
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count && entries[end].words == entries[start].words { end += 1 }
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

    /// The first sixteen bytes of the key at `index` as two big-endian words, zeros after a shorter
    /// key: keys whose words differ are in the words' order (equal words say nothing: ask
    /// ``precedes(_:_:)``).
    private func leadingWords(_ index: Int) -> (UInt64, UInt64) {
        func word(_ bytes: some Collection<UInt8>) -> UInt64 {
            var word: UInt64 = 0
            for (position, byte) in bytes.enumerated() { word |= UInt64(byte) << UInt64(56 - 8 * position) }
            return word
        }
        if readsRows {
            let key = self[index]
            return (word(key.prefix(8)), word(key.dropFirst(8).prefix(8)))
        }
        let start = index == 0 ? 0 : ends[index - 1]
        let count = ends[index] - start
        return storage.withUnsafeBytes { bytes in
            let base = bytes.baseAddress! + start
            if count >= 16 {
                return (
                    UInt64(bigEndian: base.loadUnaligned(as: UInt64.self)),
                    UInt64(bigEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                )
            }
            let key = UnsafeRawBufferPointer(start: base, count: count)
            return (word(key.prefix(8)), word(key.dropFirst(8)))
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
        for index in permutation { result.append(self[index]) }
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
