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
struct RankedKeys: Sendable {
    /// The most keys a chunk holds (the default; tests use small ones to exercise splits).
    static let chunkCapacity = 512
    /// The most chunks a group holds (the default).
    static let groupCapacity = 64

    private let chunkCapacity: Int
    private let groupCapacity: Int

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

        /// The last (greatest) key, in the chunk's buffer; the chunk must not be empty.
        var lastKey: ArraySlice<UInt8> { slice(count - 1) }
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

        /// Removes the keys at `positions` (ascending, distinct), moving the others once.
        mutating func remove(positions: [Int]) {
            guard !positions.isEmpty else { return }
            var keptBytes: [UInt8] = []
            keptBytes.reserveCapacity(bytes.count)
            var keptEnds: [UInt32] = []
            keptEnds.reserveCapacity(ends.count - positions.count)
            var next = 0
            for index in 0..<ends.count {
                if next < positions.count && positions[next] == index {
                    next += 1
                    continue
                }
                keptBytes.append(contentsOf: slice(index))
                keptEnds.append(UInt32(keptBytes.count))
            }
            bytes = keptBytes
            ends = keptEnds
        }

        /// Merges `keys` (ascending, none present) into the chunk, moving the keys it holds once.
        mutating func merge(_ keys: ArraySlice<[UInt8]>) {
            var mergedBytes: [UInt8] = []
            mergedBytes.reserveCapacity(bytes.count + keys.reduce(0) { $0 + $1.count })
            var mergedEnds: [UInt32] = []
            mergedEnds.reserveCapacity(ends.count + keys.count)
            var held = 0
            for key in keys {
                while held < ends.count && RankedKeys.precedes(slice(held), key) {
                    mergedBytes.append(contentsOf: slice(held))
                    mergedEnds.append(UInt32(mergedBytes.count))
                    held += 1
                }
                mergedBytes.append(contentsOf: key)
                mergedEnds.append(UInt32(mergedBytes.count))
            }
            while held < ends.count {
                mergedBytes.append(contentsOf: slice(held))
                mergedEnds.append(UInt32(mergedBytes.count))
                held += 1
            }
            bytes = mergedBytes
            ends = mergedEnds
        }

        /// The chunk cut into chunks of at most `size` keys, in order (each piece's bytes copied once).
        func pieces(of size: Int) -> [Chunk] {
            stride(from: 0, to: count, by: size).map { first in
                let last = Swift.min(count, first + size) - 1
                let offset = start(first)
                var piece = Chunk([[UInt8]]())
                piece.bytes = Array(bytes[offset..<Int(ends[last])])
                piece.ends = ends[first...last].map { $0 - UInt32(offset) }
                return piece
            }
        }

