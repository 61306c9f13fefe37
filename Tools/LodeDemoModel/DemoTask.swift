import Lode
import LodeMacros

/// A task of the demo list: keyed by `id`, indexed by status and rank, linked to its project.
@Model
public struct DemoTask {
    /// The task's number.
    @PrimaryKey public var id: Int
    /// What it says.
    public var title: String
    /// Its section.
    @Indexed public var status: Status
    /// Its place in its section.
    @Indexed public var rank: Int
    /// The project the task is filed under, if any (a link: deleting the project unfiles the task).
    @Linked(onDelete: .nullify) public var project: Link<DemoProject>?

    /// Makes a task.
    public init(id: Int, title: String, status: Status, rank: Int, project: Link<DemoProject>? = nil) {
        self.id = id
        self.title = title
        self.status = status
        self.rank = rank
        self.project = project
    }
}
