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
    ///
    /// - Complexity: O(*n* log *n*) for *n* elements in all: linear matching, and the fewest moves
    ///   from a longest increasing subsequence.
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
        // Few arrays, each written once (a diff of 100,000 elements touches megabytes; fresh pages
        // cost page faults, and a shared cache under pressure punishes every extra pass).
        var matchedOld = [Int](repeating: -1, count: newCount)  // new index → old index
        var sequence: [Int] = []  // the matched old indices, in new order
        sequence.reserveCapacity(Swift.min(oldCount, newCount))
        for index in 0..<newCount {
            guard let slot = table.index(forKey: newKey(index)) else { continue }
            let old = table.values[slot]
            guard old >= 0 else { continue }
            matchedOld[index] = old
            sequence.append(old)
            table.values[slot] = nextSame[old]
            nextSame[old] = -2  // matched (its chain link was just read, for the last time)
        }
        var deletes: [Int] = []
        for index in 0..<oldCount where nextSame[index] != -2 { deletes.append(index) }
        let staying = longestIncreasingSubsequenceFlags(sequence)
        var inserts: [Int] = []
        var moves: [(Int, Int)] = []
        var updates: [Int] = []
        var position = 0
        for index in 0..<newCount {
            let old = matchedOld[index]
            guard old >= 0 else {
                inserts.append(index)
                continue
            }
            let isChanged = changed(old, index)
            if staying[position] {
                if isChanged { updates.append(old) }
            } else if isChanged {
                // A view cannot move and reload one row in a batch.
                deletes.append(old)
                inserts.append(index)
            } else {
                moves.append((old, index))
            }
            position += 1
        }
        return normalized(deletes: deletes, inserts: inserts, moves: moves, updates: updates)
    }
}
