import Foundation
import Lode
import LodeStorage
import ModelStorage
import Testing

@testable import LodeTestSupport

/// The worked example of the *Relationships* article (and the README's links section), run: each
/// block of the article is a paragraph of this file (`DocumentationExamplesTests` checks it).
enum RelationshipsArticle {
    struct Project: Persistable {
        var id: Int
        var name: String
        var archived = false
        static let schema = Schema<Project>(primaryKey: \.id, indexes: [.on(\.archived)])
    }

    struct Tag: Persistable {
        var id: Int
        var name: String
        static let schema = Schema<Tag>(primaryKey: \.id)
    }

    struct Task: Persistable {
        var id: Int
        var title: String
        var project: Link<Project>?
        var tags: [Link<Tag>] = []
        static let schema = Schema<Task>(
            primaryKey: \.id, indexes: [.on(\.title)],
            links: [.to(\.project, onDelete: .cascade), .toMany(\.tags, onDelete: .nullify)])
    }

    struct Invoice: Persistable {
        var id: Int
        var project: Link<Project>?
        static let schema = Schema<Invoice>(primaryKey: \.id, links: [.to(\.project, onDelete: .deny)])
    }

    /// Runs the article's example, returning what it printed.
    static func run() throws -> [String] {
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }

        let store = try Store.temporary(types: [Project.self, Tag.self, Task.self, Invoice.self])
        try store.write { tx in
            let garden = Project(id: 1, name: "Garden")
            let urgent = Tag(id: 1, name: "urgent")
            try tx.insert(garden)
            try tx.insert(Project(id: 2, name: "House"))
            try tx.insert(urgent)
            try tx.insert(
                Task(id: 1, title: "Plant tulips", project: try Link(garden), tags: [try Link(urgent)]))
            try tx.insert(Task(id: 2, title: "Mow the lawn", project: try Link(garden)))
            try tx.insert(Task(id: 3, title: "Fix the tap", project: try Link(key: 2)))
        }

        try store.read { tx in
            let task = try tx.object(Task.self, key: 1)!
            let project = try tx.resolve(task.project!)
            let tags = try tx.objects(linkedBy: task.tags)
            let siblings = try tx.objects(Task.self, linkingTo: task.project!, via: \.project)
            print(project.name, tags.map(\.name), siblings.map(\.title))
        }

        let active = store.objects(Task.self)
            .filter(\.project, matches: #Predicate<Project> { !$0.archived })
            .sorted(through: \.project, by: \.name, then: [SortDescriptor(\.title)])
        for (task, project) in try active.fetch(including: \.project) {
            print(project?.name ?? "-", task.title)
        }
        print(try active.explain())

        let byProject = store.objects(Task.self).sorted(by: \.title).sectioned(through: \.project, by: \.name)
        let live = try byProject.live()
        try store.write { tx in try tx.update(Project.self, key: 2) { $0.name = "Home" } }
        let change = try live.refresh()!
        print(try live.sections.allKeys, change.sectionDeletions, change.sectionInsertions)

        let storage = LiveResultsStorage(store: store)
        try storage.setSections(from: byProject)

        try store.write { tx in
            _ = try tx.delete(Tag.self, key: 1)
            _ = try tx.delete(Project.self, key: 1)
        }
        print(try store.objects(Task.self).fetch().map(\.title))

        try store.write { tx in try tx.insert(Invoice(id: 1, project: try Link(key: 2))) }
        do {
            try store.write { tx in _ = try tx.delete(Project.self, key: 2) }
        } catch LodeError.deleteDenied(let type, let key, let linkedFrom) {
            print("\(type) \(key) is still linked from \(linkedFrom)")
        }
        print(try store.objects(Project.self).fetch().map(\.name), try store.objects(Task.self).count)
        _ = storage
        return printed
    }
}

@Suite struct RelationshipsArticleTests {
    @Test func theWorkedExampleRunsAndPrintsWhatTheArticleSays() throws {
        let printed = try RelationshipsArticle.run()
        #expect(printed[0] == #"Garden ["urgent"] ["Plant tulips", "Mow the lawn"]"#)
        #expect(Array(printed[1...3]) == ["Garden Mow the lawn", "Garden Plant tulips", "House Fix the tap"])
        #expect(printed[4].contains("full scan") && printed[4].contains("across \"project\""))
        #expect(printed[5] == #"[Optional("Garden"), Optional("Home")] [1] [1]"#)
        // The tag is nullified, the garden's two tasks go with it; the house's task stays.
        #expect(printed[printed.count - 3] == #"["Fix the tap"]"#)
        // The invoice's link denies the delete of its project: nothing is deleted.
        #expect(printed[printed.count - 2] == "Project 2 is still linked from [Invoice 1]")
        #expect(printed.last == #"["Home"] 1"#)
    }
}
