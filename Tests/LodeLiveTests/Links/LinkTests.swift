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

@Suite struct LinkTests {
    typealias Project = LinkedProject<OwningRules>
    typealias Task = LinkedTask<OwningRules>
    typealias Tag = LinkedTag<OwningRules>

    static let types: [any Persistable.Type] = [Project.self, Task.self, Tag.self]

    @Test func aLinkIsStoredAsTheTargetsKeyAndReadBackTyped() throws {
        let store = try Store.temporary(types: Self.types)
        let project = Project(id: 7, name: "Garden")
        let red = Tag(id: 1, name: "red")
        let blue = Tag(id: 2, name: "blue")
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(project)
            try tx.insert(red)
            try tx.insert(blue)
            try tx.insert(
                Task(id: 1, title: "dig", project: try Link(project), tags: [try Link(blue), try Link(red)]))
        }
        let raw = try store.read { tx in try tx.storedRecords(of: "Task").first!.bytes }
        let record = try CBORValue(decoding: raw)
        #expect(record["project"] == .unsigned(7))
        #expect(record["tags"] == .array([.unsigned(2), .unsigned(1)]))
        try store.read { (tx: Transaction) throws in
            let task = try #require(try tx.object(Task.self, key: 1))
            #expect(task.project == (try Link<Project>(key: 7)))
            #expect(try task.project?.key(as: Int.self) == 7)
            #expect(try tx.resolve(task.project!) == project)
            #expect(try tx.objects(linkedBy: task.tags).map(\.name) == ["blue", "red"])
            #expect(
                task.project?.objectID
                    == ObjectID(typeName: "Project", primaryKey: try KeyEncoder().encode(7)))
        }
    }

    /// Links read from a record take their key bytes in place for the usual key kinds: the same
    /// bytes the key encoding of the value gives, for every kind (and through the general path for
    /// the others).
    @Test func linkKeysReadFromRecordsAreTheKeyEncodingOfTheirValues() throws {
        struct Holder<Key: Codable>: Codable {
            var link: Link<Project>
            var key: Key
        }
        func check<Key: Codable>(_ key: Key) throws {
            let link = try Link<Project>(key: key)
            let decoded = try CBORDecoder().decode(
                Holder<Key>.self, from: try CBOREncoder().encode(Holder(link: link, key: key)))
            #expect(decoded.link.primaryKey == (try KeyEncoder().encode(key)), "\(key)")
            #expect(decoded.link == link && decoded.link.key == link.key, "\(key)")
        }
        try check(0)
        try check(-1)
        try check(Int64.min)
        try check(Int64.max)
        try check(UInt64.max)
        try check("")
        try check("Zoë")
        try check("e\u{301}")  // decomposed: keys are NFC
        try check(UUID())
        try check(3.5)
        try check(Date(timeIntervalSince1970: 1_000))
        try check(["a", "b"])
        // Integers and strings, read without the generic encoder: the same bytes as the Swift key's.
        var rng = SeededGenerator(seed: 0x11_4e)
        let scalars: [Unicode.Scalar] = ["a", "Z", "é", "\u{301}", "日", "🙂", "\u{0}"]
        for _ in 0..<200 {
            try check(Int.random(in: Int.min...Int.max, using: &rng))
            try check(Int.random(in: -300...300, using: &rng))
            try check(
                String(
                    String.UnicodeScalarView(
                        (0..<Int.random(in: 0...6, using: &rng)).map { _ in
                            scalars.randomElement(using: &rng)!
                        })))
        }
    }

    @Test func aLinkRoundTripsThroughJSONAsTheKeysValue() throws {
        let task = Task(id: 1, title: "a", project: try Link(key: 7), tags: [try Link(key: 3)])
        let json = try JSONEncoder().encode(task)
        #expect(String(decoding: json, as: UTF8.self).contains("\"project\":7"))
        #expect(try JSONDecoder().decode(Task.self, from: json) == task)
    }

    @Test func aLinkToAMissingObjectResolvesToNothingOrATypedError() throws {
        let store = try Store.temporary(types: Self.types)
        try store.write { tx in try tx.insert(Task(id: 1, title: "orphan", project: try Link(key: 99))) }
        try store.read { (tx: Transaction) throws in
            let task = try #require(try tx.object(Task.self, key: 1))
            #expect(try tx.object(task.project!) == nil)
            let error = lodeError { _ = try tx.resolve(task.project!) }
            guard case .linkTargetMissing(let type, let key)? = error else {
                Issue.record("expected linkTargetMissing, got \(String(describing: error))")
                return
            }
            #expect(type == "Project" && key == "99")
            #expect("\(error!)".contains("Project 99, which does not exist"))
        }
    }

    @Test func inverseLinksComeFromTheIndexAndFollowEveryWrite() throws {
        let store = try Store.temporary(types: Self.types)
        try store.write { (tx: WriteTransaction) throws in
            for id in 1...3 { try tx.insert(Project(id: id, name: "p\(id)")) }
            for id in 1...2 { try tx.insert(Tag(id: id, name: "t\(id)")) }
            try tx.insert(Task(id: 10, title: "a", project: try Link(key: 1), tags: [try Link(key: 1)]))
            try tx.insert(
                Task(
                    id: 11, title: "b", project: try Link(key: 1), tags: [try Link(key: 1), try Link(key: 2)])
            )
            try tx.insert(Task(id: 12, title: "c", project: try Link(key: 2)))
        }
        func tasks(ofProject id: Int) throws -> [Int] {
            try store.read { tx in
                try tx.objects(Task.self, linkingTo: try Link<Project>(key: id), via: \.project).map(\.id)
            }
        }
        func tasks(taggedWith id: Int) throws -> [Int] {
            try store.read { tx in
                try tx.objects(Task.self, linkingTo: try Link<Tag>(key: id), via: \.tags).map(\.id)
            }
        }
        #expect(try tasks(ofProject: 1) == [10, 11])
        #expect(try tasks(ofProject: 2) == [12])
        #expect(try tasks(taggedWith: 1) == [10, 11])
        #expect(try tasks(taggedWith: 2) == [11])
        // Re-link, untag (a tag listed twice counts once), and unlink.
        try store.write { (tx: WriteTransaction) throws in
            try tx.update(Task.self, key: 10) { $0.project = try Link(key: 3) }
            try tx.update(Task.self, key: 11) { $0.tags = [try Link(key: 2), try Link(key: 2)] }
            try tx.upsert(Task(id: 12, title: "c"))
        }
        #expect(try tasks(ofProject: 1) == [11])
        #expect(try tasks(ofProject: 2) == [])
        #expect(try tasks(ofProject: 3) == [10])
        #expect(try tasks(taggedWith: 1) == [10])
        #expect(try tasks(taggedWith: 2) == [11])
        try store.write { tx in _ = try tx.delete(Task.self, key: 11) }
        #expect(try tasks(taggedWith: 2) == [])
        #expect(
            try store.read { tx in
                try tx.count(Task.self, linkingTo: try Link<Project>(key: 3), via: \Task.project)
            } == 1)
        #expect(try store.read { tx in try tx.checkIntegrity().problems } == [])
    }

    @Test func cascadeDeletesTransitivelyAndNullifyUnlinksEachReportedAsWhatItIs() throws {
        let store = try Store.temporary(types: Self.types)
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(Project(id: 1, name: "home"))
            try tx.insert(Project(id: 2, name: "work"))
            try tx.insert(Tag(id: 1, name: "red"))
            try tx.insert(Task(id: 10, title: "root", project: try Link(key: 1), tags: [try Link(key: 1)]))
            // A subtask in another project: it goes with its parent (cascade), not with its project.
            try tx.insert(Task(id: 11, title: "child", project: try Link(key: 2), parent: try Link(key: 10)))
            try tx.insert(
                Task(id: 12, title: "grandchild", project: try Link(key: 2), parent: try Link(key: 11)))
            try tx.insert(Task(id: 13, title: "other", project: try Link(key: 2)))
            // Project 2's lead is the child: deleting the child nullifies the lead.
            try tx.update(Project.self, key: 2) { $0.lead = try Link(key: 11) }
        }
        let before = try store.read { $0.version }
        let deleted = try store.write { tx in try tx.delete(Project.self, key: 1) }
        #expect(deleted)
        try store.read { (tx: Transaction) throws in
            #expect(try tx.objects(Task.self).fetch().map(\.id) == [13])
            #expect(try tx.object(Project.self, key: 2)?.lead == nil)
            #expect(try tx.object(Tag.self, key: 1) != nil)
            #expect(try tx.objects(Task.self, linkingTo: try Link<Tag>(key: 1), via: \.tags).isEmpty)
            #expect(try tx.checkIntegrity().problems == [])
            let changes = try tx.commits(after: before).commits.flatMap(\.changes)
            let described = Set(changes.map { "\($0.type) \($0.keyDescription) \($0.operation)" })
            #expect(
                described == [
                    "Project 1 delete", "Task 10 delete", "Task 11 delete", "Task 12 delete",
                    "Project 2 update",
                ])
            #expect(
                changes.first { $0.type == "Project" && $0.keyDescription == "2" }?.kind
                    == .update(fields: ["lead"]))
        }
    }

    @Test func nullifyRemovesEveryOccurrenceAndMovesCompoundIndexEntries() throws {
        typealias Task = LinkedTask<NullifyRules>
        let store = try Store.temporary(types: [
            LinkedProject<NullifyRules>.self, Task.self, LinkedTag<NullifyRules>.self,
        ])
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(LinkedProject<NullifyRules>(id: 1, name: "p"))
            try tx.insert(LinkedTag<NullifyRules>(id: 1, name: "a"))
            try tx.insert(LinkedTag<NullifyRules>(id: 2, name: "b"))
            try tx.insert(
                Task(
                    id: 5, title: "t", project: try Link(key: 1),
                    tags: [try Link(key: 1), try Link(key: 2), try Link(key: 1)]))
        }
        try store.write { (tx: WriteTransaction) throws in
            _ = try tx.delete(LinkedProject<NullifyRules>.self, key: 1)
            _ = try tx.delete(LinkedTag<NullifyRules>.self, key: 1)
        }
        try store.read { (tx: Transaction) throws in
            let task = try #require(try tx.object(Task.self, key: 5))
            #expect(task.project == nil)
            #expect(try task.tags.map { try $0.key(as: Int.self) } == [2])
            // The record is what the typed path writes for a nil link: the field is absent.
            let record = try CBORValue(decoding: try tx.storedRecords(of: "Task").first!.bytes)
            #expect(record["project"] == nil)
            // The compound index entry moved to the nil project.
            let nilProject: Link<LinkedProject<NullifyRules>>? = nil
            #expect(
                try tx.objects(Task.self).filter(#Predicate { $0.project == nilProject }).fetch().map(\.id)
                    == [5])
            #expect(try tx.checkIntegrity().problems == [])
        }
    }

    @Test func denyRefusesTheDeleteNamesThePointersAndChangesNothing() throws {
        typealias Project = LinkedProject<GuardedRules>
        typealias Task = LinkedTask<GuardedRules>
        let store = try Store.temporary(types: [Project.self, Task.self, LinkedTag<GuardedRules>.self])
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(Project(id: 1, name: "p"))
            try tx.insert(Task(id: 3, title: "x", project: try Link(key: 1)))
            try tx.insert(Task(id: 4, title: "y", project: try Link(key: 1)))
        }
        try store.write { (tx: WriteTransaction) throws in
            let error = lodeError { _ = try tx.delete(Project.self, key: 1) }
            guard case .deleteDenied(let type, let key, let linkedFrom)? = error else {
                Issue.record("expected deleteDenied, got \(String(describing: error))")
                return
            }
            #expect(type == "Project" && key == "1")
            #expect(linkedFrom.map(\.typeName) == ["Task", "Task"])
            #expect(linkedFrom.map { KeyDescription.describe($0.primaryKey) } == ["3", "4"])
            #expect("\(error!)".contains("Task 3, Task 4 still link to it"))
            // The transaction carries on: nothing was deleted.
            #expect(try tx.count(Project.self) == 1)
            #expect(
                try tx.objects(Task.self, linkingTo: try Link<Project>(key: 1), via: \.project).count == 2)
            // Without the tasks, the project goes; deleting all of them first works in one transaction.
            #expect(try tx.delete(Task.self, key: 3))
            #expect(try tx.delete(Task.self, key: 4))
            #expect(try tx.delete(Project.self, key: 1))
        }
        #expect(try store.read { tx in try tx.checkIntegrity().problems } == [])
    }

    @Test func aCascadeAroundACycleEnds() throws {
        typealias Project = LinkedProject<CascadeRules>
        typealias Task = LinkedTask<CascadeRules>
        let store = try Store.temporary(types: [Project.self, Task.self, LinkedTag<CascadeRules>.self])
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(Project(id: 1, name: "p", lead: try Link(key: 2)))
            // Tasks 1 and 2 are each other's parent; task 2 leads the project task 1 belongs to.
            try tx.insert(Task(id: 1, title: "a", project: try Link(key: 1), parent: try Link(key: 2)))
            try tx.insert(Task(id: 2, title: "b", parent: try Link(key: 1)))
            try tx.insert(Task(id: 3, title: "c"))
        }
        try store.write { tx in _ = try tx.delete(Task.self, key: 2) }
        try store.read { (tx: Transaction) throws in
            #expect(try tx.objects(Task.self).fetch().map(\.id) == [3])
            #expect(try tx.count(Project.self) == 0)
            #expect(try tx.checkIntegrity().problems == [])
        }
    }

    @Test func deleteAllAppliesTheRulesOfLinksIntoTheType() throws {
        let store = try Store.temporary(types: Self.types)
        try store.write { (tx: WriteTransaction) throws in
            try tx.insert(Project(id: 1, name: "p"))
            try tx.insert(Project(id: 2, name: "q"))
            try tx.insert(Tag(id: 1, name: "red"))
            try tx.insert(Task(id: 1, title: "a", project: try Link(key: 1), tags: [try Link(key: 1)]))
            try tx.insert(Task(id: 2, title: "b", tags: [try Link(key: 1)]))
        }
        try store.write { (tx: WriteTransaction) throws in
            #expect(try tx.deleteAll(Tag.self) == 1)
            #expect(try tx.deleteAll(Project.self) == 2)
        }
        try store.read { (tx: Transaction) throws in
            let tasks = try tx.objects(Task.self).fetch()
            #expect(tasks.map(\.id) == [2])
            #expect(tasks[0].tags.isEmpty)
            #expect(try tx.checkIntegrity().problems == [])
        }
    }

    @Test func theRulesApplyInAProcessThatDoesNotKnowTheLinkingType() throws {
        let directory = TemporaryDirectory("links-unknown")
        do {
            let store = try Store(at: directory.url, types: Self.types)
            try store.write { (tx: WriteTransaction) throws in
                try tx.insert(Project(id: 1, name: "p"))
                try tx.insert(Task(id: 1, title: "a", project: try Link(key: 1)))
                try tx.insert(Task(id: 2, title: "b", parent: try Link(key: 1)))
                try tx.insert(Task(id: 3, title: "c"))
            }
            store.close()
        }
        do {
            // Only projects are known here; the tasks' rules still cascade.
            let store = try Store(at: directory.url, types: [Project.self])
            try store.write { tx in _ = try tx.delete(Project.self, key: 1) }
            store.close()
        }
        let store = try Store(at: directory.url, types: Self.types)
        try store.read { (tx: Transaction) throws in
            #expect(try tx.objects(Task.self).fetch().map(\.id) == [3])
            #expect(try tx.checkIntegrity().problems == [])
        }
    }

    @Test func aSchemaWhoseLinksTheStoreCannotKeepApartIsRefused() throws {
        struct Twice: Persistable {
            var id: Int
            var a: Link<Tag>?
            static let schema = Schema<Twice>(primaryKey: \.id, links: [.to(\.a), .to(\.a, onDelete: .deny)])
        }
        struct AtIndex: Persistable {
            var id: Int
            var a: Int
            static let schema = Schema<AtIndex>(primaryKey: \.id, indexes: [.on(\.a, name: "@a")])
        }
        for type in [Twice.self, AtIndex.self] as [any Persistable.Type] {
            let error = lodeError { _ = try Store.temporary(types: [type]) }
            guard case .schemaMismatch? = error else {
                Issue.record("expected schemaMismatch, got \(String(describing: error))")
                continue
            }
        }
    }
}
