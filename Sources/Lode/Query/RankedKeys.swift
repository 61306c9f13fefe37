/// A sorted set of byte strings with positions: insert, remove and find the rank of a key in
/// O(log N) (plus a small chunk shift), and the key at a rank in O(log N). It is a two-level counted
/// B-tree: sorted chunks of at most `chunkCapacity` keys, and a Fenwick tree of chunk sizes for ranks.
///
/// Live results keep their rows in one, keyed by the encoded sort values followed by the primary key.
struct RankedKeys {
    static let chunkCapacity = 512

    private var chunks: [[[UInt8]]] = []
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
            chunks.append(Array(keys[start..<end]))
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
            if lastKeys[middle].lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return Swift.min(low, Swift.max(chunks.count - 1, 0))
    }

    private static func position(of key: [UInt8], in chunk: [[UInt8]]) -> (index: Int, found: Bool) {
        var low = 0
        var high = chunk.count
        while low < high {
            let middle = (low + high) / 2
            if chunk[middle].lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return (low, low < chunk.count && chunk[low] == key)
    }

    /// The rank of `key`, or nil when it is not in the set.
    func rank(of key: [UInt8]) -> Int? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunkIndex(for: key)
        let (index, found) = Self.position(of: key, in: chunks[chunk])
        return found ? keysBefore(chunk) + index : nil
    }

    /// Inserts `key` (which must not be present) and returns its rank.
    @discardableResult
    mutating func insert(_ key: [UInt8]) -> Int {
        if chunks.isEmpty {
            chunks = [[key]]
            count = 1
            rebuildIndex()
            return 0
        }
        let chunk = chunkIndex(for: key)
        let (index, _) = Self.position(of: key, in: chunks[chunk])
        let rank = keysBefore(chunk) + index
        chunks[chunk].insert(key, at: index)
        count += 1
        if chunks[chunk].count > Self.chunkCapacity {
            let half = chunks[chunk].count / 2
            let tail = Array(chunks[chunk][half...])
            chunks[chunk].removeSubrange(half...)
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
        let (index, found) = Self.position(of: key, in: chunks[chunk])
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
            let keys = chunks[index]
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
    func key(at rank: Int) -> [UInt8] {
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
        return chunks[position][remaining]
    }

    /// Every key, in order.
    var allKeys: [[UInt8]] { chunks.flatMap { $0 } }
}
