#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A sorted set of byte strings with positions: insert, remove and find the rank of a key in
/// O(log N) (plus a small chunk shift), and the key at a rank in O(log N). It is a two-level counted
/// B-tree: sorted chunks of at most `chunkCapacity` keys, and a Fenwick tree of chunk sizes for ranks.
///
/// A chunk keeps its keys back to back in one byte buffer with their end offsets, not as an array
/// per key: a key costs its bytes and four more, where a heap array would cost a 32-byte header and
/// an allocation rounded up (a live result of a million 22-byte entries: about 27 MB instead of 72).
///
/// Live results keep their rows in one, keyed by the encoded sort values followed by the primary key.
struct RankedKeys {
    static let chunkCapacity = 512

    /// Sorted keys stored back to back.
    struct Chunk {
        /// The keys' bytes, one after another.
        private(set) var bytes: [UInt8] = []
        /// Where each key ends in `bytes`.
        private(set) var ends: [UInt32] = []

        init<C: Collection>(_ keys: C) where C.Element == [UInt8] {
            // Exactly the room needed: a buffer grown key by key may reserve twice what it holds.
            bytes.reserveCapacity(keys.reduce(0) { $0 + $1.count })
            ends.reserveCapacity(keys.count)
            for key in keys {
                bytes.append(contentsOf: key)
                ends.append(UInt32(bytes.count))
            }
        }

        var count: Int { ends.count }
        var isEmpty: Bool { ends.isEmpty }

        private func start(_ index: Int) -> Int { index == 0 ? 0 : Int(ends[index - 1]) }

        /// The key at `index`, in the chunk's buffer (no copy).
        func slice(_ index: Int) -> ArraySlice<UInt8> { bytes[start(index)..<Int(ends[index])] }

        /// The key at `index`.
        func key(_ index: Int) -> [UInt8] { Array(slice(index)) }

        var last: [UInt8]? { isEmpty ? nil : key(count - 1) }
        var first: [UInt8]? { isEmpty ? nil : key(0) }

        /// Where `key` is or would go, and whether it is there.
        func position(of key: [UInt8]) -> (index: Int, found: Bool) {
            bytes.withUnsafeBufferPointer { stored in
                key.withUnsafeBufferPointer { wanted in
                    var low = 0
                    var high = ends.count
                    var found = false
                    while low < high {
                        let middle = (low + high) / 2
                        let from = middle == 0 ? 0 : Int(ends[middle - 1])
                        let order = RankedKeys.compare(
                            UnsafeBufferPointer(rebasing: stored[from..<Int(ends[middle])]), wanted)
                        if order < 0 {
                            low = middle + 1
                        } else {
                            high = middle
                            if order == 0 { found = true }
                        }
                    }
                    return (low, found)
                }
            }
        }

        mutating func insert(_ key: [UInt8], at index: Int) {
            let offset = start(index)
            bytes.insert(contentsOf: key, at: offset)
            ends.insert(UInt32(offset), at: index)
            let length = UInt32(key.count)
            for position in index..<ends.count { ends[position] += length }
        }

        mutating func remove(at index: Int) {
            let from = start(index)
            let to = Int(ends[index])
            bytes.removeSubrange(from..<to)
            ends.remove(at: index)
            let length = UInt32(to - from)
            for position in index..<ends.count { ends[position] -= length }
        }

        /// Moves the second half of the keys into a new chunk and returns it.
        mutating func splitOffSecondHalf() -> Chunk {
            let half = count / 2
            let tail = Chunk((half..<count).map { key($0) })
            let cut = start(half)
            bytes.removeSubrange(cut...)
            ends.removeSubrange(half...)
            return tail
        }
    }

