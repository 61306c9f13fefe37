import Foundation
import Lode
import ModelStorage
import StoredQuery
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeStudio
@testable import LodeTestModels
@testable import LodeTestSupport

/// `lode-dump` on a store with links: the schema shows them with their rules, `check` finds dangling
/// links and inverse entries that disagree with the records, `export` and `load` keep them.
@Suite struct LinkToolTests {
    typealias Project = LinkedProject<OwningRules>
    typealias Task = LinkedTask<OwningRules>
    typealias Tag = LinkedTag<OwningRules>

    let tmp = TemporaryDirectory("link-tool")

    func makeStore(at url: URL) throws {
        let store = try Store(at: url, types: [Project.self, Task.self, Tag.self])
        try store.write { tx in
            try tx.insert(Project(id: 1, name: "home"))
            try tx.insert(Tag(id: 1, name: "red"))
            try tx.insert(Task(id: 1, title: "a", project: try Link(key: 1), tags: [try Link(key: 1)]))
            try tx.insert(Task(id: 2, title: "b", project: try Link(key: 1), parent: try Link(key: 1)))
        }
        store.close()
    }

    @Test func schemaShowsLinksAndTheirRules() throws {
        try makeStore(at: tmp.url)
        let schema = try runDump(["schema", tmp.path])
        #expect(schema.status == 0, "\(schema.err)")
        #expect(
            schema.out.contains("  link         project → Project, to-one, on delete cascade (2 entries)\n"))
        #expect(schema.out.contains("  link         tags → Tag, to-many, on delete nullify (1 entries)\n"))
        let summary = try runDump([tmp.path])
        #expect(summary.out.contains("    link parent → Task, on delete cascade\n"))
        let json = try runDump(["schema", tmp.path, "--json"])
        let types =
            (try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])?["types"]
            as? [[String: Any]]
        let links = types?.first { $0["name"] as? String == "Task" }?["links"] as? [[String: Any]]
        #expect(links?.map { $0["field"] as? String } == ["project", "tags", "parent"])
        #expect(links?.map { $0["rule"] as? String } == ["cascade", "nullify", "cascade"])
        let dump = try runDump(["dump", tmp.path, "Task", "--format", "ndjson"])
        #expect(dump.out.contains("\"project\":1,\"tags\":[1]"))
    }

    @Test func checkFindsDanglingLinksAndInverseEntriesThatDisagree() throws {
        try makeStore(at: tmp.url)
        // Damage the graph under the library: a task pointing at a missing project, and an inverse
        // entry for a link no record has.
        let environment = try LMDB.Environment.open(at: tmp.path)
        let records = try environment.database(named: "Task", create: false)
        let tags = try environment.database(named: "Task.@tags", kind: .duplicates, create: false)
        try environment.write { txn in
            var record = try CBORValue(
                decoding: try #require(try txn.get(try KeyEncoder().encode(2), in: records)))
            guard case .map(var entries) = record else { return }
            entries = entries.map {
                $0.key == .text("project") ? .init(key: $0.key, value: .unsigned(9)) : $0
            }
            record = .map(entries)
            try txn.put(record.encoded, forKey: try KeyEncoder().encode(2), in: records)
            try txn.put(try KeyEncoder().encode(2), forKey: try KeyEncoder().encode(1), in: tags)
        }
        let check = try runDump(["check", tmp.path])
        #expect(check.status != 0)
        #expect(check.out.contains("Task 2: link \"project\" points at Project 9, which does not exist"))
        #expect(
            check.out.contains(
                "link index Task.@project: entry 1 says Task 2 links to it, but its project does not"))
        #expect(
            check.out.contains("link index Task.@project: Task 2 links to Project 9 but the entry is missing")
        )
        #expect(
            check.out.contains(
                "link index Task.@tags: entry 1 says Task 2 links to it, but its tags does not"))
    }

    @Test func exportAndLoadKeepLinksAndTheirIndexes() throws {
        try makeStore(at: tmp.url)
        let export = try runDump(["export", tmp.path])
        #expect(export.status == 0, "\(export.err)")
        let copy = tmp.url.appendingPathComponent("copy").path
        let exportFile = tmp.url.appendingPathComponent("export.ndjson")
        try Data(export.out.utf8).write(to: exportFile)
        let load = try shell("'\(builtTool("lode-dump"))' load '\(copy)' < '\(exportFile.path)'")
        #expect(load.status == 0, "\(load.err)")
        let store = try Store(at: URL(fileURLWithPath: copy), types: [Project.self, Task.self, Tag.self])
        try store.read { (tx: LodeStore.Transaction) throws in
            #expect(
                try tx.objects(Task.self, linkingTo: try Link<Project>(key: 1), via: \.project).map(\.id) == [
                    1, 2,
                ])
            #expect(
                try tx.objects(Task.self, linkingTo: try Link<Task>(key: 1), via: \.parent).map(\.id) == [2])
            #expect(try tx.checkIntegrity().problems == [])
        }
        // The rules came along: deleting the project cascades in the loaded store.
        try store.write { tx in _ = try tx.delete(Project.self, key: 1) }
        #expect(try store.read { try $0.count(Task.self) } == 0)
    }
}
