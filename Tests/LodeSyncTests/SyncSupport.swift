import Foundation
import ModelStorage
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// An object the sync tests keep on the server.
struct SyncNote: Persistable, Equatable, CustomStringConvertible {
    var id: Int
    var title: String
    var owner: String
    var rank: Int
    var done: Bool
    static let schema = Schema<SyncNote>(
        name: "Note", primaryKey: \.id, indexes: [.on(\.rank), .on(\.owner)])
    var description: String { "#\(id)(\(title), \(owner), rank \(rank)\(done ? ", done" : ""))" }
}

/// A type whose name is hostile SQL: setup and sync must treat it as a name, nothing more.
struct SyncHostile: Persistable, Equatable {
    var key: String
    var value: String
    static let schema = Schema<SyncHostile>(name: "Robert\"); DROP TABLE lode_server; --", primaryKey: \.key)
}

/// A type with a merge function in some tests: counters add up.
struct SyncCounter: Persistable, Equatable {
    var id: UUID
    var count: Int
    var labels: [String]
    static let schema = Schema<SyncCounter>(primaryKey: \.id)
}

/// The test cluster, or a recorded issue naming why there is none.
func testCluster() throws -> PostgresTestCluster {
    try PostgresTestCluster.shared.get()
}

/// A fresh database on the test cluster with the sync tables of `types`.
func syncServer(for types: [any Persistable.Type], schema: String = "lode") throws -> SyncServer {
    let server = SyncServer(connectionString: try testCluster().makeDatabase(), schema: schema)
    try server.setUp(for: types)
    return server
}

/// Runs `sql` on the server's database with psql.
@discardableResult
func psql(_ server: SyncServer, _ sql: String) throws -> String {
    try testCluster().psql(sql, database: PostgresTestCluster.database(of: server.connectionString))
}

/// Fast options for tests: short backoff and polling.
let testSyncOptions = SyncOptions(
    pollInterval: .milliseconds(500), minimumBackoff: .milliseconds(20), maximumBackoff: .milliseconds(400))

/// Waits until `condition` holds (checked every 20 ms), up to `timeout`.
func eventually(
    timeout: Duration = .seconds(20), _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return }
        Thread.sleep(forTimeInterval: 0.02)
    }
    Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
}

/// Follows a live result and checks each change it delivers by replaying it on a list mirror of the
/// previous rows: the replay must give the new rows exactly.
final class LiveRecorder<Element: Persistable & Equatable>: @unchecked Sendable {
    private let lock = NSLock()
    private var shown: [Element] = []
    private var problems: [String] = []
    private var delivered = 0
    private var token: ObservationToken?

    init(_ results: Results<Element>) {
        token = results.observe(on: DispatchQueue(label: "sync live recorder")) { [self] change in
            switch change {
            case .initial(let results):
                do {
                    let rows = try results.fetch()
                    lock.withLock { shown = rows }
                } catch {
                    lock.withLock { problems.append("initial fetch: \(error)") }
                }
            case .update(let results, let change):
                do {
                    let new = try results.fetch()
                    let old = lock.withLock { shown }
                    var mirror = ListMirror(sections: [old])
                    try mirror.apply(change.storageUpdate { new[$0] }, dataSource: [new])
                    lock.withLock {
                        if mirror.sections[0] != new { problems.append("replay of \(change) differs") }
                        shown = new
                        delivered += 1
                    }
                } catch {
                    lock.withLock { problems.append("\(change): \(error)") }
                }
            case .error(let error):
                lock.withLock { problems.append("\(error)") }
            }
        }
    }

    /// The rows after the last change delivered.
    var rows: [Element] { lock.withLock { shown } }
    /// Changes that did not replay, and errors delivered.
    var failures: [String] { lock.withLock { problems } }
    /// How many updates were delivered.
    var updates: Int { lock.withLock { delivered } }

    func cancel() { token?.cancel() }
}

/// A client of `store` on `server` with the tests' options, started.
func startedClient(
    _ store: Store, _ server: SyncServer, _ types: [SyncedType] = [.type(SyncNote.self)]
) throws -> SyncClient {
    let client = try SyncClient(store: store, server: server, types: types, options: testSyncOptions)
    client.start()
    return client
}

/// A project of the sync tests' linked types: deleting it deletes its tasks (cascade).
struct SyncProject: Persistable, Equatable {
    var id: Int
    var name: String
    static let schema = Schema<SyncProject>(name: "Project", primaryKey: \.id)
}

/// A task filed under a project.
struct SyncTask: Persistable, Equatable {
    var id: Int
    var title: String
    var project: Link<SyncProject>?
    static let schema = Schema<SyncTask>(
        name: "Task", primaryKey: \.id, links: [.to(\.project, onDelete: .cascade)])
}
