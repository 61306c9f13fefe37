import Dispatch
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
