import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Long random sequences of writes over three linked types — a to-one link (`Task.project`), a
/// to-many one (`Task.tags`) and a cycle (`Project.lead` → `Task` → `Project`, and `Task.parent` →
/// `Task`) — under every delete rule, each commit compared with an in-memory model of the records,
/// the inverse links, the cascades and the change log.
@Suite struct LinkRandomTests {
    @Test func nullify() throws { try run(NullifyRules.self, seed: 0x11) }
    @Test func cascade() throws { try run(CascadeRules.self, seed: 0x22) }
    @Test func deny() throws { try run(DenyRules.self, seed: 0x33) }
    @Test func owning() throws { try run(OwningRules.self, seed: 0x44) }
    @Test func guarded() throws { try run(GuardedRules.self, seed: 0x55) }

    /// The graph as plain values.
    struct Model: Equatable {
        struct Project: Equatable {
            var name: String
            var lead: Int?
        }
        struct Task: Equatable {
            var title: String
            var project: Int?
            var tags: [Int]
            var parent: Int?
        }
        var projects: [Int: Project] = [:]
        var tasks: [Int: Task] = [:]
        var tags: [Int: String] = [:]

        enum Kind: String, Hashable {
            case project = "Project"
            case task = "Task"
            case tag = "Tag"
        }

        struct Ref: Hashable {
            var kind: Kind
            var id: Int
        }

        struct Denied: Error {}

        func exists(_ ref: Ref) -> Bool {
            switch ref.kind {
            case .project: projects[ref.id] != nil
            case .task: tasks[ref.id] != nil
            case .tag: tags[ref.id] != nil
            }
        }

        /// The links into `ref`: the linking object, the link's field and its rule.
        func inbound<R: LinkRules>(_ ref: Ref, rules: R.Type) -> [(
            source: Ref, field: String, rule: DeleteRule
        )] {
            var found: [(Ref, String, DeleteRule)] = []
            switch ref.kind {
            case .project:
                for (id, task) in tasks where task.project == ref.id {
                    found.append((Ref(kind: .task, id: id), "project", R.project))
                }
            case .task:
                for (id, project) in projects where project.lead == ref.id {
                    found.append((Ref(kind: .project, id: id), "lead", R.lead))
                }
                for (id, task) in tasks where task.parent == ref.id {
                    found.append((Ref(kind: .task, id: id), "parent", R.parent))
                }
            case .tag:
                for (id, task) in tasks where task.tags.contains(ref.id) {
                    found.append((Ref(kind: .task, id: id), "tags", R.tags))
                }
            }
            return found
        }

        /// Deletes `roots` (and with `whole`, every object of that kind) by the rules, or throws
        /// having changed nothing.
        mutating func delete<R: LinkRules>(_ roots: [Ref], whole: Kind? = nil, rules: R.Type) throws {
            var deleting = Set(roots)
            var queue = roots
            if let whole {
                let all: [Int] =
                    switch whole {
                    case .project: Array(projects.keys)
                    case .task: Array(tasks.keys)
                    case .tag: Array(tags.keys)
                    }
                for id in all where deleting.insert(Ref(kind: whole, id: id)).inserted {
                    queue.append(Ref(kind: whole, id: id))
                }
            }
            var nullify: [(source: Ref, field: String, target: Int)] = []
            var denials: [Ref] = []
            var next = 0
            while next < queue.count {
                let victim = queue[next]
                next += 1
                for (source, field, rule) in inbound(victim, rules: R.self) {
                    switch rule {
                    case .cascade: if deleting.insert(source).inserted { queue.append(source) }
                    case .nullify: nullify.append((source, field, victim.id))
                    case .deny: denials.append(source)
                    }
                }
            }
            if denials.contains(where: { !deleting.contains($0) }) { throw Denied() }
            for (source, field, target) in nullify where !deleting.contains(source) {
                switch field {
                case "project": if tasks[source.id]?.project == target { tasks[source.id]?.project = nil }
                case "tags": tasks[source.id]?.tags.removeAll { $0 == target }
                case "parent": if tasks[source.id]?.parent == target { tasks[source.id]?.parent = nil }
                default: if projects[source.id]?.lead == target { projects[source.id]?.lead = nil }
                }
            }
            for ref in deleting {
                switch ref.kind {
                case .project: projects[ref.id] = nil
                case .task: tasks[ref.id] = nil
                case .tag: tags[ref.id] = nil
                }
            }
        }

