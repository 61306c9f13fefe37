import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Records that a damaged file or another writer left: they read as `recordDoesNotDecode` naming the
/// type, the key and the field, never as an object that is not what the store holds.
@Suite struct DamagedRecordTests {
    let tmp = TemporaryDirectory()

    /// A store of tasks 1…5 whose record under `key` is then replaced by `bytes`, written with LMDB
    /// directly as a damaged file or a foreign writer would.
    func store(replacing key: Int, with bytes: [UInt8]) throws -> Store {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in 1...5 {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g"))
            }
        }
        let environment = try LMDB.Environment.open(at: tmp.path)
        let records = try environment.database(named: "Task", create: false)
        try environment.write { txn in try txn.put(bytes, forKey: try KeyEncoder().encode(key), in: records) }
        return store
    }

    /// Every way of reading the record throws the error that names it; the others still read.
    func expectEveryReadFails(
        _ store: Store, key: Int, field: String, reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        func expectNamed(_ body: () throws -> Void) {
            let error = lodeError(body, sourceLocation: sourceLocation)
            guard case .recordDoesNotDecode(let type, let named, let at, let why)? = error else {
                Issue.record(
                    "expected recordDoesNotDecode, got \(String(describing: error))",
                    sourceLocation: sourceLocation)
                return
            }
            #expect(type == "Task" && named == "\(key)" && at == field, sourceLocation: sourceLocation)
            #expect(why.contains(reason), "\(why)", sourceLocation: sourceLocation)
        }
        expectNamed { _ = try store.read { try $0.object(Task.self, key: key) } }
        expectNamed { _ = try store.objects(Task.self).fetch() }
        expectNamed { _ = try store.objects(Task.self).sorted(by: \.rank).fetch() }
        expectNamed { _ = try store.objects(Task.self).filter(#Predicate { $0.rank >= 0 }).fetch() }
        let others = try store.read { tx in
            try [1, 2, 3, 4, 5].filter { $0 != key }.map { try tx.object(Task.self, key: $0)?.id }
        }
        #expect(others == [1, 2, 3, 4, 5].filter { $0 != key }, sourceLocation: sourceLocation)
    }

    /// A record stored under key 5 whose id says 6 was returned as task 6: one result held two
    /// objects with the same primary key.
    @Test func aRecordWhosePrimaryKeyFieldIsNotItsKeyDoesNotRead() throws {
        let six = try CBOREncoder().encode(Task(id: 6, title: "six", rank: 6, done: false, group: "g"))
        let store = try store(replacing: 5, with: six)
        try expectEveryReadFails(store, key: 5, field: "id", reason: "the record's id is 6")
        // The check says the same, and no index entry is said to point at nothing.
        let report = try store.read { try $0.checkIntegrity() }
        #expect(
            report.problems.contains("Task 5: its id is 6, not the key it is stored under"),
            "\(report.problems)")
        #expect(!report.problems.contains { $0.contains("does not exist") }, "\(report.problems)")
    }

    /// A record whose map holds a field twice decoded with the first value (RFC 8949: such a map is
    /// not valid); it now reads as an error naming the field.
    @Test func aRecordWithAFieldTwiceDoesNotRead() throws {
        // {"id": 3, "title": "a", "rank": 3, "done": false, "group": "g", "title": "b"}
        var bytes: [UInt8] = [0xa6]
        for (name, value) in [
            ("id", CBORValue.unsigned(3)), ("title", .text("a")), ("rank", .unsigned(3)),
            ("done", .bool(false)),
            ("group", .text("g")), ("title", .text("b")),
        ] {
            bytes += try CBOREncoder().encode(name) + CBOREncoder().encode(value)
        }
        let store = try store(replacing: 3, with: bytes)
        try expectEveryReadFails(store, key: 3, field: "title", reason: "twice")
        let report = try store.read { try $0.checkIntegrity() }
        #expect(report.problems.contains { $0.hasPrefix("Task 3: field \"title\"") }, "\(report.problems)")
        #expect(!report.problems.contains { $0.contains("does not exist") }, "\(report.problems)")
    }

    /// An error quoting a long value cuts it: a message stays a line a person can read.
    @Test func anErrorQuotesAtMostTwoHundredCharactersOfAValue() {
        let long = String(repeating: "x", count: 61_798)
        let message = LodeError.recordDoesNotDecode(type: "Task", key: long, field: "id", reason: long)
            .description
        #expect(message.count < 1_000, "\(message.count) characters")
        #expect(message.contains("(61798 characters in all)"))
        let short = LodeError.objectNotFound(type: "Task", key: "7").description
        #expect(short == "Task: no object with primary key 7")
    }
}
