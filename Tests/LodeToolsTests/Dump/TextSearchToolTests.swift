import Foundation
import Testing

@testable import LodeInspection
@testable import LodeStore
@testable import LodeTestSupport
@testable import LodeText

/// `lode-dump` searches full-text indexes without the app's types, lists them in `schema`, counts
/// them in `stats`, checks them in `check`, and carries them through an export and a load.
@Suite struct TextSearchToolTests {
    let tmp = TemporaryDirectory()

    struct Recipe: Persistable {
        var id: Int
        var title: String
        var steps: [String]
        var minutes: Int
        static let schema = Schema<Recipe>(
            primaryKey: \.id, textIndexes: [.on(\.title, \.steps, name: "text")])
    }

    func makeStore() throws -> URL {
        let url = tmp.url.appendingPathComponent("store")
        let store = try Store(at: url, types: [Recipe.self])
        try store.write { tx in
            try tx.insert(
                Recipe(id: 1, title: "Café au lait", steps: ["heat the milk", "pour the coffee"], minutes: 5))
            try tx.insert(
                Recipe(id: 2, title: "Iced coffee", steps: ["brew coffee", "coffee over ice"], minutes: 10))
            try tx.insert(Recipe(id: 3, title: "Tea", steps: ["heat water"], minutes: 4))
        }
        store.close()
        return url
    }

    @Test func dumpMatchesBestFirstAndFilters() throws {
        let path = try makeStore().path
        let found = try runDump([
            "dump", path, "Recipe", "--match", "coffee", "--format", "ndjson", "--fields", "id",
        ])
        #expect(found.status == 0, "\(found.err)")
        #expect(found.out == "{\"id\":2}\n{\"id\":1}\n")
        let filtered = try runDump([
            "dump", path, "Recipe", "--match", "heat OR cafe", "--where", "minutes < 5", "--format", "ndjson",
            "--fields", "id",
        ])
        #expect(filtered.out == "{\"id\":3}\n")
        let sorted = try runDump([
            "dump", path, "Recipe", "--match", "heat", "--sort", "-minutes", "--format", "ndjson", "--fields",
            "id",
            "--explain",
        ])
        #expect(sorted.out == "{\"id\":1}\n{\"id\":3}\n")
        #expect(sorted.err.contains("full-text search, 2 match(es)"))
        // A malformed query is a usage error naming where; an unknown index is said so.
        let bad = try runDump(["dump", path, "Recipe", "--match", "\"open"])
        #expect(bad.status == 2)
        #expect(bad.err.contains("character 1: the quote is not closed"))
        let unknown = try runDump(["dump", path, "Recipe", "--match", "tea", "--index", "nope"])
        #expect(unknown.status == 1)
        #expect(unknown.err.contains("no full-text index of that name"))
        let alone = try runDump(["dump", path, "Recipe", "--index", "text"])
        #expect(alone.status == 2)
    }

    @Test func schemaStatsAndCheckShowTheIndex() throws {
        let path = try makeStore().path
        let schema = try runDump(["schema", path])
        #expect(
            schema.out.contains(
                "text index   text: title, steps, tokenizer unicode/1 (3 documents, 19 tokens)"))
        let json = try runDump(["schema", path, "--json"])
        #expect(
            json.out.contains(
                "\"textIndexes\":[{\"name\":\"text\",\"fields\":[\"title\",\"steps\"],\"tokenizer\":\"unicode/1\",\"documents\":3,\"tokens\":19}]"
            ))
        let stats = try runDump(["stats", path])
        #expect(
            stats.out.contains(
                "full-text index Recipe.text (title, steps; unicode/1): 3 documents, 19 tokens, 14 terms, 16 postings in 14 blocks"
            ))
        #expect(stats.out.contains("most common: coffee (2), heat (2), au (1), brew (1)"))
        let check = try runDump(["check", path])
        #expect(check.status == 0, "\(check.out)")
    }

    @Test func anExportLoadsWithItsIndexBuilt() throws {
        let path = try makeStore().path
        let export = try runDump(["export", path])
        #expect(export.status == 0)
        let file = tmp.url.appendingPathComponent("export.ndjson")
        try Data(export.out.utf8).write(to: file)
        let target = tmp.url.appendingPathComponent("loaded")
        let load = Process()
        load.executableURL = URL(fileURLWithPath: builtTool("lode-dump"))
        load.arguments = ["load", target.path]
        load.standardInput = try FileHandle(forReadingFrom: file)
        try load.run()
        load.waitUntilExit()
        #expect(load.terminationStatus == 0)
        let found = try runDump([
            "dump", target.path, "Recipe", "--match", "coffee", "--format", "ndjson", "--fields", "id",
        ])
        #expect(found.out == "{\"id\":2}\n{\"id\":1}\n")
        #expect(try runDump(["check", target.path]).status == 0)
        let store = try Store(at: target, types: [Recipe.self])
        #expect(try store.objects(Recipe.self).matching("ice").fetch().map(\.id) == [2])
    }
}
