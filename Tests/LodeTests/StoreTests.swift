import Foundation
import Testing

@testable import Lode

@Suite struct StoreTests {
    let tmp = TemporaryDirectory()
    let store: Store

    init() throws {
        store = try Store(at: tmp.url)
    }

    func todo(_ title: String, _ status: Status = .open, priority: Int = 0, due: Date? = nil) -> Todo {
        Todo(id: UUID(), title: title, status: status, priority: priority, due: due)
    }

    @Test func insertReadUpdateDelete() throws {
        let milk = todo("milk")
        try store.write { tx in try tx.insert(milk) }
        #expect(try store.read { try $0.object(Todo.self, key: milk.id) } == milk)
        try store.write { tx in
            try tx.update(Todo.self, key: milk.id) { $0.status = .done }
        }
        #expect(try store.read { try $0.object(Todo.self, key: milk.id)?.status } == .done)
        try store.write { tx throws in #expect(try tx.delete(Todo.self, key: milk.id)) }
        #expect(try store.read { try $0.object(Todo.self, key: milk.id) } == nil)
        #expect(try store.read { try $0.count(Todo.self) } == 0)
    }

    @Test func queriesUseIndexes() throws {
        try store.write { tx in
            for i in 0..<50 {
                try tx.insert(todo("task \(i)", Status.allCases[i % 3], priority: i % 5))
            }
        }
        let pending = Status.open
        let open = store.objects(Todo.self).filter(#Predicate { $0.status == pending })
        #expect(open.count == 17)
        #expect(try open.explain().access == .indexLookup(index: "status", count: 1))
        #expect(try !open.explain().rechecksPredicate)
        let sorted = store.objects(Todo.self).sorted(by: \.priority)
        #expect(sorted.map(\.priority) == (0..<50).map { $0 % 5 }.sorted())
        #expect(try sorted.explain().ordering == .index("priority", reversed: false))
    }
}
