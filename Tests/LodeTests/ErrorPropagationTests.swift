import Dispatch
import Foundation
import LMDB
import Lode
import Testing

@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore

/// A value whose `Encodable` conformance always throws.
struct Unencodable: Codable, Equatable {
    struct Refused: Error {}
    // Stored, so the key path to a field of this type names it (a zero-sized field prints as
    // another's name).
    var value = 0
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws { throw Refused() }
}

struct WithBadDefault: Persistable {
    var id: Int
    var extra: Unencodable
    static let schema = Schema<WithBadDefault>(primaryKey: \.id, defaults: [.field(\.extra, Unencodable())])
}

/// Issue 23, finding 10: errors swallowed on the way reach the caller, typed.
@Suite struct ErrorPropagationTests {
    let tmp = TemporaryDirectory()

    /// A schema default that does not encode was stored as null.
    @Test func aDefaultThatDoesNotEncodeIsRefusedAtRegistration() throws {
        let store = try Store(at: tmp.url)
        let error = lodeError { try store.register([WithBadDefault.self]) }
        guard case .recordDoesNotEncode(let type, let reason)? = error else {
            Issue.record("expected recordDoesNotEncode, got \(String(describing: error))")
            return
        }
        #expect(type == "WithBadDefault")
        #expect(reason.contains("the default of field \"extra\" does not encode"), "\(reason)")
        #expect(try store.read { try $0.storedTypes() }.isEmpty, "nothing was registered")
    }

    /// A catalog entry that does not decode was skipped when the store opened the catalog's databases.
    @Test func aCatalogEntryThatDoesNotDecodeIsReported() throws {
        let store = try Store(at: tmp.url, types: [Counter.self])
        try store.write { tx in try tx.insert(Counter(name: "a", value: 1)) }
        // Another writer leaves an entry that is not CBOR.
        let environment = try Environment.open(at: tmp.path)
        try environment.write { txn in
            try txn.put([0xFF, 0x00], forKey: Array("Ghost".utf8), in: try txn.database(named: "@catalog"))
        }
        let error = lodeError { _ = try store.read { try $0.count(Counter.self) } }
        guard case .recordDoesNotDecode(let type, let key, _, _)? = error else {
            Issue.record("expected recordDoesNotDecode, got \(String(describing: error))")
            return
        }
        #expect(type == "@catalog")
        #expect(key == "Ghost")
    }

    /// An error the app's own predicate threw during an observation became a string.
    @Test func anErrorThrownByAPredicateKeepsItsType() throws {
        let store = try Store(at: tmp.url, types: [Todo.self])
        let cutoff = Date(timeIntervalSince1970: 0)
        let errors = Locked<[LodeError]>([])
        let signal = DispatchSemaphore(value: 0)
        let token = store.objects(Todo.self).filter(#Predicate { $0.due! > cutoff }).observe(
            on: DispatchQueue(label: "errors")
        ) { change in
            if case .error(let error) = change { errors.withLock { $0.append(error) } }
            signal.signal()
        }
        #expect(signal.wait(timeout: .now() + 5) == .success)  // initial
        try store.write { tx in
            try tx.insert(Todo(id: UUID(), title: "no date", status: .open, priority: 1, due: nil))
        }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        let error = try #require(errors.withLock { $0.first })
        guard case .appCodeFailed(let failure) = error else {
            Issue.record("expected appCodeFailed, got \(error)")
            return
        }
        #expect(failure.error is PredicateError, "\(type(of: failure.error))")
        token.cancel()
    }
}

/// Version 2 of `Task` as another app writes it: `rank` is text.
struct TaskWithTextRank: Persistable {
    var id: Int
    var title: String
    var rank: String
    var done: Bool
    var group: String
    static let schema = Schema<TaskWithTextRank>(
        name: "Task", primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
}

/// Issue 23, finding 3: reading results called `preconditionFailure` when a record did not decode
/// (the process died). Every read now throws, and the records around it can still be read.
@Suite struct UndecodableRecordTests {
    let tmp = TemporaryDirectory()

    @Test func everyReadOfResultsThrowsAndNothingStopsTheProgram() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in [1, 2, 4, 5] {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g"))
            }
        }
        // A newer version of the app (here another store object) writes a record this one cannot read.
        let newer = try Store(
            at: tmp.url, configuration: StoreConfiguration(checksTypesAtOpen: false),
            types: [TaskWithTextRank.self])
        try newer.write { tx in
            try tx.insert(
                TaskWithTextRank(id: 3, title: "from a newer app", rank: "high", done: false, group: "g"))
        }
        func expectUndecodable(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            let error = lodeError(body, sourceLocation: sourceLocation)
            guard case .recordDoesNotDecode(let type, let key, let field, _)? = error else {
                Issue.record(
                    "expected recordDoesNotDecode, got \(String(describing: error))",
                    sourceLocation: sourceLocation)
                return
            }
            #expect(type == "Task" && key == "3" && field == "rank", sourceLocation: sourceLocation)
        }
        let all = store.objects(Task.self)
        // The keys need no decoding: count and identities answer.
        #expect(try all.count == 5)
        #expect(try all.objectIDs.count == 5)
        #expect(try all[1].id == 2)
        expectUndecodable { _ = try all[2] }
        #expect(try all[3].id == 4)
        expectUndecodable { _ = try all.fetch() }
        expectUndecodable { _ = try all.map(\.id) }
        // A cursor throws for the record alone and goes on.
        var cursor = try all.makeCursor()
        var read: [Int] = []
        var failures = 0
        while cursor.position < cursor.count {
            do {
                if let task = try cursor.next() { read.append(task.id) }
            } catch {
                failures += 1
            }
        }
        #expect(read == [1, 2, 4, 5])
        #expect(failures == 1)
        // A query that checks objects in memory throws from count too.
        let titled = all.filter(#Predicate { $0.title != "" })
        expectUndecodable { _ = try titled.count }
        expectUndecodable { _ = try titled.first }
        expectUndecodable { _ = try all.sectioned(by: \.group).sections }
        expectUndecodable { _ = try titled.live() }
        // Live results created before the record arrived deliver the error and stay usable.
        try store.write { tx in try tx.delete(Task.self, key: 3) }
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        #expect(try live.results.map(\.id) == [1, 2, 4, 5])
        try newer.write { tx in
            try tx.insert(TaskWithTextRank(id: 3, title: "again", rank: "low", done: false, group: "g"))
        }
        expectUndecodable { _ = try live.refresh() }
        #expect(try live.results.map(\.id) == [1, 2, 4, 5], "the live results stay on their version")
        // Once the record is gone, the live results advance past it.
        try newer.write { tx in _ = try tx.delete(TaskWithTextRank.self, key: 3) }
        _ = try live.refresh()
        #expect(try live.results.map(\.id) == [1, 2, 4, 5])
    }
}
