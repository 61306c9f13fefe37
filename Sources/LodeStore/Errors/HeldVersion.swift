/// A version an object of this process holds — or a reader of another process (``processID``):
/// LMDB cannot reuse the pages that later commits replaced while it is held, so the data file grows
/// with every commit it falls behind.
public struct HeldVersion: Sendable, Equatable, CustomStringConvertible {
    /// The version held.
    public var version: Int
    /// What holds it (`Results<Task>`, `LiveResults<Task>`, `LiveSectionedResults<Task>`…; `×3`
    /// when three such objects do; `a reader of process 1234` for another process).
    public var owners: [String]
    /// How many versions were committed after it.
    public var behind: Int
    /// The process whose reader holds it, when it is not this one.
    public var processID: Int32? = nil

    /// `version 12 (held by Results<Task>) is 1000 versions behind the last commit`.
    public var description: String {
        "version \(version) (held by \(owners.joined(separator: ", "))) is \(behind) versions behind the last commit"
    }
}
