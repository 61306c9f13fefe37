import Foundation
import Lode
import Testing

@testable import LodeTestSupport

/// The "Changing your types" article's example: version 2 of the first-use example's `Todo`
/// (`DocumentationExamplesTests` checks the article shows this code).
enum ReadmeMigrationExample {
    enum Status: String, Codable { case open, done }

    static func run(at url: URL) throws -> [String] {
        struct Todo: Persistable {
            var id: UUID
            var name: String
            var status: Status
            var due: Date?
            var priority: Int
            static let schema = Schema<Todo>(
                primaryKey: \.id,
                indexes: [.on(\.status), .on(\.due), .unique(\.name), .on(\.priority)],
                version: 2,
                defaults: [.field(\.priority, 1)])
        }

        let migrations = [
            Migration("2: a todo's title is its name") { context in
                try context.renameField("title", to: "name", in: "Todo")
            }
        ]
        let store = try Store(at: url, types: [Todo.self], migrations: migrations)
        let names = try store.read { tx in try tx.objects(Todo.self).sorted(by: \.name).fetch().map(\.name) }
        print(names)  // ["Buy milk", "Call Ada", "Write report"]
        let priorities = try store.read { tx in try tx.objects(Todo.self).fetch().map(\.priority) }
        precondition(priorities == [1, 1, 1])
        return names
    }
}

/// Runs `lode-test-helper` commands, in order, in `directory`; their standard output lines.
func runReadmeHelper(_ commands: [String], in directory: URL) throws -> [String] {
    let helper = builtTool("lode-test-helper")
    let script = commands.map { "'\(helper)' \($0)" }.joined(separator: " && ")
    let result = try shell("cd '\(directory.path)' && \(script)")
    #expect(result.status == 0, "\(result.err)")
    return result.out.split(separator: "\n").map(String.init)
}

@Suite struct ReadmeExampleTests {
    @Test func theFirstUseExampleRunsAsWritten() throws {
        let tmp = TemporaryDirectory()
        #expect(
            try runReadmeHelper(["readme-first-use"], in: tmp.url) == [
                #"["Call Ada", "Write report"]"#,
                #"index lookup of 1 value(s) in "status"; sorted in memory"#,
            ])
    }

    @Test func theSynchronousLiveResultsExampleRunsOnTheFirstUseStore() throws {
        let tmp = TemporaryDirectory()
        #expect(try runReadmeHelper(["readme-first-use", "readme-live"], in: tmp.url).last == "[1]")
    }

    @Test func theChangingTypesExampleRunsOnTheFirstUseStore() throws {
        let tmp = TemporaryDirectory()
        _ = try runReadmeHelper(["readme-first-use"], in: tmp.url)
        #expect(
            try ReadmeMigrationExample.run(at: tmp.url.appendingPathComponent("todos"))
                == ["Buy milk", "Call Ada", "Write report"])
    }
}
