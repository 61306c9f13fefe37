import Foundation
import Lode
import Testing

/// The README's first-use example, kept here word for word (apart from the store's path) so it is
/// compiled and run with the tests.
enum ReadmeExample {
    enum Status: String, Codable { case open, done }

    struct Todo: Persistable {
        var id: UUID
        var title: String
        var status: Status
        var due: Date?
        static let schema = Schema<Todo>(
            primaryKey: \.id,
            indexes: [.on(\.status), .on(\.due), .unique(\.title)])
    }

    static func run(at url: URL) throws -> (titles: [String], plan: String, done: Int) {
        let store = try Store(at: url)
        let milk = Todo(id: UUID(), title: "Buy milk", status: .open, due: nil)
        try store.write { tx in
            try tx.insert(milk)
            try tx.insert(Todo(id: UUID(), title: "Write report", status: .open, due: Date()))
            try tx.insert(Todo(id: UUID(), title: "Call Ada", status: .open, due: nil))
            try tx.update(Todo.self, key: milk.id) { $0.status = .done }
        }

        let pending = Status.open  // #Predicate cannot name an enum case: capture it
        let open = store.objects(Todo.self)
            .filter(#Predicate { $0.status == pending })
            .sorted(by: \.title)
        print(open.map(\.title))  // ["Call Ada", "Write report"]
        print(try open.explain())  // index lookup of 1 value(s) in "status"; sorted in memory

        let done = try store.read { tx in
            try tx.objects(Todo.self).filter(#Predicate { $0.status != pending }).evaluatedCount()
        }
        return (open.map(\.title), try open.explain().description, done)
    }
}

/// The README's "Changing your types" example: version 2 of the first-use example's `Todo`. The
/// code between the markers is the README's block, which a test compares.
enum ReadmeMigrationExample {
    typealias Status = ReadmeExample.Status

    static func run(at url: URL) throws -> [String] {
        // README: changing-types begin
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
        // README: changing-types end
        let priorities = try store.read { tx in try tx.objects(Todo.self).fetch().map(\.priority) }
        precondition(priorities == [1, 1, 1])
        return names
    }
}

@Suite struct ReadmeExampleTests {
    @Test func theChangingTypesExampleRunsOnTheFirstUseStore() throws {
        let tmp = TemporaryDirectory()
        let url = tmp.url.appendingPathComponent("todos")
        _ = try ReadmeExample.run(at: url)
        #expect(try ReadmeMigrationExample.run(at: url) == ["Buy milk", "Call Ada", "Write report"])
    }

    /// The README shows the example's code as this file has it (indentation aside).
    @Test func theReadmeShowsTheChangingTypesExampleAsTested() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        func lines(_ text: Substring) -> [String] {
            text.split(separator: "\n", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
        }
        let begin = try #require(source.range(of: "// README: changing-types begin\n"))
        let end = try #require(source.range(of: "        // README: changing-types end"))
        let tested = lines(source[begin.upperBound..<end.lowerBound])
        let section = try #require(readme.range(of: "## Changing your types"))
        let block = try #require(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let blockEnd = try #require(readme.range(of: "```\n", range: block.upperBound..<readme.endIndex))
        #expect(lines(readme[block.upperBound..<blockEnd.lowerBound]) == tested)
    }

    @Test func theFirstUseExampleRunsAsWritten() throws {
        let tmp = TemporaryDirectory()
        let outcome = try ReadmeExample.run(at: tmp.url.appendingPathComponent("todos"))
        #expect(outcome.titles == ["Call Ada", "Write report"])
        #expect(outcome.plan == "index lookup of 1 value(s) in \"status\"; sorted in memory")
        #expect(outcome.done == 1)
    }
}
