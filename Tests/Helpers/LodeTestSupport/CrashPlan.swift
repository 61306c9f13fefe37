/// The deterministic sequence of commits the crash-durability test's writer makes and its checker
/// replays: commit N upserts the tasks `upserts(N)` with rank N and a title naming the commit, and
/// deletes `deletes(N)`. Mostly small commits; every 7th touches 100 objects, every 29th 1,000 (a
/// bulk commit that grows a small map mid-transaction), every 53rd carries a 200 KB record.
public enum CrashPlan {
    /// How many distinct task ids the plan uses.
    public static let idSpace = 2000

    /// What commit `n` (from 1) does.
    public static func commit(_ n: Int) -> (upserts: [Int], deletes: [Int]) {
        let size = n % 29 == 3 ? 1000 : n % 7 == 0 ? 100 : 1 + n % 5
        // 31 is coprime with the id space, so the ids of one commit are distinct.
        let upserts = (0..<size).map { (n * 7919 + $0 * 31) % idSpace }
        let candidate = (n * 104_729 + 17) % idSpace
        let deletes = n % 4 == 0 && !upserts.contains(candidate) ? [candidate] : []
        return (upserts, deletes)
    }

    /// The title commit `n` gives task `id`: it names the commit and its size, and every 53rd
    /// commit's first task carries 200 KB more.
    public static func title(_ n: Int, _ id: Int) -> String {
        let plan = commit(n)
        let head = "c\(n) of \(plan.upserts.count)"
        return n % 53 == 5 && id == plan.upserts[0] ? head + String(repeating: "x", count: 200_000) : head
    }
}
