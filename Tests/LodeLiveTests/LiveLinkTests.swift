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

/// Live results across links, checked on the list mirror against a fresh read after every commit of
/// long random sequences: projects renamed and archived, tasks re-linked, projects deleted (their
/// tasks cascade), tags renamed and deleted (nullified). The rows carry the linked value they show,
/// so a row whose linked object changed must be reported modified for the mirror to match.
@Suite struct LiveLinkTests {
    typealias Project = LinkedProject<OwningRules>
    typealias Task = LinkedTask<OwningRules>
    typealias Tag = LinkedTag<OwningRules>

    /// A row as a list shows it: the task and the linked value next to it.
    struct Row: Equatable, CustomStringConvertible {
        var task: Task
        var shown: String
        var description: String { "#\(task.id) \(task.title) [\(shown)]" }
    }

    /// One live query and how to read it afresh, as sections of rows.
    struct Case {
        var name: String
        var advance: () throws -> (update: StorageUpdate, full: Bool)?
        var live: () throws -> [[Row]]
        var fresh: () throws -> [[Row]]
    }

    static func projectRows(_ results: Results<Task>) throws -> [Row] {
        try results.fetch(including: \.project).map { Row(task: $0.object, shown: $0.linked?.name ?? "-") }
    }

    static func tagRows(_ results: Results<Task>) throws -> [Row] {
        try results.fetch(including: \.tags).map {
            Row(task: $0.object, shown: $0.linked.map(\.name).joined(separator: ","))
        }
    }

    static func plain(
        _ name: String, _ query: Results<Task>, rows: @escaping (Results<Task>) throws -> [Row] = projectRows
    ) throws -> Case {
        let live = try query.live()
        let fresh = { try [rows(query.reevaluated())] }
        return Case(
            name: name,
            advance: {
                guard let change = try live.refresh() else { return nil }
                let new = try fresh()[0]
                return (change.storageUpdate { new[$0] }, change.wasFullyReevaluated)
            },
            live: { try [rows(live.results)] }, fresh: fresh)
    }

    static func sectioned(_ name: String, _ query: SectionedResults<String?, Task>) throws -> Case {
        let live = try query.live()
        func rows(_ sections: SectionedResults<String?, Task>) throws -> [[Row]] {
            try sections.fetchSections().map { try projectRows($0.objects) }
        }
        let fresh = { try rows(query.reevaluated()) }
        return Case(
            name: name,
            advance: {
                guard let change = try live.refresh() else { return nil }
                let new = try fresh()
                return (change.storageUpdate { new[$0.section][$0.item] }, change.wasFullyReevaluated)
            },
            live: { try rows(live.sections) }, fresh: fresh)
    }

