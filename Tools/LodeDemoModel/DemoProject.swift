import Lode
import LodeMacros

/// A project tasks are filed under.
@Model
public struct DemoProject {
    /// The project's number.
    @PrimaryKey public var id: Int
    /// Its name.
    public var name: String

    /// Makes a project.
    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}
