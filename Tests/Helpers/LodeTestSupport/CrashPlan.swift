/// The deterministic sequence of commits the crash-durability test's writer makes and its checker
/// replays: commit N upserts the tasks `upserts(N)` with rank N and a title naming the commit, and
/// deletes `deletes(N)`. Mostly small commits; every 7th touches 100 objects, every 29th 1,000 (a
/// bulk commit that grows a small map mid-transaction), every 53rd carries a 200 KB record.
public enum CrashPlan {
    /// How many distinct task ids the plan uses.
    public static let idSpace = 2000

    /// What commit `n` (from 1) does.
    public static func commit(_ n: Int) -> (upserts: [Int], deletes: [Int]) {
        // 31 is coprime with the id space, so the ids of one commit are distinct.
        let upserts = (0..<size(n)).map { (n * 7919 + $0 * 31) % idSpace }
        let candidate = (n * 104_729 + 17) % idSpace
        let deletes = n % 4 == 0 && !upserts.contains(candidate) ? [candidate] : []
        return (upserts, deletes)
    }

    /// The title commit `n` gives task `id`: it names the commit and its size, and every 53rd
    /// commit's first task carries 200 KB more.
    public static func title(_ n: Int, _ id: Int) -> String {
        // The size and first id of commit `n` without making its list (checkers call this for every
        // task they read).
        let head = "c\(n) of \(size(n))"
        return n % 53 == 5 && id == (n * 7919) % idSpace
            ? head + String(repeating: "x", count: 200_000) : head
    }

    /// How many tasks commit `n` upserts.
    static func size(_ n: Int) -> Int { n % 29 == 3 ? 1000 : n % 7 == 0 ? 100 : 1 + n % 5 }
}

/// What the crash-durability checker expects the store to hold after commits 1…n of `CrashPlan`.
public struct CrashModel {
    /// The last commit applied.
    public var version = 0
    /// Task id → the commit that last wrote it.
    public var tasks: [Int: Int] = [:]

    /// The state before any commit.
    public init() {}

    /// Applies the commits after the current one up to `n`.
    public mutating func advance(to n: Int) {
        while version < n {
            version += 1
            let plan = CrashPlan.commit(version)
            for id in plan.deletes { tasks[id] = nil }
            for id in plan.upserts { tasks[id] = version }
        }
    }
}
