import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// `update(_:key:_:_:)`, one property in place: the same store, byte for byte, as the whole-object
/// update, over random changes of every kind of property (indexed, unique, in a compound index,
/// optional set to nil, unindexed arrays), with the same errors and the same change-log entries.
@Suite struct FieldUpdateTests {
    let directory = TemporaryDirectory("field-update")

    /// Every database but Lode's own (`@…`), entry by entry.
    func contents(of store: Store) throws -> [String: [[UInt8]]] {
        let environment = try LMDB.Environment.open(at: store.path)
        let main = try environment.database(named: nil, create: false)
        return try environment.read { txn in
            var result: [String: [[UInt8]]] = [:]
            for entry in try txn.entries(in: main) {
                let name = String(decoding: entry.key, as: UTF8.self)
                guard !name.hasPrefix("@") else { continue }
                let database = try environment.database(named: name, create: false)
                result[name] = try txn.entries(in: database).flatMap { [$0.key, $0.value] }
            }
            return result
        }
    }

    @Test func aFieldUpdateWritesWhatAWholeUpdateWrites() throws {
        let byField = try Store(at: directory.url.appendingPathComponent("field"), types: [Todo.self])
        let whole = try Store(at: directory.url.appendingPathComponent("whole"), types: [Todo.self])
        var random = SeededGenerator(seed: 21)
        let ids = (0..<40).map { UUID(uuid: (UInt8($0), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)) }
        for store in [byField, whole] {
            try store.write { tx in
                for (position, id) in ids.enumerated() {
                    try tx.insert(
                        Todo(
                            id: id, title: "todo \(position)", status: .open, priority: position % 5,
                            due: position % 3 == 0
                                ? nil : Date(timeIntervalSince1970: Double(position) * 1000)))
                }
            }
        }
        for round in 0..<300 {
            // One to three updates in one transaction: the field of one property, then of another.
            let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                (
                    id: ids.randomElement(using: &random)!, choice: Int.random(in: 0..<6, using: &random),
                    number: Int.random(in: 0..<50, using: &random)
                )
            }
            func apply(_ tx: WriteTransaction, field: Bool) throws {
                for step in steps {
                    try apply(tx, field: field, id: step.id, choice: step.choice, number: step.number)
                }
            }
            func apply(_ tx: WriteTransaction, field: Bool, id: UUID, choice: Int, number: Int) throws {
                switch choice {
                case 0:
                    if field {
                        try tx.update(Todo.self, key: id, \.priority) { $0 = number }
                    } else {
                        try tx.update(Todo.self, key: id) { $0.priority = number }
                    }
                case 1:
                    // Unique: a taken title fails in both.
                    if field {
                        try tx.update(Todo.self, key: id, \.title) { $0 = "todo \(number)" }
                    } else {
                        try tx.update(Todo.self, key: id) { $0.title = "todo \(number)" }
                    }
                case 2:
                    let tags = (0..<number % 4).map { "t\($0)" }
                    if field {
                        try tx.update(Todo.self, key: id, \.tags) { $0 = tags }
                    } else {
                        try tx.update(Todo.self, key: id) { $0.tags = tags }
                    }
                case 3:
                    let due = number % 2 == 0 ? nil : Date(timeIntervalSince1970: Double(number) * 77.5)
                    if field {
                        try tx.update(Todo.self, key: id, \.due) { $0 = due }
                    } else {
                        try tx.update(Todo.self, key: id) { $0.due = due }
                    }
                case 4:
                    // In a compound index: the whole object decides.
                    let status = Status.allCases[number % 3]
                    if field {
                        try tx.update(Todo.self, key: id, \.status) { $0 = status }
                    } else {
                        try tx.update(Todo.self, key: id) { $0.status = status }
                    }
                default:
                    // The same value again.
                    if field {
                        try tx.update(Todo.self, key: id, \.priority) { _ in }
                    } else {
                        try tx.update(Todo.self, key: id) { _ in }
                    }
                }
            }
            let fieldError = Result { try byField.write { try apply($0, field: true) } }.error
            let wholeError = Result { try whole.write { try apply($0, field: false) } }.error
            #expect(
                "\(String(describing: fieldError))" == "\(String(describing: wholeError))", "round \(round)")
            if fieldError == nil {
                let logged = try [byField, whole].map { store in
                    try store.read { tx in
                        try tx.commits(after: tx.version - 1).commits.last?.changes.map(\.kind)
                    }
                }
                #expect(logged[0] == logged[1], "round \(round), steps \(steps)")
            }
        }
        #expect(try contents(of: byField) == contents(of: whole))
        #expect(try byField.read { try $0.checkIntegrity() }.problems == [])
        for id in ids {
            #expect(
                try byField.read { try $0.object(Todo.self, key: id) }
                    == whole.read { try $0.object(Todo.self, key: id) })
        }
    }

    /// `body` is app code: it runs once, also when its value goes through the whole object (nil), and
    /// it may write in the same transaction (the stored record is no longer borrowed then).
    @Test func theClosureRunsOnceAndMayWrite() throws {
        let store = try Store(at: directory.url, types: [Task.self, Todo.self])
        let id = UUID()
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "one", rank: 1, done: false, group: "g"))
            try tx.insert(Todo(id: id, title: "t", status: .open, priority: 1, due: Date()))
        }
        let calls = Locked(0)
        try store.write { tx in
            try tx.update(Task.self, key: 1, \.rank) { rank in
                calls.withLock { $0 += 1 }
                rank += 1
                for other in 2...40 {
                    try tx.insert(Task(id: other, title: "t\(other)", rank: other, done: false, group: "g"))
                }
            }
            try tx.update(Todo.self, key: id, \.due) { due in
                calls.withLock { $0 += 1 }
                due = nil
            }
        }
        #expect(calls.withLock { $0 } == 2)
        #expect(try store.read { try $0.object(Task.self, key: 1)?.rank } == 2)
        #expect(try store.read { try $0.count(Task.self) } == 40)
        #expect(try store.read { try $0.object(Todo.self, key: id)?.due } == .some(nil))
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func aMissingObjectOrADamagedFieldIsNamed() throws {
        let store = try Store(at: directory.url, types: [Task.self])
        try store.write { tx in try tx.insert(Task(id: 1, title: "one", rank: 1, done: false, group: "g")) }
        #expect {
            try store.write { tx in try tx.update(Task.self, key: 2, \.rank) { $0 += 1 } }
        } throws: { error in
            guard case .objectNotFound(let type, let key)? = error as? LodeError else { return false }
            return type == "Task" && key == "2"
        }
        let environment = try LMDB.Environment.open(at: store.path)
        let records = try environment.database(named: "Task", create: false)
        let damaged = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(1)), .init(key: .text("title"), value: .text("one")),
            .init(key: .text("rank"), value: .text("first")), .init(key: .text("done"), value: .bool(false)),
            .init(key: .text("group"), value: .text("g")),
        ]).encoded
        try environment.write { try $0.put(damaged, forKey: try KeyEncoder().encode(1), in: records) }
        #expect {
            try store.write { tx in try tx.update(Task.self, key: 1, \.rank) { $0 += 1 } }
        } throws: { error in
            guard case .recordDoesNotDecode(_, let key, let field, let reason)? = error as? LodeError else {
                return false
            }
            return key == "1" && field == "rank" && reason == "expected Int, found text"
        }
        // Another field of the same record still changes alone.
        try store.write { tx in try tx.update(Task.self, key: 1, \.title) { $0 = "uno" } }
    }
}

extension Result where Failure == any Error {
    /// The error, or nil.
    var error: (any Error)? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