    @Test func liveResultsAcrossLinksFollowRandomCommitsExactly() throws {
        var rng = SeededGenerator(seed: 0x71e)
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .noSync),
            types: [Project.self, Task.self, Tag.self])
        let names = ["alpha", "beta", "gamma", "delta"]
        try store.write { tx in
            for id in 1...6 { try tx.insert(Project(id: id, name: names[id % names.count])) }
            for id in 1...4 { try tx.insert(Tag(id: id, name: "tag\(id)")) }
            for id in 1...60 {
                try tx.insert(
                    Task(
                        id: id, title: "t\(id % 9)", project: id % 11 == 0 ? nil : try Link(key: id % 6 + 1),
                        tags: [try Link(key: id % 4 + 1)]))
            }
        }
        let tasks = store.objects(Task.self)
        let cases = [
            try Self.plain(
                "sorted through project",
                tasks.sorted(through: \.project, by: \.name, then: [SortDescriptor(\.title)])),
            try Self.plain(
                "active projects",
                tasks.filter(\.project, matches: #Predicate<Project> { !$0.archived }).sorted(by: \.title)),
            try Self.plain(
                "tagged tag1",
                tasks.filter(\.tags, anyMatches: #Predicate<Tag> { $0.name == "tag1" }).sorted(by: \.title),
                rows: Self.tagRows),
            try Self.plain(
                "project 2's tasks", tasks.linking(to: try Link(key: 2), via: \.project).sorted(by: \.title)),
            try Self.sectioned(
                "sectioned by project name",
                tasks.sorted(by: \.title).sectioned(through: \.project, by: \.name)),
            try Self.sectioned(
                "active, sectioned by project name",
                tasks.filter(\.project, matches: #Predicate<Project> { !$0.archived }).sorted(by: \.title)
                    .sectioned(through: \.project, by: \.name)),
        ]
        var previous = try cases.map { try $0.live() }
        for (index, test) in cases.enumerated() {
            #expect(previous[index] == (try test.fresh()), "\(test.name)")
        }
        var nextTask = 61
        var nextProject = 7
        var reloadsThroughLinks = 0
        var fullReevaluations = 0
        for round in 0..<150 {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let projects = try tx.objects(Project.self).fetch().map(\.id)
                    let taskIDs = try tx.objects(Task.self).fetch().map(\.id)
                    switch Int.random(in: 0..<100, using: &rng) {
                    case 0..<25:
                        // Rename a project: its rows move, its section is renamed (or merges).
                        guard let id = projects.randomElement(using: &rng) else { continue }
                        try tx.update(Project.self, key: id) { $0.name = names.randomElement(using: &rng)! }
                    case 25..<35:
                        guard let id = projects.randomElement(using: &rng) else { continue }
                        try tx.update(Project.self, key: id) { $0.archived.toggle() }
                    case 35..<55:
                        guard let id = taskIDs.randomElement(using: &rng) else { continue }
                        let project = Bool.random(using: &rng) ? projects.randomElement(using: &rng) : nil
                        try tx.update(Task.self, key: id) {
                            $0.project = try project.map { try Link(key: $0) }
                        }
                    case 55..<65:
                        try tx.insert(
                            Task(
                                id: nextTask, title: "t\(nextTask % 9)",
                                project: try projects.randomElement(using: &rng).map { try Link(key: $0) },
                                tags: [try Link(key: Int.random(in: 1...4, using: &rng))]))
                        nextTask += 1
                    case 65..<72:
                        // A cascade: the project's tasks go with it.
                        guard let id = projects.randomElement(using: &rng) else { continue }
                        _ = try tx.delete(Project.self, key: id)
                    case 72..<80:
                        try tx.insert(Project(id: nextProject, name: names.randomElement(using: &rng)!))
                        nextProject += 1
                    case 80..<90:
                        let tag = Int.random(in: 1...4, using: &rng)
                        try tx.upsert(Tag(id: tag, name: "tag\(Int.random(in: 1...5, using: &rng))-\(round)"))
                    case 90..<95:
                        // Tags are nullified: rows leave the tag's list.
                        _ = try tx.delete(Tag.self, key: Int.random(in: 1...4, using: &rng))
                    default:
                        guard let id = taskIDs.randomElement(using: &rng) else { continue }
                        try tx.update(Task.self, key: id) { $0.title += "!" }
                    }
                }
            }
            for (index, test) in cases.enumerated() {
                guard let (update, full) = try test.advance() else { continue }
                if full { fullReevaluations += 1 }
                let fresh = try test.fresh()
                #expect(try test.live() == fresh, "round \(round), \(test.name)")
                var mirror = ListMirror(sections: previous[index])
                do {
                    try mirror.apply(update, dataSource: fresh)
                    #expect(mirror.sections == fresh, "round \(round), \(test.name): \(update)")
                } catch {
                    Issue.record("round \(round), \(test.name): \(error) for \(update)")
                }
                reloadsThroughLinks += update.objectChanges.filter { $0.0 == .update }.count
                previous[index] = fresh
            }
        }
        #expect(reloadsThroughLinks > 50)
        #expect(fullReevaluations == 0, "every commit was followed incrementally")
    }

    /// An observer of sections keyed across a link, on its own queue, while another thread renames
    /// projects and re-links tasks: it reaches the last commit with exactly what a fresh read shows.
    @Test func anObserverOfSectionsAcrossALinkReachesTheLastCommit() throws {
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .noSync),
            types: [Project.self, Task.self, Tag.self])
        try store.write { tx in
            for id in 1...4 { try tx.insert(Project(id: id, name: "p\(id)")) }
            for id in 1...40 {
                try tx.insert(Task(id: id, title: "t\(id)", project: try Link(key: id % 4 + 1)))
            }
        }
        let sectioned = store.objects(Task.self).sorted(by: \.title).sectioned(through: \.project, by: \.name)
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var sections: [String: [Int]] = [:]
            var errors: [String] = []
        }
        let seen = Seen()
        let token = sectioned.observe { change in
            switch change {
            case .initial(let sections), .update(let sections, _):
                let read = (try? sections.fetchSections()) ?? []
                let shown = Dictionary(
                    uniqueKeysWithValues: read.map {
                        ($0.key ?? "-", ((try? $0.objects.fetch()) ?? []).map(\.id))
                    })
                seen.lock.withLock { seen.sections = shown }
            case .error(let error):
                seen.lock.withLock { seen.errors.append("\(error)") }
            }
        }
        defer { token.cancel() }
        let writer = Thread {
            var rng = SeededGenerator(seed: 0x0b5)
            for round in 0..<60 {
                try? store.write { tx in
                    try tx.update(Project.self, key: Int.random(in: 1...4, using: &rng)) {
                        $0.name = "p\(round % 7)"
                    }
                    try tx.update(Task.self, key: Int.random(in: 1...40, using: &rng)) {
                        $0.project = try Link(key: Int.random(in: 1...4, using: &rng))
                    }
                }
            }
        }
        writer.start()
        func fresh() throws -> [String: [Int]] {
            Dictionary(
                uniqueKeysWithValues: try sectioned.reevaluated().fetchSections().map {
                    ($0.key ?? "-", try $0.objects.fetch().map(\.id))
                })
        }
        let deadline = Date().addingTimeInterval(30)
        var matched = false
        while Date() < deadline {
            if writer.isFinished, seen.lock.withLock({ seen.sections }) == (try fresh()) {
                matched = true
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let stored = try fresh()
        #expect(matched, "the observer shows \(seen.lock.withLock { seen.sections }), the store \(stored)")
        #expect(seen.lock.withLock { seen.errors }.isEmpty)
    }

    /// Key-path filtered observation through a link: with `.through(\.project, \Project.name)`, a
    /// project's rename reloads its tasks' rows and its other changes do not; without linked key
    /// paths, a link the rows do not depend on is not followed at all.
    @Test func linkedKeyPathsChooseWhichLinkedChangesReloadRows() throws {
        let store = try Store.temporary(types: [Project.self, Task.self, Tag.self])
        try store.write { tx in
            try tx.insert(Project(id: 1, name: "a"))
            try tx.insert(Project(id: 2, name: "b"))
            for id in 1...4 {
                try tx.insert(Task(id: id, title: "t\(id)", project: try Link(key: id % 2 + 1)))
            }
        }
        let tasks = store.objects(Task.self).sorted(by: \.title)
        let throughName = try tasks.live(
            keyPaths: [\.title], linkedKeyPaths: [.through(\.project, \Project.name)])
        let own = try tasks.live(keyPaths: [\.title])
        try store.write { tx in try tx.update(Project.self, key: 2) { $0.name = "c" } }
        let renamed = try #require(try throughName.refresh())
        #expect(renamed.modifications.map(\.old) == [0, 2], "tasks 1 and 3 link to project 2")
        #expect(renamed.insertions.isEmpty && renamed.deletions.isEmpty && renamed.moves.isEmpty)
        #expect(
            try own.refresh()?.isEmpty ?? true, "no linked key path: the rename is not a change of these rows"
        )
        try store.write { tx in try tx.update(Project.self, key: 2) { $0.archived = true } }
        #expect(try throughName.refresh()?.isEmpty ?? true, "archived is not an observed path")
        try store.write { tx in try tx.update(Task.self, key: 2) { $0.title = "t2!" } }
        #expect(try throughName.refresh()?.modifications.map(\.old) == [1])
    }

    @Test func renamingAProjectMovesItsSectionAndReloadsItsRowsInOneChange() throws {
        let store = try Store.temporary(types: [Project.self, Task.self, Tag.self])
        try store.write { tx in
            try tx.insert(Project(id: 1, name: "b"))
            try tx.insert(Project(id: 2, name: "c"))
            for id in 1...4 {
                try tx.insert(Task(id: id, title: "t\(id)", project: try Link(key: id % 2 + 1)))
            }
        }
        let live = try store.objects(Task.self).sorted(by: \.title).sectioned(through: \.project, by: \.name)
            .live()
        #expect(try live.sections.allKeys == ["b", "c"])
        try store.write { tx in try tx.update(Project.self, key: 2) { $0.name = "a" } }
        let change = try #require(try live.refresh())
        #expect(try live.sections.allKeys == ["a", "b"])
        #expect(try live.sections[0].objects.fetch().map(\.id) == [1, 3])
        // The rows of project 2 left section "c" for section "a": the old section is deleted and the
        // new one inserted with them (a table cannot move rows out of a deleted section).
        #expect(change.sectionDeletions == [1] && change.sectionInsertions == [0])
        #expect(change.moves.isEmpty && change.deletions.isEmpty && change.insertions.isEmpty)
        #expect(!change.wasFullyReevaluated)
    }
}
