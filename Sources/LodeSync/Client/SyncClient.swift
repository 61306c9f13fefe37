import Foundation
import LodeStore

/// Keeps a store in sync with a PostgreSQL server: local commits to the synced types go up, every
/// change on the server — from other clients and from any SQL client — comes down as ordinary
/// commits, which live results, sections and `LiveResultsStorage` see with exact changes.
///
/// ```swift
/// let server = SyncServer(connectionString: "host=db.example.com dbname=app passfile=/etc/app/pgpass")
/// try server.setUp(for: [Project.self, Task.self])          // once; idempotent
/// let sync = try SyncClient(store: store, server: server,
///                           types: [.type(Project.self), .type(Task.self)])
/// sync.start()
/// for await status in sync.statusUpdates { print(status.pendingUploads) }
/// ```
///
/// The client runs on a thread of its own. Writes made while the server is unreachable wait in the
/// store (the change log is the outbox) and go up on reconnection; a client killed at any moment
/// resumes where the store says it was. See the *Beyond one machine* article for the model and what
/// is promised.
public final class SyncClient: Sendable {
    let engine: SyncEngine

    /// Prepares a client for `store` (which should have `types` registered); nothing is sent until
    /// ``start()``.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for a type listed twice or a name the server
    ///   cannot hold, ``SyncError/store(_:)`` when the store cannot keep the sync state.
    public init(store: Store, server: SyncServer, types: [SyncedType], options: SyncOptions = SyncOptions())
        throws
    {
        engine = try SyncEngine(store: store, server: server, types: types, options: options)
    }

    deinit { engine.stop() }

    /// The client's id on the server (kept in the store; a copy of the store is the same client).
    public var clientID: String { engine.clientID }

    /// Starts syncing in the background; does nothing while the client runs. A stopped client starts
    /// again (an app stops sync when it goes to the background and starts it when it comes back):
    /// it reconnects and goes on from where the store says it was.
    public func start() { engine.start() }

    /// Stops syncing and waits for the client's thread; a statement under way finishes first
    /// (seconds at most: the connection's timeouts bound it). Local writes keep queuing in the store,
    /// and ``start()`` sends them.
    public func stop() { engine.stop() }

    /// The client's status now.
    public var status: SyncStatus { engine.board.status }

    /// The status as it changes, starting with the current one; ends when the client stops (a client
    /// started again gives new sequences).
    public var statusUpdates: AsyncStream<SyncStatus> { engine.board.stream() }

    /// Looks for changes on both sides now instead of at the next notification or poll.
    public func syncNow() { engine.wake() }

    /// Waits until a round that began after this call ended with everything uploaded and every
    /// server change up to that round downloaded.
    /// - Throws: ``SyncError/timedOut(_:)`` (with the last error, if any) when that takes longer than
    ///   `timeout`.
    public func synchronize(timeout: Duration = .seconds(30)) throws {
        let request = engine.board.request()
        engine.wake()
        let deadline = Date().addingTimeInterval(Double(timeout.milliseconds) / 1000)
        guard engine.board.wait(for: request, until: deadline) else {
            throw SyncError.timedOut(engine.board.status.lastError?.description ?? "no error was reported")
        }
    }

    /// ``synchronize(timeout:)`` without blocking the caller's thread.
    public func synchronize(timeout: Duration = .seconds(30)) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            DispatchQueue.global().async {
                do {
                    try self.synchronize(timeout: timeout)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
