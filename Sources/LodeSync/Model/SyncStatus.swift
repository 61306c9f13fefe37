/// Where a client stands, as ``SyncClient/status`` and ``SyncClient/statusUpdates`` report it.
public struct SyncStatus: Sendable, Equatable {
    /// True while a connection to the server is open.
    public var isConnected = false
    /// Local changes not yet acknowledged by the server, in objects: counted at each round, and while
    /// the server cannot be reached at each attempt to reach it (a local commit makes one at once), so
    /// a "changes waiting to sync" badge follows writes made offline. Past one upload batch the
    /// objects named by the change log are counted without reading them. 0 when all is uploaded.
    public var pendingUploads = 0
    /// The last server version whose changes are all in the store.
    public var lastServerVersion: Int64 = 0
    /// The last error, if the last attempt failed or a row was skipped; cleared by the next
    /// successful round with nothing skipped.
    public var lastError: SyncError?
    /// Rows of the server the store does not hold because the app's types could not read them
    /// (``SyncError/rowDoesNotDecode(type:key:reason:)``, or refused by the store): each is read again
    /// when the client starts — after an update of the app — until it applies. The last one's error
    /// stays in ``lastError`` while any is skipped.
    public var skippedRows = 0
    /// The download under way, when one is: rows applied and rows to apply (known for a store's first
    /// download; later rounds report rows applied and 0).
    public var download: DownloadProgress?

    /// How far a download has come.
    public struct DownloadProgress: Sendable, Equatable {
        /// Rows applied so far.
        public var applied: Int
        /// Rows in the download, 0 when not counted.
        public var total: Int
    }
}
