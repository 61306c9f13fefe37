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

/// Checks every index of `Todo` against the records: each object has exactly its entries.
func checkTodoIndexes(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try store.read { tx in
        let state = try tx.typeState(Todo.self)
        let objects = try tx.objects(Todo.self).fetch()
        for index in state.indexes {
            var expected: [[UInt8]] = []
            for object in objects {
                expected.append(
                    IndexKeyLimit.stored(try index.definition.keyBytes(object))
                        + (try Todo.schema.primaryKeyBytes(object)))
            }
            let actual = try tx.lmdb.entries(in: index.database).map { $0.key + $0.value }
            #expect(
                actual.sorted { $0.lexicographicallyPrecedes($1) }
                    == expected.sorted { $0.lexicographicallyPrecedes($1) },
                "index \(index.definition.name)", sourceLocation: sourceLocation)
        }
    }
}

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
        let updated = try store.write { tx in
            try tx.update(Todo.self, key: milk.id) { $0.status = .done }
        }
        #expect(updated.status == .done)
        #expect(try store.read { try $0.object(Todo.self, key: milk.id)?.status } == .done)
        try store.write { tx throws in #expect(try tx.delete(Todo.self, key: milk.id)) }
        #expect(try store.read { try $0.object(Todo.self, key: milk.id) } == nil)
        #expect(try store.read { try $0.count(Todo.self) } == 0)
        try checkTodoIndexes(store)
    }

    /// Issue 23, finding 4: the first read of results of a type this store object had not
    /// registered registered it — a write transaction inside the read, waiting for the writer lock
    /// while another thread held it.
    @Test func readingResultsNeverTakesTheWriterLock() throws {
        let writer = try Store(at: tmp.url, types: [Todo.self])
        try writer.write { tx in try tx.insert(todo("a")) }
        // Another store object on the same directory, which has not registered Todo.
        let reader = try Store(at: tmp.url)
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let writing = Thread {
            try? writer.write { _ in
                inside.signal()
                release.wait()
            }
        }
        writing.start()
        inside.wait()
        let read = DispatchSemaphore(value: 0)
        let counted = Locked<Int?>(nil)
        Thread {
            let count = try? reader.objects(Todo.self).filter(#Predicate { $0.priority >= 0 }).count
            counted.withLock { $0 = count }
            read.signal()
        }.start()
        let finished = read.wait(timeout: .now() + 5)
        release.signal()
        if finished == .timedOut { read.wait() }
        #expect(finished == .success, "the read waited for the writer lock")
        #expect(counted.withLock { $0 } == 1)
    }

    @Test func duplicatePrimaryKeysAreRefused() throws {
        let milk = todo("milk")
        try store.write { try $0.insert(milk) }
        var copy = milk
        copy.title = "other"
        let error = lodeError { try store.write { try $0.insert(copy) } }
        #expect(error == .duplicateKey(type: "Todo", key: milk.id.uuidString))
        #expect(try store.read { try $0.object(Todo.self, key: milk.id) } == milk)
        try checkTodoIndexes(store)
    }

    @Test func aUniqueViolationNamesTheIndexAndChangesNothing() throws {
        let first = todo("write report", .open, priority: 1)
        try store.write { try $0.insert(first) }
        // Caught inside the write: the failed insert left nothing behind, the rest commits.
        let second = todo("buy milk")
        try store.write { tx in
            let error = lodeError { try tx.insert(self.todo("write report", .done, priority: 9)) }
            #expect(error == .uniqueViolation(type: "Todo", index: "title", value: "write report"))
            #expect(error?.description.contains("unique index \"title\"") == true)
            try tx.insert(second)
        }
        #expect(try store.read { try $0.count(Todo.self) } == 2)
        // An update that would collide is refused and leaves the object as it was.
        let error = lodeError {
            try store.write { tx -> Void in
                try tx.update(Todo.self, key: second.id) { (todo: inout Todo) in todo.title = "write report" }
            }
        }
        #expect(error == .uniqueViolation(type: "Todo", index: "title", value: "write report"))
        #expect(try store.read { try $0.object(Todo.self, key: second.id) } == second)
        try checkTodoIndexes(store)
    }

    @Test func indexesFollowUpdatesUpsertsAndDeletes() throws {
        var items = (0..<30).map {
            todo(
                "t\($0)", Status.allCases[$0 % 3], priority: $0 % 4,
                due: $0 % 2 == 0 ? Date(timeIntervalSince1970: Double($0)) : nil)
        }
        try store.write { tx in for item in items { try tx.insert(item) } }
        try store.write { tx in
            for index in stride(from: 0, to: 30, by: 3) {
                try tx.update(Todo.self, key: items[index].id) {
                    $0.status = .done
                    $0.priority += 10
                    $0.due = nil
                }
                items[index].status = .done
                items[index].priority += 10
                items[index].due = nil
            }
            items[1].title = "renamed"
            try tx.upsert(items[1])
            try tx.delete(items[2])
        }
        try checkTodoIndexes(store)
        let done = Status.done
        let doneTitles = Set(
            try store.objects(Todo.self).filter(#Predicate { $0.status == done }).map(\.title))
        #expect(
            doneTitles
                == Set(
                    items.enumerated().filter { $0.offset != 2 && $0.element.status == .done }.map(
                        \.element.title)))
        #expect(try store.objects(Todo.self).filter(#Predicate { $0.title == "t1" }).isEmpty)
        #expect(try store.objects(Todo.self).filter(#Predicate { $0.title == "renamed" }).count == 1)
        try store.write { tx throws in
            let doing = Status.doing
            #expect(try tx.delete(tx.objects(Todo.self).filter(#Predicate { $0.status == doing })) == 10)
        }
        try checkTodoIndexes(store)
        try store.write { tx throws in #expect(try tx.deleteAll(Todo.self) == 19) }
        #expect(try store.objects(Todo.self).isEmpty)
        try checkTodoIndexes(store)
    }

    @Test func aThrowingWriteRollsBackEverything() throws {
        struct Boom: Error {}
        let kept = todo("kept")
        try store.write { try $0.insert(kept) }
        #expect(throws: Boom.self) {
            try store.write { tx in
                try tx.insert(self.todo("lost"))
                try tx.update(Todo.self, key: kept.id) { $0.priority = 99 }
                throw Boom()
            }
        }
        #expect(try store.read { try $0.objects(Todo.self).fetch() } == [kept])
        try checkTodoIndexes(store)
    }

    @Test func resultsStayOnTheVersionTheyWereEvaluatedOn() throws {
        try store.write { tx in for i in 0..<5 { try tx.insert(self.todo("t\(i)")) } }
        let before = store.objects(Todo.self).sorted(by: \.title)
        #expect(try before.count == 5)
        let version = try before.version()
        try store.write { tx in
            try tx.insert(self.todo("t5"))
            try tx.deleteAll(Counter.self)
        }
        try store.write { tx in
            _ = try tx.delete(tx.objects(Todo.self).filter(#Predicate { $0.title == "t0" }))
        }
        #expect(try before.count == 5)
        #expect(try before.map(\.title) == ["t0", "t1", "t2", "t3", "t4"])
        #expect(try before.version() == version)
        let after = store.objects(Todo.self).sorted(by: \.title)
        #expect(try after.map(\.title) == ["t1", "t2", "t3", "t4", "t5"])
        #expect(try after.version() > version)
        // Inside a read transaction every read sees the transaction's version.
        try store.read { tx throws in
            #expect(try tx.objects(Todo.self).count == 5)
            #expect(try tx.count(Todo.self) == 5)
        }
    }

    @Test func objectIDsResolveInLaterTransactions() throws {
        let milk = todo("milk")
        try store.write { try $0.insert(milk) }
        let id = try ObjectID(milk)
        #expect(id == (try ObjectID(Todo.self, key: milk.id)))
        #expect(try store.objects(Todo.self).objectIDs == [id])
        let decoded = try JSONDecoder().decode(ObjectID.self, from: try JSONEncoder().encode(id))
        #expect(decoded == id)
        #expect(try store.read { try $0.object(Todo.self, for: decoded) } == milk)
        #expect(try store.read { try $0.object(for: decoded) as? Todo } == milk)
        try store.write { try $0.delete(milk) }
        #expect(try store.read { try $0.object(Todo.self, for: id) } == nil)
        let unknown = ObjectID(typeName: "Nope", primaryKey: [1])
        #expect(lodeError { _ = try store.read { try $0.object(for: unknown) } } == .typeNotFound("Nope"))
    }

    @Test func limitOffsetAndAggregates() throws {
        try store.write { tx in for i in 0..<10 { try tx.insert(self.todo("t\(i)", priority: i)) } }
        let byPriority = store.objects(Todo.self).sorted(by: \.priority, ascending: false)
        #expect(try byPriority.limit(3).map(\.priority) == [9, 8, 7])
        #expect(try byPriority.offset(8).map(\.priority) == [1, 0])
        #expect(try byPriority.offset(2).limit(2).map(\.priority) == [7, 6])
        #expect(try byPriority.offset(20).isEmpty)
        #expect(try byPriority.min(of: \.priority) == 0)
        #expect(try byPriority.max(of: \.title) == "t9")
        #expect(try byPriority.sum(of: \.priority) == 45)
        #expect(try byPriority.average(of: \.priority) == 4.5)
        #expect(
            try store.objects(Todo.self).filter(#Predicate { $0.priority > 100 }).average(of: \.priority)
                == nil)
        #expect(try byPriority.first?.priority == 9)
    }

    @Test func longIndexValuesUseTheDocumentedFallback() throws {
        let base = String(repeating: "long title ", count: 60)  // 660 bytes
        let a = todo(base + "A")
        let b = todo(base + "B")
        try store.write { tx in
            try tx.insert(a)
            try tx.insert(b)
        }
        let wanted = base + "B"
        let found = store.objects(Todo.self).filter(#Predicate { $0.title == wanted })
        #expect(try found.map(\.id) == [b.id])
        #expect(try found.explain().rechecksPredicate)
        #expect(try store.objects(Todo.self).sorted(by: \.title).map(\.id) == [a.id, b.id])
        let error = lodeError { try store.write { try $0.insert(self.todo(base + "A")) } }
        #expect(error == .uniqueViolation(type: "Todo", index: "title", value: base + "A"))
        try checkTodoIndexes(store)
    }

    @Test func primaryKeysLongerThanLMDBAllowsAreRefused() throws {
        struct Note: Persistable {
            var name: String
            static let schema = Schema<Note>(primaryKey: \.name)
        }
        let error = lodeError {
            try store.write { try $0.insert(Note(name: String(repeating: "n", count: 600))) }
        }
        #expect(error == .keyTooLong(type: "Note", bytes: 602))
    }

    @Test func asyncWritesAndReads() async throws {
        try await onDedicatedExecutor {
            let milk = todo("milk")
            try await store.write { tx in try tx.insert(milk) }
            let count = try await store.read { tx in try tx.count(Todo.self) }
            #expect(count == 1)
        }
    }

    @Test func theCatalogRecordsSchemaAndFieldsSeen() throws {
        try store.write { try $0.insert(self.todo("milk", due: Date())) }
        let entry = try store.read { try $0.catalogEntry(named: "Todo") }
        #expect(entry?.primaryKey == "id")
        #expect(entry?.indexes.map(\.name) == ["title", "status", "priority", "due", "status+priority"])
        #expect(entry?.indexes.first { $0.name == "title" }?.unique == true)
        #expect(entry?.fields == ["due", "id", "priority", "status", "tags", "title"])
    }

    @Test func theChangeLogNamesTheFieldsAnUpdateChanged() throws {
        let milk = todo("milk")
        try store.write { try $0.insert(milk) }
        func lastFields() throws -> [String]? {
            try store.read { tx in
                try tx.lmdb.entries(in: store.changeLog!).map {
                    try CBORDecoder().decode(ChangeLogEntry.self, from: $0.value)
                }.last?.changes.first?.fields
            }
        }
        // Same fields in the same order: compared side by side.
        try store.write { tx in try tx.update(Todo.self, key: milk.id) { $0.title = "oat milk" } }
        #expect(try lastFields() == ["title"])
        // A field that appears (an optional set) and one that changes.
        try store.write { tx in
            try tx.update(Todo.self, key: milk.id) {
                $0.due = Date(timeIntervalSince1970: 0)
                $0.priority = 2
            }
        }
        #expect(try lastFields() == ["due", "priority"])
        // An upsert of an equal object changes nothing; one that drops a field names it.
        var stored = try #require(try store.read { tx in try tx.object(Todo.self, key: milk.id) })
        try store.write { tx in try tx.upsert(stored) }
        #expect(try lastFields() == [])
        stored.due = nil
        try store.write { tx in try tx.upsert(stored) }
        #expect(try lastFields() == ["due"])
    }

    @Test func fieldsSeenInARolledBackWriteAreNotedAgainWhenTheyCommit() throws {
        // Without a due date the record has no "due" field (encodeIfPresent leaves it out).
        try store.write { try $0.insert(self.todo("bread")) }
        #expect(try store.read { try $0.catalogEntry(named: "Todo") }?.fields.contains("due") == false)
        struct Rollback: Error {}
        #expect(throws: Rollback.self) {
            try store.write { tx in
                try tx.insert(self.todo("milk", due: Date()))
                try tx.insert(self.todo("eggs", due: Date()))
                throw Rollback()
            }
        }
        #expect(try store.read { try $0.catalogEntry(named: "Todo") }?.fields.contains("due") == false)
        try store.write { try $0.insert(self.todo("jam", due: Date())) }
        #expect(try store.read { try $0.catalogEntry(named: "Todo") }?.fields.contains("due") == true)
    }
}