        /// Where `key` is or would go at or after `lower`, and whether it is there.
        func position(of key: [UInt8], from lower: Int) -> (index: Int, found: Bool) {
            // The next key is the usual answer in a walk of ascending keys.
            if lower < count {
                let order = slice(lower).withUnsafeBufferPointer { stored in
                    key.withUnsafeBufferPointer { RankedKeys.compare(stored, $0) }
                }
                if order >= 0 { return (lower, order == 0) }
            }
            let (index, found) = position(of: key)
            return (Swift.max(index, lower), found)
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

    /// The chunks in order, in groups of at most `groupCapacity`: results handed out share this
    /// structure copy-on-write, so the first change after a hand-out copies the outer array, one
    /// group and one chunk — not every chunk (a million keys are some 2,700 chunks).
    private var groups: [[Chunk]] = []
    /// The index of each group's first chunk.
    private var groupStarts: [Int] = []
    private var chunkCount = 0
    private var fenwick: [Int] = []
    private(set) var count = 0

    /// An empty set.
    init(chunkCapacity: Int = Self.chunkCapacity, groupCapacity: Int = Self.groupCapacity) {
        precondition(chunkCapacity >= 2 && groupCapacity >= 2)
        self.chunkCapacity = chunkCapacity
        self.groupCapacity = groupCapacity
    }

    /// A set of keys that are already sorted and distinct.
    init(sorted keys: [[UInt8]]) {
        self.init()
        var start = 0
        var chunks: [Chunk] = []
        while start < keys.count {
            let end = Swift.min(keys.count, start + chunkCapacity * 3 / 4)
            chunks.append(Chunk(keys[start..<end]))
            start = end
        }
        var first = 0
        while first < chunks.count {
            let end = Swift.min(chunks.count, first + groupCapacity * 3 / 4)
            groups.append(Array(chunks[first..<end]))
            first = end
        }
        count = keys.count
        rebuildIndex()
        if internalChecksEnabled { checkInvariants() }
    }

    private mutating func rebuildIndex() {
        groupStarts = []
        groupStarts.reserveCapacity(groups.count)
        fenwick = [0]
        var total = 0
        for group in groups {
            groupStarts.append(total)
            total += group.count
            for chunk in group { fenwick.append(chunk.count) }
        }
        chunkCount = total
        // Linear-time Fenwick construction: each node passes its sum to its parent.
        for index in 1..<fenwick.count {
            let parent = index + (index & -index)
            if parent < fenwick.count { fenwick[parent] += fenwick[index] }
        }
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

    /// The group and the position in it of chunk `chunk`.
    private func locate(_ chunk: Int) -> (group: Int, offset: Int) {
        var low = 0
        var high = groupStarts.count
        while low < high {
            let middle = (low + high) / 2
            if groupStarts[middle] <= chunk { low = middle + 1 } else { high = middle }
        }
        return (low - 1, chunk - groupStarts[low - 1])
    }

    private func chunk(_ index: Int) -> Chunk {
        let (group, offset) = locate(index)
        return groups[group][offset]
    }

    /// Whether `stored` sorts before `key` (as `lexicographicallyPrecedes`, by `memcmp`).
    static func precedes(_ stored: ArraySlice<UInt8>, _ key: [UInt8]) -> Bool {
        stored.withUnsafeBufferPointer { stored in key.withUnsafeBufferPointer { compare(stored, $0) < 0 } }
    }

    /// Whether `left` sorts before `right`.
    static func precedes(_ left: [UInt8], _ right: [UInt8]) -> Bool { precedes(left[...], right) }

    /// The chunk that holds (or would hold) `key`: the first whose last key is not before it (the
    /// last chunk for a key after every other).
    private func chunkIndex(for key: [UInt8]) -> Int {
        var low = 0
        var high = groups.count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(groups[middle][groups[middle].count - 1].lastKey, key) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        let group = Swift.min(low, groups.count - 1)
        let chunks = groups[group]
        low = 0
        high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(chunks[middle].lastKey, key) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return groupStarts[group] + Swift.min(low, chunks.count - 1)
    }

    /// The rank of `key`, or nil when it is not in the set.
    func rank(of key: [UInt8]) -> Int? {
        guard chunkCount > 0 else { return nil }
        let index = chunkIndex(for: key)
        let (index2, found) = chunk(index).position(of: key)
        return found ? keysBefore(index) + index2 : nil
    }

    /// Inserts `key` (which must not be present) and returns its rank.
    @discardableResult
    mutating func insert(_ key: [UInt8]) -> Int {
        if chunkCount == 0 {
            groups = [[Chunk([key])]]
            count = 1
            rebuildIndex()
            return 0
        }
        let index = chunkIndex(for: key)
        let (group, offset) = locate(index)
        let (position, _) = groups[group][offset].position(of: key)
        let rank = keysBefore(index) + position
        groups[group][offset].insert(key, at: position)
        count += 1
        if groups[group][offset].count > chunkCapacity {
            let tail = groups[group][offset].splitOffSecondHalf()
            groups[group].insert(tail, at: offset + 1)
            if groups[group].count > groupCapacity {
                let half = groups[group].count / 2
                let second = Array(groups[group][half...])
                groups[group].removeSubrange(half...)
                groups.insert(second, at: group + 1)
            }
            rebuildIndex()
        } else {
            fenwickAdd(index, 1)
        }
        assert(invariantsHold(around: index), "RankedKeys: invariants broken by an insert")
        if internalChecksEnabled {
            if count <= internalChecksFullLimit {
                checkInvariants()
            } else {
                precondition(invariantsHold(around: index), "RankedKeys: invariants broken by an insert")
            }
        }
        return rank
    }

    /// Removes `key` and returns the rank it had, or nil when it was not present.
    @discardableResult
    mutating func remove(_ key: [UInt8]) -> Int? {
        guard chunkCount > 0 else { return nil }
        let index = chunkIndex(for: key)
        let (group, offset) = locate(index)
        let (position, found) = groups[group][offset].position(of: key)
        guard found else { return nil }
        let rank = keysBefore(index) + position
        groups[group][offset].remove(at: position)
        count -= 1
        if groups[group][offset].isEmpty {
            groups[group].remove(at: offset)
            if groups[group].isEmpty { groups.remove(at: group) }
            rebuildIndex()
        } else {
            fenwickAdd(index, -1)
        }
        assert(invariantsHold(around: index), "RankedKeys: invariants broken by a removal")
        if internalChecksEnabled {
            if count <= internalChecksFullLimit {
                checkInvariants()
            } else {
                precondition(invariantsHold(around: index), "RankedKeys: invariants broken by a removal")
            }
        }
        return rank
    }

    // MARK: Batches

    /// Removes `keys` (ascending, distinct) and returns, for each, the rank it had before any of them
    /// was removed (nil for a key not in the set). The keys of one chunk are found walking forward
    /// and removed together, so a run of neighbouring keys — the rows of a renamed section — costs
    /// one search and one move of its chunk, not one per key.
    mutating func remove(sorted keys: [[UInt8]]) -> [Int?] {
        var ranks = [Int?](repeating: nil, count: keys.count)
        var next = 0
        var removedBefore = 0
        while next < keys.count && chunkCount > 0 {
            let index = chunkIndex(for: keys[next])
            let (group, offset) = locate(index)
            let chunk = groups[group][offset]
            let isLast = index == chunkCount - 1
            let base = keysBefore(index) + removedBefore
            var positions: [Int] = []
            var lower = 0
            while next < keys.count
                && (isLast || !Self.precedes(chunk.lastKey, keys[next]))
            {
                let (position, found) = chunk.position(of: keys[next], from: lower)
                if found {
                    ranks[next] = base + position
                    positions.append(position)
                    lower = position + 1
                } else {
                    lower = position
                }
                next += 1
            }
            guard !positions.isEmpty else { continue }
            groups[group][offset].remove(positions: positions)
            count -= positions.count
            removedBefore += positions.count
            if groups[group][offset].isEmpty {
                groups[group].remove(at: offset)
                if groups[group].isEmpty { groups.remove(at: group) }
                rebuildIndex()
            } else {
                fenwickAdd(index, -positions.count)
            }
        }
        checkAfterBatch()
        return ranks
    }

    /// Inserts `keys` (ascending, none in the set). The keys that go into one chunk are merged into it
    /// together; a chunk grown past its capacity is cut into pieces three quarters full.
    mutating func insert(sorted keys: [[UInt8]]) {
        guard !keys.isEmpty else { return }
        if chunkCount == 0 {
            groups = [[Chunk(keys)]]
            count = keys.count
            rebuildIndex()
            if groups[0][0].count > chunkCapacity { split(group: 0, offset: 0) }
            checkAfterBatch()
            return
        }
        var next = 0
        while next < keys.count {
            let index = chunkIndex(for: keys[next])
            let (group, offset) = locate(index)
            let isLast = index == chunkCount - 1
            var end = next
            while end < keys.count
                && (isLast || !Self.precedes(groups[group][offset].lastKey, keys[end]))
            {
                end += 1
            }
            groups[group][offset].merge(keys[next..<end])
            count += end - next
            if groups[group][offset].count > chunkCapacity {
                split(group: group, offset: offset)
            } else {
                fenwickAdd(index, end - next)
            }
            next = end
        }
        checkAfterBatch()
    }

    /// Cuts the over-full chunk at `offset` of `group` into pieces three quarters full, and the group,
    /// when it then holds too many chunks, likewise; rebuilds the index.
    private mutating func split(group: Int, offset: Int) {
        let pieces = groups[group][offset].pieces(of: Swift.max(1, chunkCapacity * 3 / 4))
        groups[group].replaceSubrange(offset...offset, with: pieces)
        if groups[group].count > groupCapacity {
            let size = Swift.max(1, groupCapacity * 3 / 4)
            let chunks = groups[group]
            let cut = stride(from: 0, to: chunks.count, by: size).map {
                Array(chunks[$0..<Swift.min(chunks.count, $0 + size)])
            }
            groups.replaceSubrange(group...group, with: cut)
        }
        rebuildIndex()
    }

    /// The rank of each of `keys` (ascending), nil for one not in the set: one search per chunk the
    /// keys fall in, then a walk forward in it.
    func ranks(ofSorted keys: [[UInt8]]) -> [Int?] {
        var ranks = [Int?](repeating: nil, count: keys.count)
        var next = 0
        while next < keys.count && chunkCount > 0 {
            let index = chunkIndex(for: keys[next])
            let chunk = self.chunk(index)
            let isLast = index == chunkCount - 1
            let base = keysBefore(index)
            var lower = 0
            while next < keys.count && (isLast || !Self.precedes(chunk.lastKey, keys[next])) {
                let (position, found) = chunk.position(of: keys[next], from: lower)
                if found { ranks[next] = base + position }
                lower = found ? position + 1 : position
                next += 1
            }
        }
        return ranks
    }

    /// The positions of `keys` in ascending order of the keys, or nil when they are in order already
    /// (rows often come so: a section's rows, by the inverse index).
    static func ascendingOrder(of keys: [[UInt8]]) -> [Int]? {
        var inOrder = true
        var index = 1
        while inOrder && index < keys.count {
            inOrder = precedes(keys[index - 1], keys[index])
            index += 1
        }
        if inOrder { return nil }
        var order = Array(0..<keys.count)
        order.sort { precedes(keys[$0], keys[$1]) }
        return order
    }

    /// With `LODE_INTERNAL_CHECKS`: every invariant when the set is small enough, else the counts.
    private func checkAfterBatch() {
        // A set never filled has no index yet.
        guard internalChecksEnabled, !fenwick.isEmpty else { return }
        if count <= internalChecksFullLimit {
            checkInvariants()
        } else {
            precondition(
                fenwick.count == chunkCount + 1 && keysBefore(chunkCount) == count,
                "RankedKeys: counts broken by a batch")
        }
    }

    /// Checked after every mutation in debug builds, near the chunk it touched (so a check costs a
    /// chunk, not the whole set): groups and chunks are non-empty, chunks strictly sorted and not
    /// overlapping their neighbours, group starts and the Fenwick tree count every chunk and key.
    func invariantsHold(around chunk: Int) -> Bool {
        guard fenwick.count == chunkCount + 1, groupStarts.count == groups.count else { return false }
        guard keysBefore(chunkCount) == count else { return false }
        guard chunkCount > 0 else { return count == 0 && groups.isEmpty }
        var start = 0
        for (group, chunks) in groups.enumerated() {
            guard !chunks.isEmpty, groupStarts[group] == start else { return false }
            start += chunks.count
        }
        guard start == chunkCount else { return false }
        let center = Swift.min(Swift.max(chunk, 0), chunkCount - 1)
        for index in Swift.max(center - 1, 0)...Swift.min(center + 1, chunkCount - 1) {
            let current = self.chunk(index)
            let keys = (0..<current.count).map { current.key($0) }
            guard let last = keys.last else { return false }
            for position in keys.indices.dropFirst()
            where !keys[position - 1].lexicographicallyPrecedes(keys[position]) {
                return false
            }
            if index + 1 < chunkCount, let next = self.chunk(index + 1).first,
                !last.lexicographicallyPrecedes(next)
            {
                return false
            }
        }
        return true
    }

    /// Checks every invariant of the whole set (with `LODE_INTERNAL_CHECKS`, after every mutation):
    /// each group holds 1 to `groupCapacity` chunks and starts where the previous one ended, each
    /// chunk 1 to `chunkCapacity` keys, strictly increasing within and across chunks, and the Fenwick
    /// tree gives the keys before every chunk. Stops the program naming the first one broken.
    func checkInvariants() {
        precondition(
            groupStarts.count == groups.count,
            "RankedKeys: \(groups.count) groups, \(groupStarts.count) starts")
        precondition(
            fenwick.count == chunkCount + 1,
            "RankedKeys: Fenwick tree of \(fenwick.count) for \(chunkCount) chunks")
        var chunkIndex = 0
        var keysSoFar = 0
        var previous: [UInt8]?
        for (group, chunks) in groups.enumerated() {
            precondition(
                !chunks.isEmpty && chunks.count <= groupCapacity,
                "RankedKeys: group \(group) holds \(chunks.count) chunks")
            precondition(
                groupStarts[group] == chunkIndex,
                "RankedKeys: group \(group) starts at \(groupStarts[group]), not \(chunkIndex)")
            for chunk in chunks {
                precondition(
                    chunk.count >= 1 && chunk.count <= chunkCapacity,
                    "RankedKeys: chunk \(chunkIndex) holds \(chunk.count) keys")
                precondition(
                    keysBefore(chunkIndex) == keysSoFar,
                    "RankedKeys: Fenwick tree wrong before chunk \(chunkIndex)")
                for position in 0..<chunk.count {
                    let key = chunk.key(position)
                    if let previous {
                        precondition(
                            previous.lexicographicallyPrecedes(key),
                            "RankedKeys: keys out of order at rank \(keysSoFar + position)")
                    }
                    previous = key
                }
                keysSoFar += chunk.count
                chunkIndex += 1
            }
        }
        precondition(
            chunkIndex == chunkCount && keysSoFar == count,
            "RankedKeys: \(keysSoFar) keys in \(chunkIndex) chunks, counted \(count) in \(chunkCount)")
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
        return chunk(position).slice(remaining)
    }

    /// Every key, in order.
    var allKeys: [[UInt8]] {
        groups.flatMap { chunks in chunks.flatMap { chunk in (0..<chunk.count).map { chunk.key($0) } } }
    }
}
