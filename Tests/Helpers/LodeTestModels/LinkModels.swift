import Foundation
import LodeStore

/// The delete rules of the linked test types: one rule per link, so the same three types are
/// tested under every rule.
protocol LinkRules: Sendable {
    /// `Task.project` → `Project`.
    static var project: DeleteRule { get }
    /// `Task.tags` → `Tag` (to-many).
    static var tags: DeleteRule { get }
    /// `Task.parent` → `Task` (a link of a type to itself).
    static var parent: DeleteRule { get }
    /// `Project.lead` → `Task` (closes the cycle Project → Task → Project).
    static var lead: DeleteRule { get }
}

enum NullifyRules: LinkRules {
    static var project: DeleteRule { .nullify }
    static var tags: DeleteRule { .nullify }
    static var parent: DeleteRule { .nullify }
    static var lead: DeleteRule { .nullify }
}

enum CascadeRules: LinkRules {
    static var project: DeleteRule { .cascade }
    static var tags: DeleteRule { .cascade }
    static var parent: DeleteRule { .cascade }
    static var lead: DeleteRule { .cascade }
}

enum DenyRules: LinkRules {
    static var project: DeleteRule { .deny }
    static var tags: DeleteRule { .deny }
    static var parent: DeleteRule { .deny }
    static var lead: DeleteRule { .deny }
}

/// Projects own their tasks, tags are loose, subtasks go with their parent.
enum OwningRules: LinkRules {
    static var project: DeleteRule { .cascade }
    static var tags: DeleteRule { .nullify }
    static var parent: DeleteRule { .cascade }
    static var lead: DeleteRule { .nullify }
}

/// A project may not lose its tasks; a task's deletion takes the projects it leads.
enum GuardedRules: LinkRules {
    static var project: DeleteRule { .deny }
    static var tags: DeleteRule { .cascade }
    static var parent: DeleteRule { .nullify }
    static var lead: DeleteRule { .cascade }
}

struct LinkedProject<Rules: LinkRules>: Persistable, Equatable {
    var id: Int
    var name: String
    var archived = false
    var lead: Link<LinkedTask<Rules>>?

    static var schema: Schema<LinkedProject> {
        Schema(
            name: "Project", primaryKey: \.id, indexes: [.on(\.name)],
            links: [.to(\.lead, onDelete: Rules.lead)])
    }
}

struct LinkedTask<Rules: LinkRules>: Persistable, Equatable {
    var id: Int
    var title: String
    var project: Link<LinkedProject<Rules>>?
    var tags: [Link<LinkedTag<Rules>>] = []
    var parent: Link<LinkedTask<Rules>>?

    static var schema: Schema<LinkedTask> {
        Schema(
            name: "Task", primaryKey: \.id,
            // A compound index over a link: removing the link must move its entry.
            indexes: [.on(\.title), .on(\.project, \.title, name: "projectTitle")],
            links: [
                .to(\.project, onDelete: Rules.project), .toMany(\.tags, onDelete: Rules.tags),
                .to(\.parent, onDelete: Rules.parent),
            ])
    }
}

struct LinkedTag<Rules: LinkRules>: Persistable, Equatable {
    var id: Int
    var name: String

    static var schema: Schema<LinkedTag> { Schema(name: "Tag", primaryKey: \.id, indexes: [.unique(\.name)]) }
}
