import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct CatalogTests {
    @Test func theCatalogDescribesTypesWithoutTheirSwiftTypes() throws {
        let tmp = TemporaryDirectory()
        do {
            let store = try Store(at: tmp.url)
            try store.write { tx in
                for i in 0..<3 {
                    try tx.insert(Todo(id: UUID(), title: "t\(i)", status: .open, priority: i, due: nil))
                }
                try tx.insert(Counter(name: "c", value: 1))
            }
        }
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        try store.read { tx throws in
            let types = try tx.storedTypes()
            #expect(types.map(\.name) == ["Counter", "Todo"])
            let todo = try tx.storedType(named: "Todo")
            #expect(todo.primaryKey == "id")
            #expect(todo.objectCount == 3)
            #expect(todo.fields == ["id", "priority", "status", "tags", "title"])
            #expect(todo.indexes.map(\.name) == ["title", "status", "priority", "due", "status+priority"])
            #expect(todo.indexes.allSatisfy { $0.entryCount == 3 })
            #expect(try tx.storedIndex(named: "title", of: "Todo").isUnique)
            #expect(lodeError { _ = try tx.storedType(named: "Nope") } == .typeNotFound("Nope"))
            #expect(
                lodeError { _ = try tx.storedIndex(named: "nope", of: "Todo") }
                    == .indexNotFound(type: "Todo", index: "nope"))
        }
    }
}
