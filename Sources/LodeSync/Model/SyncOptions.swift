/// How a ``SyncClient`` paces itself.
public struct SyncOptions: Sendable {
    /// How often the client looks for server changes when no notification wakes it (notifications
    /// can be lost with a connection; this bounds how late a change can be seen).
    public var pollInterval: Duration
    /// The first wait before reconnecting after a failure; each failure doubles it up to
    /// `maximumBackoff` (with jitter), and a successful connection resets it.
    public var minimumBackoff: Duration
    /// The longest wait between reconnection attempts.
    public var maximumBackoff: Duration
    /// The most objects one upload batch carries (a bigger backlog goes in several batches).
    public var uploadBatchSize: Int
    /// The most rows one local commit of a download applies when a server transaction is larger
    /// (smaller server transactions are never split).
    public var downloadChunkSize: Int
    /// Creates the server tables when they are missing (``SyncServer/setUp(for:filterIndexes:)``) instead of
    /// reporting ``SyncError/serverNotSetUp(_:)``.
    public var setsUpServer: Bool

    /// Makes options; every parameter has a default.
    public init(
        pollInterval: Duration = .seconds(5), minimumBackoff: Duration = .milliseconds(100),
        maximumBackoff: Duration = .seconds(5), uploadBatchSize: Int = 20_000, downloadChunkSize: Int = 5_000,
        setsUpServer: Bool = false
    ) {
        self.pollInterval = pollInterval
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = maximumBackoff
        self.uploadBatchSize = uploadBatchSize
        self.downloadChunkSize = downloadChunkSize
        self.setsUpServer = setsUpServer
    }
}
