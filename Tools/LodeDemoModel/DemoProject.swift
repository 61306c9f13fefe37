import Lode

/// A project tasks are filed under.
public struct DemoProject: Persistable {
    /// The project's number.
    public var id: Int
    /// Its name.
    public var name: String

    /// Makes a project.
    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }

    /// Keyed by `id`.
    public static let schema = Schema<DemoProject>(primaryKey: \.id)
}