        /// Per object, what a commit from `self` to `after` did to it.
        func changes(to after: Model) -> [String: String] {
            var result: [String: String] = [:]
            func compare<V: Equatable>(_ kind: Kind, _ old: [Int: V], _ new: [Int: V]) {
                for id in Set(old.keys).union(new.keys) {
                    switch (old[id], new[id]) {
                    case (nil, .some): result["\(kind.rawValue) \(id)"] = "insert"
                    case (.some, nil): result["\(kind.rawValue) \(id)"] = "delete"
                    case (let a?, let b?) where a != b: result["\(kind.rawValue) \(id)"] = "update"
                    default: break
                    }
                }
            }
            compare(.project, projects, after.projects)
            compare(.task, tasks, after.tasks)
            compare(.tag, tags, after.tags)
            return result
        }
    }

    func run<R: LinkRules>(_ rules: R.Type, seed: UInt64, commits: Int = 160) throws {
        typealias Project = LinkedProject<R>
        typealias Task = LinkedTask<R>
        typealias Tag = LinkedTag<R>
        let store = try Store.temporary(types: [Project.self, Task.self, Tag.self])
        var model = Model()
        var rng = SeededGenerator(seed: seed)
        var denied = 0
        var cascaded = 0

        func pick<V>(_ dictionary: [Int: V], _ rng: inout SeededGenerator) -> Int? {
            dictionary.keys.sorted().randomElement(using: &rng)
        }

        for commit in 0..<commits {
            let before = model
            let version = try store.read { $0.version }
            try store.write { (tx: WriteTransaction) throws in
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    switch Int.random(in: 0..<100, using: &rng) {
                    case 0..<14:
                        let id = Int.random(in: 1...8, using: &rng)
                        let lead = Bool.random(using: &rng) ? pick(model.tasks, &rng) : nil
                        let name = "p\(Int.random(in: 0..<5, using: &rng))"
                        try tx.upsert(Project(id: id, name: name, lead: try lead.map { try Link(key: $0) }))
                        model.projects[id] = .init(name: name, lead: lead)
                    case 14..<46:
                        let id = Int.random(in: 1...30, using: &rng)
                        let project =
                            Int.random(in: 0..<4, using: &rng) > 0 ? pick(model.projects, &rng) : nil
                        let tags = (0..<Int.random(in: 0...3, using: &rng)).compactMap { _ in
                            pick(model.tags, &rng)
                        }
                        // A task may be its own parent: a cycle of one.
                        let parent = Bool.random(using: &rng) ? (pick(model.tasks, &rng) ?? id) : nil
                        let title = "t\(Int.random(in: 0..<6, using: &rng))"
                        try tx.upsert(
                            Task(
                                id: id, title: title, project: try project.map { try Link(key: $0) },
                                tags: try tags.map { try Link(key: $0) },
                                parent: try parent.map { try Link(key: $0) }))
                        model.tasks[id] = .init(title: title, project: project, tags: tags, parent: parent)
                    case 46..<54:
                        let id = Int.random(in: 1...6, using: &rng)
                        try tx.upsert(Tag(id: id, name: "tag\(id)"))
                        model.tags[id] = "tag\(id)"
                    case 54..<64:
                        // Re-link an existing task.
                        guard let id = pick(model.tasks, &rng) else { continue }
                        let project = pick(model.projects, &rng)
                        try tx.update(Task.self, key: id) {
                            $0.project = try project.map { try Link(key: $0) }
                        }
                        model.tasks[id]?.project = project
                    default:
                        let kind: Model.Kind = [.project, .task, .task, .tag].randomElement(using: &rng)!
                        let whole = Int.random(in: 0..<25, using: &rng) == 0
                        let id = Int.random(in: 1...(kind == .task ? 30 : 8), using: &rng)
                        let ref = Model.Ref(kind: kind, id: id)
                        var expected = model
                        var expectDenied = false
                        do {
                            try expected.delete(
                                whole || !model.exists(ref) ? [] : [ref], whole: whole ? kind : nil,
                                rules: R.self)
                        } catch {
                            expectDenied = true
                        }
                        do {
                            switch (kind, whole) {
                            case (.project, false): _ = try tx.delete(Project.self, key: id)
                            case (.task, false): _ = try tx.delete(Task.self, key: id)
                            case (.tag, false): _ = try tx.delete(Tag.self, key: id)
                            case (.project, true): _ = try tx.deleteAll(Project.self)
                            case (.task, true): _ = try tx.deleteAll(Task.self)
                            case (.tag, true): _ = try tx.deleteAll(Tag.self)
                            }
                            #expect(
                                !expectDenied,
                                "commit \(commit): the delete of \(ref) (whole: \(whole)) was expected to be denied"
                            )
                            if !expectDenied {
                                cascaded += model.changes(to: expected).values.filter { $0 == "delete" }.count
                                model = expected
                            }
                        } catch LodeError.deleteDenied {
                            #expect(
                                expectDenied,
                                "commit \(commit): the delete of \(ref) (whole: \(whole)) was denied")
                            denied += 1
                        }
                    }
                }
            }
            try store.read { (tx: Transaction) throws in
                try check(model, in: tx, rules: R.self, commit: commit)
                // The change log lists what the model says happened, each cascaded deletion a deletion.
                let logged = try tx.commits(after: version).commits.flatMap(\.changes)
                let expected = before.changes(to: model)
                let clears = Set(logged.filter { $0.kind == .clear }.map(\.type))
                for change in logged where change.kind != .clear {
                    let name = "\(change.type) \(change.keyDescription)"
                    if clears.contains(change.type) && expected[name] == "delete" { continue }
                    #expect(
                        expected[name] == change.operation
                            || (change.operation == "update" && expected[name] == nil),
                        "commit \(commit): \(name) logged as \(change.operation), expected \(expected[name] ?? "nothing")"
                    )
                }
                for (name, operation) in expected {
                    let type = String(name.split(separator: " ")[0])
                    if operation == "delete" && clears.contains(type) { continue }
                    #expect(
                        logged.contains {
                            "\($0.type) \($0.keyDescription)" == name && $0.operation == operation
                        },
                        "commit \(commit): \(name) \(operation) is not in the change log")
                }
            }
        }
        // The sequences reach what they are meant to test.
        if R.self != DenyRules.self { #expect(cascaded > 20) }
        if [R.project, R.tags, R.parent, R.lead].contains(.deny) { #expect(denied > 5) }
    }

    /// Compares the store with `model`: every object, every inverse link, and the integrity check.
    func check<R: LinkRules>(_ model: Model, in tx: Transaction, rules: R.Type, commit: Int) throws {
        typealias Project = LinkedProject<R>
        typealias Task = LinkedTask<R>
        typealias Tag = LinkedTag<R>
        func id<T>(_ link: Link<T>?) throws -> Int? { try link?.key(as: Int.self) }
        let projects = try tx.objects(Project.self).fetch()
        #expect(
            try Dictionary(
                uniqueKeysWithValues: projects.map {
                    ($0.id, Model.Project(name: $0.name, lead: try id($0.lead)))
                })
                == model.projects, "commit \(commit): projects")
        let tasks = try tx.objects(Task.self).fetch()
        #expect(
            try Dictionary(
                uniqueKeysWithValues: tasks.map {
                    (
                        $0.id,
                        Model.Task(
                            title: $0.title, project: try id($0.project),
                            tags: try $0.tags.map { try $0.key(as: Int.self) },
                            parent: try id($0.parent))
                    )
                }) == model.tasks, "commit \(commit): tasks")
        #expect(
            Dictionary(uniqueKeysWithValues: try tx.objects(Tag.self).fetch().map { ($0.id, $0.name) })
                == model.tags,
            "commit \(commit): tags")
        for target in 1...30 {
            let viaProject = try tx.objects(
                Task.self, linkingTo: try Link<Project>(key: target), via: \.project
            ).map(\.id)
            #expect(
                viaProject == model.tasks.filter { $0.value.project == target }.keys.sorted(),
                "commit \(commit): project \(target)")
            let viaTag = try tx.objects(Task.self, linkingTo: try Link<Tag>(key: target), via: \.tags).map(
                \.id)
            #expect(
                viaTag == model.tasks.filter { $0.value.tags.contains(target) }.keys.sorted(),
                "commit \(commit): tag \(target)")
            let viaParent = try tx.objects(Task.self, linkingTo: try Link<Task>(key: target), via: \.parent)
                .map(\.id)
            #expect(
                viaParent == model.tasks.filter { $0.value.parent == target }.keys.sorted(),
                "commit \(commit): parent \(target)")
            let viaLead = try tx.objects(Project.self, linkingTo: try Link<Task>(key: target), via: \.lead)
                .map(\.id)
            #expect(
                viaLead == model.projects.filter { $0.value.lead == target }.keys.sorted(),
                "commit \(commit): lead \(target)")
        }
        let problems = try tx.checkIntegrity().problems
        #expect(problems.isEmpty, "commit \(commit): \(problems)")
    }
}
