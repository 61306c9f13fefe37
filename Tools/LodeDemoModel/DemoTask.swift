import Lode

/// A task of the demo list.
public struct DemoTask: Persistable {
    /// The task's number.
    public var id: Int
    /// What it says.
    public var title: String
    /// Its section.
    public var status: Status
    /// Its place in its section.
    public var rank: Int
    /// The project the task is filed under, if any (a link: deleting the project unfiles the task).
    public var project: Link<DemoProject>?

    /// Makes a task.
    public init(id: Int, title: String, status: Status, rank: Int, project: Link<DemoProject>? = nil) {
        self.id = id
        self.title = title
        self.status = status
        self.rank = rank
        self.project = project
    }

    /// Keyed by `id`, indexed by status and rank, linked to its project.
    public static let schema = Schema<DemoTask>(
        primaryKey: \.id, indexes: [.on(\.status), .on(\.rank)], links: [.to(\.project, onDelete: .nullify)])
}