    /// Orders byte strings as `lexicographicallyPrecedes` does (by bytes, then by length): negative,
    /// zero or positive.
    static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let shared = Swift.min(left.count, right.count)
        if shared > 0 {
            let order = memcmp(left.baseAddress!, right.baseAddress!, shared)
            if order != 0 { return Int(order) }
        }
        return left.count - right.count
    }

    private var chunks: [Chunk] = []
    /// The last key of each chunk, for finding a key's chunk by binary search.
    private var lastKeys: [[UInt8]] = []
    private var fenwick: [Int] = []
    private(set) var count = 0

    init() {}

    /// A set of keys that are already sorted and distinct.
    init(sorted keys: [[UInt8]]) {
        var start = 0
        while start < keys.count {
            let end = Swift.min(keys.count, start + Self.chunkCapacity * 3 / 4)
            chunks.append(Chunk(keys[start..<end]))
            start = end
        }
        count = keys.count
        rebuildIndex()
    }

    private mutating func rebuildIndex() {
        lastKeys = chunks.map { $0.last! }
        fenwick = [Int](repeating: 0, count: chunks.count + 1)
        for (index, chunk) in chunks.enumerated() { fenwickAdd(index, chunk.count) }
    }

    private mutating func fenwickAdd(_ chunk: Int, _ delta: Int) {
        var index = chunk + 1
        while index < fenwick.count {
            fenwick[index] += delta
            index += index & -index
        }
    }

    /// The number of keys in chunks before `chunk`.
    private func keysBefore(_ chunk: Int) -> Int {
        var index = chunk
        var sum = 0
        while index > 0 {
            sum += fenwick[index]
            index -= index & -index
        }
        return sum
    }

    /// The chunk that holds (or would hold) `key`.
    private func chunkIndex(for key: [UInt8]) -> Int {
        var low = 0
        var high = lastKeys.count
        while low < high {
            let middle = (low + high) / 2
            let precedes = lastKeys[middle].withUnsafeBufferPointer { last in
                key.withUnsafeBufferPointer { Self.compare(last, $0) < 0 }
            }
            if precedes { low = middle + 1 } else { high = middle }
        }
        return Swift.min(low, Swift.max(chunks.count - 1, 0))
    }

    /// The rank of `key`, or nil when it is not in the set.
    func rank(of key: [UInt8]) -> Int? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunkIndex(for: key)
        let (index, found) = chunks[chunk].position(of: key)
        return found ? keysBefore(chunk) + index : nil
    }

    /// Inserts `key` (which must not be present) and returns its rank.
    @discardableResult
    mutating func insert(_ key: [UInt8]) -> Int {
        if chunks.isEmpty {
            chunks = [Chunk([key])]
            count = 1
            rebuildIndex()
            return 0
        }
        let chunk = chunkIndex(for: key)
        let (index, _) = chunks[chunk].position(of: key)
        let rank = keysBefore(chunk) + index
        chunks[chunk].insert(key, at: index)
        count += 1
        if chunks[chunk].count > Self.chunkCapacity {
            let tail = chunks[chunk].splitOffSecondHalf()
            chunks.insert(tail, at: chunk + 1)
            rebuildIndex()
        } else {
            if index == chunks[chunk].count - 1 { lastKeys[chunk] = key }
            fenwickAdd(chunk, 1)
        }
        assert(invariantsHold(around: chunk), "RankedKeys: invariants broken by an insert")
        return rank
    }

    /// Removes `key` and returns the rank it had, or nil when it was not present.
    @discardableResult
    mutating func remove(_ key: [UInt8]) -> Int? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunkIndex(for: key)
        let (index, found) = chunks[chunk].position(of: key)
        guard found else { return nil }
        let rank = keysBefore(chunk) + index
        chunks[chunk].remove(at: index)
        count -= 1
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            rebuildIndex()
        } else {
            if index == chunks[chunk].count { lastKeys[chunk] = chunks[chunk].last! }
            fenwickAdd(chunk, -1)
        }
        assert(invariantsHold(around: chunk), "RankedKeys: invariants broken by a removal")
        return rank
    }

    /// Checked after every mutation in debug builds, near the chunk it touched (so a check costs a
    /// chunk, not the whole set): chunks are non-empty and strictly sorted, each last key is recorded,
    /// neighbouring chunks do not overlap, and the Fenwick tree counts every key.
    func invariantsHold(around chunk: Int) -> Bool {
        guard lastKeys.count == chunks.count, fenwick.count == chunks.count + 1 else { return false }
        guard keysBefore(chunks.count) == count else { return false }
        guard !chunks.isEmpty else { return count == 0 }
        let center = Swift.min(Swift.max(chunk, 0), chunks.count - 1)
        for index in Swift.max(center - 1, 0)...Swift.min(center + 1, chunks.count - 1) {
            let keys = (0..<chunks[index].count).map { chunks[index].key($0) }
            guard let last = keys.last, lastKeys[index] == last else { return false }
            for position in keys.indices.dropFirst()
            where !keys[position - 1].lexicographicallyPrecedes(keys[position]) {
                return false
            }
            if index + 1 < chunks.count, let next = chunks[index + 1].first,
                !last.lexicographicallyPrecedes(next)
            {
                return false
            }
        }
        return true
    }

    /// The key at `rank`.
    func key(at rank: Int) -> [UInt8] { Array(slice(at: rank)) }

    /// The key at `rank`, in its chunk's buffer (no copy).
    func slice(at rank: Int) -> ArraySlice<UInt8> {
        // Descend the Fenwick tree to the chunk that holds the rank.
        var position = 0
        var remaining = rank
        var step = 1
        while step * 2 < fenwick.count { step *= 2 }
        while step > 0 {
            let next = position + step
            if next < fenwick.count && fenwick[next] <= remaining {
                position = next
                remaining -= fenwick[next]
            }
            step /= 2
        }
        return chunks[position].slice(remaining)
    }

    /// Every key, in order.
    var allKeys: [[UInt8]] { chunks.flatMap { chunk in (0..<chunk.count).map { chunk.key($0) } } }
}
