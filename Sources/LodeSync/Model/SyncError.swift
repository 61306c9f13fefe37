/// What went wrong while keeping a store in sync. None of the messages contains the connection
/// string or a password.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server could not be reached or refused the connection (libpq's message).
    case connectionFailed(String)
    /// An open connection broke (the server restarted, the backend was terminated, the network cut).
    case connectionLost(String)
    /// PostgreSQL refused a statement: its SQLSTATE code and message.
    case server(state: String, message: String)
    /// The server has no table for a synced type, or one that is not a Lode sync table: run the setup
    /// (`SyncServer.setUp(types:)`, `lode-sync setup`).
    case serverNotSetUp(String)
    /// A row on the server that cannot become an object of its type: the type, the row's key and why.
    /// The row is skipped; the rest of the batch is applied.
    case rowDoesNotDecode(type: String, key: String, reason: String)
    /// A server row the local store refused (a unique index already holds its value, a delete rule
    /// denied its deletion): the type, the row's key and why. The rest of the batch is applied.
    case rowRefused(type: String, key: String, reason: String)
    /// The sync configuration is wrong (a type listed twice, a key type sync cannot name as text…).
    case invalidConfiguration(String)
    /// ``SyncClient/synchronize(timeout:)-45or3`` gave up: the last error, or that none was reported.
    case timedOut(String)
    /// The local store failed (its error's description).
    case store(String)

    /// A sentence a user can act on.
    public var description: String {
        switch self {
        case .connectionFailed(let message): "could not connect to PostgreSQL: \(message)"
        case .connectionLost(let message): "the connection to PostgreSQL was lost: \(message)"
        case .server(let state, let message): "PostgreSQL refused a statement (SQLSTATE \(state)): \(message)"
        case .serverNotSetUp(let message): "the server is not set up for sync: \(message)"
        case .rowDoesNotDecode(let type, let key, let reason):
            "the server's row \(key) of \(type) does not decode, and was skipped: \(reason)"
        case .rowRefused(let type, let key, let reason):
            "the server's row \(key) of \(type) was not applied: \(reason)"
        case .invalidConfiguration(let message): "the sync configuration is invalid: \(message)"
        case .timedOut(let last): "sync did not settle in time (last error: \(last))"
        case .store(let message): "the local store failed: \(message)"
        }
    }

    /// True for errors that a new connection may cure (lost or refused connections); the engine
    /// reconnects after them with backoff.
    public var isConnectionError: Bool {
        switch self {
        case .connectionFailed, .connectionLost: true
        // Class 08 is connection exceptions; 57P01–57P03 a terminated backend or a server shutting
        // down; 40001 and 40P01 a transaction PostgreSQL asks to retry.
        case .server(let state, _):
            state.hasPrefix("08") || state.hasPrefix("57P") || state == "40001" || state == "40P01"
        default: false
        }
    }
}
