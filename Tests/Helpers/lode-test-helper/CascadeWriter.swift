import Foundation
import Lode

/// The linked types of the cascade crash test: a project owns its tasks (cascade), subtasks go with
/// their parent (cascade), tags are loose (nullify).
struct CascadeProject: Persistable {
    var id: Int
    var name: String
    static let schema = Schema<CascadeProject>(name: "Project", primaryKey: \.id)
}

struct CascadeTask: Persistable {
    var id: Int
    var title: String
    var project: Link<CascadeProject>?
    var tags: [Link<CascadeTag>]
    var parent: Link<CascadeTask>?
    static let schema = Schema<CascadeTask>(
        name: "Task", primaryKey: \.id, indexes: [.on(\.project, \.title, name: "projectTitle")],
        links: [
            .to(\.project, onDelete: .cascade), .toMany(\.tags, onDelete: .nullify),
            .to(\.parent, onDelete: .cascade),
        ])
}

struct CascadeTag: Persistable {
    var id: Int
    var name: String
    static let schema = Schema<CascadeTag>(name: "Tag", primaryKey: \.id, indexes: [.unique(\.name)])
}

/// How many tasks each project of the cascade writer has.
let cascadeTasksPerProject = 400

/// Builds project after project, each with its tasks (every third a subtask of the one before) in
/// one commit, and deletes the one before it — a cascade over all its tasks — in the next; every
/// fourth round also deletes a tag (nullified in a fifth of the tasks) and puts it back. Prints
/// "built N", "deleted N", "untagged N" after each commit returned and "cascading N" before the
/// cascade's commit begins; runs until it is killed.
func cascadeWriter(_ path: String) throws {
    let store = try Store(
        at: URL(fileURLWithPath: path), types: [CascadeProject.self, CascadeTask.self, CascadeTag.self])
    var round = (try store.read { try $0.objects(CascadeProject.self).fetch().map(\.id).max() } ?? 0) + 1
    while true {
        try store.write { tx in
            for tag in 1...5 { try tx.upsert(CascadeTag(id: tag, name: "tag\(tag)")) }
            try tx.insert(CascadeProject(id: round, name: "project \(round)"))
            for position in 0..<cascadeTasksPerProject {
                let id = round * 100_000 + position
                try tx.insert(
                    CascadeTask(
                        id: id, title: "task \(position)", project: try Link(key: round),
                        tags: [try Link(key: position % 5 + 1)],
                        parent: position % 3 == 2 ? try Link(key: id - 1) : nil))
            }
        }
        print("built \(round)")
        print("cascading \(round - 1)")
        fflush(nil)
        try store.write { tx in
            for old in try tx.objects(CascadeProject.self).fetch() where old.id < round {
                _ = try tx.delete(CascadeProject.self, key: old.id)
            }
        }
        print("deleted \(round - 1)")
        fflush(nil)
        if round % 4 == 0 {
            try store.write { tx in _ = try tx.delete(CascadeTag.self, key: round % 5 + 1) }
            print("untagged \(round)")
            fflush(nil)
        }
        round += 1
    }
}
