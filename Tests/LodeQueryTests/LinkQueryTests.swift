import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Queries across links: filters and sorts by linked objects' fields, planned over the linked type's
/// indexes and the link's inverse index, the inverse link as a query, and eager loading.
@Suite struct LinkQueryTests {
    struct Project: Persistable, Equatable {
        var id: Int
        var name: String
        var archived: Bool
        static let schema = Schema<Project>(primaryKey: \.id, indexes: [.on(\.archived), .on(\.name)])
    }
    struct Tag: Persistable, Equatable {
        var id: Int
        var name: String
        var urgent: Bool
        static let schema = Schema<Tag>(primaryKey: \.id)
    }
    struct Task: Persistable, Equatable {
        var id: Int
        var title: String
        var done: Bool
        var project: Link<Project>?
        var tags: [Link<Tag>] = []
        static let schema = Schema<Task>(
            primaryKey: \.id, indexes: [.on(\.done)], links: [.to(\.project), .toMany(\.tags)])
    }

    /// 40 projects (every tenth archived), 4 tags (one urgent), 2,000 tasks.
    func makeStore() throws -> Store {
        let store = try Store.temporary(types: [Project.self, Tag.self, Task.self])
        try store.write { tx in
            for id in 1...40 {
                try tx.insert(
                    Project(
                        id: id, name: "project \(String(format: "%02d", 41 - id))", archived: id % 10 == 0))
            }
            for id in 1...4 { try tx.insert(Tag(id: id, name: "tag \(id)", urgent: id == 4)) }
            for id in 1...2_000 {
                try tx.insert(
                    Task(
                        id: id, title: "task \(2_000 - id)", done: id % 3 == 0,
                        project: id % 50 == 0 ? nil : try Link(key: id % 40 + 1),
                        tags: id % 7 == 0
                            ? [try Link(key: 4), try Link(key: 1)] : [try Link(key: id % 3 + 1)]))
            }
        }
        return store
    }

    @Test func filterAcrossALinkFindsTheLinkedObjectsByTheirIndexAndReadsOnlyTheirLinkers() throws {
        let store = try makeStore()
        let archived = store.objects(Task.self).filter(
            \.project, matches: #Predicate<Project> { $0.archived })
        let all = try store.objects(Task.self).fetch()
        let projects = Dictionary(
            uniqueKeysWithValues: try store.objects(Project.self).fetch().map { ($0.id, $0) })
        let expected = all.filter { task in
            (try? task.project.map { try $0.key(as: Int.self) }).flatMap { $0 }.map { projects[$0]!.archived }
                ?? false
        }
        #expect(try archived.fetch() == expected)
        let plan = try archived.explain()
        #expect(plan.access == .linkLookup(link: "project", targets: 4))
        #expect(plan.linkedQueries["project"]??.access == .indexLookup(index: "archived", count: 1))
        #expect(plan.description.contains("across \"project\": linked objects by index lookup"))
        // Most projects are not archived: checking each task's project beats the inverse index.
        let active = store.objects(Task.self).filter(\.project, matches: #Predicate<Project> { !$0.archived })
        #expect(try active.explain().access == .fullScan)
        #expect(try active.count == all.filter { $0.project != nil }.count - expected.count)
        // Combined with a predicate of the type's own.
        let open = archived.filter(#Predicate { !$0.done })
        #expect(try open.fetch() == expected.filter { !$0.done })
    }

    @Test func filterAcrossAToManyLinkMatchesAnyLinkedObject() throws {
        let store = try makeStore()
        let urgent = store.objects(Task.self).filter(\.tags, anyMatches: #Predicate<Tag> { $0.urgent })
        let ids = try urgent.fetch().map(\.id)
        #expect(ids == (1...2_000).filter { $0 % 7 == 0 })
        #expect(try urgent.explain().access == .linkLookup(link: "tags", targets: 1))
    }

    @Test func theInverseLinkIsAQuery() throws {
        let store = try makeStore()
        let ofProject = store.objects(Task.self).linking(to: try Link(key: 3), via: \.project)
        #expect(try ofProject.fetch().map(\.id) == (1...2_000).filter { $0 % 50 != 0 && $0 % 40 + 1 == 3 })
        #expect(try ofProject.explain().access == .linkLookup(link: "project", targets: 1))
        #expect(try ofProject.explain().linkedQueries["project"] == .some(nil))
        let tagged = store.objects(Task.self).linking(to: try Link(key: 4), via: \.tags).sorted(by: \.title)
        #expect(
            try tagged.fetch().map(\.title)
                == (1...2_000).filter { $0 % 7 == 0 }.map { "task \(2_000 - $0)" }.sorted())
    }

    @Test func sortThroughALinkThenByOwnFields() throws {
        let store = try makeStore()
        let sorted = store.objects(Task.self)
            .filter(#Predicate { $0.id <= 200 })
            .sorted(through: \.project, by: \.name, then: [SortDescriptor(\.title)])
        let tasks = try sorted.fetch()
        let projects = Dictionary(
            uniqueKeysWithValues: try store.objects(Project.self).fetch().map { ($0.id, $0.name) })
        func name(_ task: Task) -> String? { task.project.map { projects[try! $0.key(as: Int.self)]! } }
        let expected = try store.objects(Task.self).filter(#Predicate { $0.id <= 200 }).fetch().sorted {
            a, b in
            switch (name(a), name(b)) {
            case (nil, nil): return a.title < b.title
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x != y ? x < y : a.title < b.title
            }
        }
        #expect(tasks.map(\.id) == expected.map(\.id))
        #expect(tasks.prefix(4).allSatisfy { $0.project == nil })
        let plan = try sorted.explain()
        #expect(plan.ordering == .inMemory && plan.sortedThroughLinks == ["project"])
        let descending = try store.objects(Task.self).filter(#Predicate { $0.id <= 200 })
            .sorted(through: \.project, by: \.name, ascending: false, then: [SortDescriptor(\.title)]).fetch()
        #expect(descending.suffix(4).allSatisfy { $0.project == nil })
        #expect(name(descending[0]) == expected.compactMap(name).last)
    }

    @Test func eagerLoadingReadsEachLinkedObjectOnce() throws {
        let store = try makeStore()
        let page = store.objects(Task.self).filter(#Predicate { $0.id > 1_900 })
        let withProjects = try page.fetch(including: \.project)
        #expect(withProjects.count == 100)
        for (task, project) in withProjects {
            #expect(project?.id == (try task.project?.key(as: Int.self)))
        }
        #expect(withProjects.filter { $0.linked == nil }.map(\.object.id) == [1_950, 2_000])
        let withTags = try page.fetch(including: \.tags)
        #expect(withTags.first { $0.object.id == 1_904 }?.linked.map(\.id) == [4, 1])
        // Read in the results' own version and transaction-bound results alike.
        try store.read { tx in
            let bound = try tx.objects(Task.self).filter(#Predicate { $0.id == 7 }).fetch(including: \.tags)
            #expect(bound.first?.linked.map(\.name) == ["tag 4", "tag 1"])
        }
    }
}
