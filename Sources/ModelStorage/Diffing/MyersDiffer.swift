/// Eugene Myers' O((N+M)·D) difference algorithm (1986) in its linear-space form (middle snakes,
/// divide and conquer), for elements compared with `==`: the result is a shortest edit script of
/// deletes and inserts. It reports no moves or updates — equal elements are the same element.
public struct MyersDiffer: DiffingAlgorithm, Sendable {
    /// Makes a differ.
    @inlinable
    public init() {}

    /// Operations from `old` to `new` (elements compared with `==`).
    ///
    /// - Complexity: O((*n* + *m*) *d*) time and O(*n* + *m*) space for lists of *n* and *m* elements
    ///   that differ by *d* edits.
    public func diff<T: EntityIdentifiable & Equatable>(from old: [T], to new: [T])
        -> [SingleSectionOperation]
    {
        diff(old, new)
    }

    /// Operations from `old` to `new` for any equatable elements. Inlinable, so it is specialized for
    /// the caller's element type.
    @inlinable
    public func diff<T: Equatable>(_ old: [T], _ new: [T]) -> [SingleSectionOperation] {
        var state = State(old: old, new: new)
        state.compare(0, old.count, 0, new.count)
        return normalized(deletes: state.deletes, inserts: state.inserts, moves: [], updates: [])
    }

    @usableFromInline
    struct State<T: Equatable> {
        @usableFromInline let old: [T]
        @usableFromInline let new: [T]
        @usableFromInline var deletes: [Int] = []
        @usableFromInline var inserts: [Int] = []
        @usableFromInline var forward: [Int]
        @usableFromInline var backward: [Int]

        @inlinable
        init(old: [T], new: [T]) {
            self.old = old
            self.new = new
            let size = 2 * (old.count + new.count) + 3
            forward = [Int](repeating: 0, count: size)
            backward = [Int](repeating: 0, count: size)
        }

        /// Compares `old[aLow..<aHigh]` with `new[bLow..<bHigh]`.
        @inlinable
        mutating func compare(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) {
            var aLow = aLow
            var bLow = bLow
            var aHigh = aHigh
            var bHigh = bHigh
            while aLow < aHigh && bLow < bHigh && old[aLow] == new[bLow] {
                aLow += 1
                bLow += 1
            }
            while aLow < aHigh && bLow < bHigh && old[aHigh - 1] == new[bHigh - 1] {
                aHigh -= 1
                bHigh -= 1
            }
            if aLow == aHigh {
                inserts.append(contentsOf: bLow..<bHigh)
                return
            }
            if bLow == bHigh {
                deletes.append(contentsOf: aLow..<aHigh)
                return
            }
            let (x, y, u, v) = middleSnake(aLow, aHigh, bLow, bHigh)
            compare(aLow, x, bLow, y)
            compare(u, aHigh, v, bHigh)
        }

        /// The middle snake of the shortest path through the edit graph of the two ranges: it starts at
        /// (x, y) and ends at (u, v), in absolute indices.
        @inlinable
        mutating func middleSnake(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) -> (
            Int, Int, Int, Int
        ) {
            let n = aHigh - aLow
            let m = bHigh - bLow
            let delta = n - m
            let odd = delta & 1 != 0
            let offset = n + m + 1
            let limit = (n + m + 1) / 2
            forward[offset + 1] = 0
            backward[offset + 1] = 0
            for d in 0...limit {
                // Forward paths, from the top left.
                var k = -d
                while k <= d {
                    var x: Int
                    if k == -d || (k != d && forward[offset + k - 1] < forward[offset + k + 1]) {
                        x = forward[offset + k + 1]
                    } else {
                        x = forward[offset + k - 1] + 1
                    }
                    var y = x - k
                    let startX = x
                    let startY = y
                    while x < n && y < m && old[aLow + x] == new[bLow + y] {
                        x += 1
                        y += 1
                    }
                    forward[offset + k] = x
                    if odd && k >= delta - (d - 1) && k <= delta + (d - 1) {
                        // Overlaps a backward path on diagonal delta - k (counted from the bottom right).
                        if x + backward[offset + delta - k] >= n {
                            return (aLow + startX, bLow + startY, aLow + x, bLow + y)
                        }
                    }
                    k += 2
                }
                // Backward paths, from the bottom right (coordinates counted from the end).
                k = -d
                while k <= d {
                    var x: Int
                    if k == -d || (k != d && backward[offset + k - 1] < backward[offset + k + 1]) {
                        x = backward[offset + k + 1]
                    } else {
                        x = backward[offset + k - 1] + 1
                    }
                    var y = x - k
                    let startX = x
                    let startY = y
                    while x < n && y < m && old[aHigh - 1 - x] == new[bHigh - 1 - y] {
                        x += 1
                        y += 1
                    }
                    backward[offset + k] = x
                    if !odd && k >= delta - d && k <= delta + d {
                        if x + forward[offset + delta - k] >= n {
                            return (aHigh - x, bHigh - y, aHigh - startX, bHigh - startY)
                        }
                    }
                    k += 2
                }
            }
            preconditionFailure("no middle snake found")  // unreachable: a path always exists
        }
    }
}
