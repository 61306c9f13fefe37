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

@Suite struct ReadmeExampleTests {
    @Test func theFirstUseExampleRunsAsWritten() throws {
        let tmp = TemporaryDirectory()
        let outcome = try ReadmeExample.run(at: tmp.url.appendingPathComponent("todos"))
        #expect(outcome.titles == ["Call Ada", "Write report"])
        #expect(outcome.plan == "index lookup of 1 value(s) in \"status\"; sorted in memory")
        #expect(outcome.done == 1)
    }
}
