/// A task's place in the work: the section it is listed under.
public enum Status: Int, Codable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Not started.
    case todo
    /// Under way.
    case doing
    /// Finished.
    case done

    /// The section's title.
    public var description: String { ["To do", "Doing", "Done"][rawValue] }

    /// The status named `name` (`todo`, `doing`, `done`, any case).
    public init?(name: String) {
        guard
            let status = Self.allCases.first(where: {
                "\($0)".lowercased().replacingOccurrences(of: " ", with: "") == name.lowercased()
            })
        else { return nil }
        self = status
    }
}
