/// Paul Heckel's diff (1978) for elements with identities: matches elements by identity in one pass
/// over each list (occurrences of a repeated identity pair up in order), reports unmatched old ones
/// as deletes and new ones as inserts, matched ones whose value changed as updates, and moves only
/// for the matched elements outside the longest run that kept its order — the fewest moves possible.
///
/// Matching is linear; choosing the minimal moves is O(n log n).
public struct HeckelDiffer: DiffingAlgorithm, Sendable {
    /// Makes a differ.
    @inlinable
    public init() {}

    /// Operations from `old` to `new`, matching by `identifier` and detecting updates with `==`.
    public func diff<T: EntityIdentifiable & Equatable>(from old: [T], to new: [T])
        -> [SingleSectionOperation]
    {
        run(
            old.count, new.count, oldKey: { old[$0].identifier }, newKey: { new[$0].identifier },
            changed: { old[$0] != new[$1] })
    }

    /// Operations from `old` to `new` for plain hashable values (the value is the identity, so there
    /// are no updates). Inlinable, so it is specialized for the caller's element type.
    @inlinable
    public func diff<T: Hashable>(_ old: [T], _ new: [T]) -> [SingleSectionOperation] {
        run(old.count, new.count, oldKey: { old[$0] }, newKey: { new[$0] }, changed: { _, _ in false })
    }

    @inlinable
    func run<Key: Hashable>(
        _ oldCount: Int, _ newCount: Int, oldKey: (Int) -> Key, newKey: (Int) -> Key,
        changed: (Int, Int) -> Bool
    ) -> [SingleSectionOperation] {
        // Symbol table: each identity's first unmatched old index; `nextSame` chains the later old
        // indices with the same identity, so repeated identities need no array of their own.
        var table: [Key: Int] = [:]
        table.reserveCapacity(oldCount)
        var nextSame = [Int](repeating: -1, count: oldCount)
        for index in stride(from: oldCount - 1, through: 0, by: -1) {
            // One hash per element: `updateValue` returns the later index it replaces.
            if let later = table.updateValue(index, forKey: oldKey(index)) { nextSame[index] = later }
        }
        var matchedOld = [Int](repeating: -1, count: newCount)  // new index → old index
        var oldMatched = [Bool](repeating: false, count: oldCount)
        for index in 0..<newCount {
            guard let slot = table.index(forKey: newKey(index)) else { continue }
            let old = table.values[slot]
            guard old >= 0 else { continue }
            matchedOld[index] = old
            oldMatched[old] = true
            table.values[slot] = nextSame[old]
        }
        var deletes: [Int] = []
        for index in 0..<oldCount where !oldMatched[index] { deletes.append(index) }
        var inserts: [Int] = []
        var pairs: [(old: Int, new: Int)] = []
        pairs.reserveCapacity(newCount)
        for index in 0..<newCount {
            if matchedOld[index] < 0 {
                inserts.append(index)
            } else {
                pairs.append((matchedOld[index], index))
            }
        }
        let sequence = pairs.map(\.old)
        var staying = [Bool](repeating: false, count: pairs.count)
        for position in longestIncreasingSubsequence(sequence) { staying[position] = true }
        var moves: [(Int, Int)] = []
        var updates: [Int] = []
        for (position, pair) in pairs.enumerated() {
            let isChanged = changed(pair.old, pair.new)
            if staying[position] {
                if isChanged { updates.append(pair.old) }
            } else if isChanged {
                // A view cannot move and reload one row in a batch.
                deletes.append(pair.old)
                inserts.append(pair.new)
            } else {
                moves.append((pair.old, pair.new))
            }
        }
        return normalized(deletes: deletes, inserts: inserts, moves: moves, updates: updates)
    }
}
