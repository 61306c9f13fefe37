import Foundation
import LMDB
import LodeLive
import LodeStore

/// The work of one ``SyncClient``, on a thread of its own: connect, send the batch in flight, download
/// what the server has, upload what the store has, wait for a notification, a local commit or the
/// poll interval; on a failure, disconnect and try again with backoff.
///
/// Everything here runs on the engine's thread except ``wake()`` and ``stop()``; the connection and
/// the round state are the thread's alone. Locks: `control` and the status board are leaves.
final class SyncEngine: @unchecked Sendable {
    let store: Store
    let server: SyncServer
    let types: [SyncedType]
    let options: SyncOptions
    let board = StatusBoard()
    let hooks = SyncTestHooks()
    let state: SyncState
    let clientID: String

    /// Whether the thread should go on (read by the thread at every step).
    private let control = Locked<Bool>(false, name: "the sync engine's control")
    /// Serializes ``start()`` and ``stop()``: a client is started and stopped many times (an app stops
    /// sync in the background and starts it again), each start making a thread that its stop waits for.
    /// Lock order: only `start()` and `stop()` take it, called by the app (or `deinit`); while it is held
    /// they call into the store (`observeCommits`, cancelling the feed) and wait for the engine's thread,
    /// and none of those — the feed's handler and the thread included — ever takes it.
    private let lifecycle = NSLock()
    /// Signalled by the thread when it ends.
    private let finished = DispatchSemaphore(value: 0)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var connection: PostgresConnection?
    /// The engine's thread and the commit feed that wakes it, once started.
    private let threadState = Locked<(thread: Thread?, feed: ObservationToken?)>(
        (nil, nil), name: "the sync thread")
    /// Rows the current round could not apply (reported as its last error).
    private var problems: [SyncError] = []
    /// The rows downloads skipped and noted (see `retryRejected(on:)`), as the thread knows them.
    var rejectedRows: Set<RejectedRow> = []
    /// Whether this start of the thread has read the skipped rows again.
    private var retried = false
    /// The error of the last row skipped, reported while rows stay skipped.
    private var lastSkipped: SyncError?
    /// Where the last upload batch that could not hold every dirty object ended (see
    /// ``UploadProgress``).
    var uploadProgress: UploadProgress?

    init(store: Store, server: SyncServer, types: [SyncedType], options: SyncOptions) throws {
        try ServerSchema.validate(schema: server.schema)
        var names = Set<String>()
        for type in types {
            try ServerSchema.validate(typeName: type.name)
            guard names.insert(type.name).inserted else {
                throw SyncError.invalidConfiguration("the type \(type.name) is listed twice")
            }
        }
        self.store = store
        self.server = server
        self.types = types
        self.options = options
        state = try SyncState(store: store, types: types.map(\.name))
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SyncError.store("could not make a pipe: errno \(errno)") }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        wakeRead = fds[0]
        wakeWrite = fds[1]
        clientID = try Self.prepare(store: store, state: state, types: types)
        let (cursor, _) = try store.read { tx in (try state.downloadCursor(in: tx.lmdb), 0) }
        board.update { $0.lastServerVersion = cursor }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Reads (or makes) the client's id, and starts the download again from the beginning for a type
    /// whose filter changed: its shadows go back to version 0, so every row is looked at again and a
    /// row now outside the filter leaves the store.
    private static func prepare(store: Store, state: SyncState, types: [SyncedType]) throws -> String {
        try store.write { tx in
            let id: String
            if let known = try state.text(SyncState.clientKey, in: tx.lmdb) {
                id = known
            } else {
                id = UUID().uuidString.lowercased()
                try state.setText(id, SyncState.clientKey, in: tx)
            }
            var restart = false
            for (index, type) in types.enumerated() {
                let key = Array((SyncState.filterPrefix + type.name).utf8)
                let fingerprint = type.filter?.fingerprint ?? ""
                let stored = try state.text(key, in: tx.lmdb)
                guard stored != fingerprint else { continue }
                if stored != nil || fingerprint != "" {
                    restart = true
                    var reset: [([UInt8], Shadow)] = []
                    try tx.lmdb.forEachEntry(in: state.shadows[index]) { entry in
                        guard var shadow = entry.value.withUnsafeBytes({ Shadow($0) }) else { return true }
                        shadow.version = 0
                        reset.append((entry.key, shadow))
                        return true
                    }
                    for (key, shadow) in reset { try state.setShadow(shadow, type: index, key: key, in: tx) }
                }
                try state.setText(fingerprint, key, in: tx)
            }
            if restart { try state.setInteger(0, SyncState.downloadKey, in: tx) }
            // A store that holds nothing of its synced types has nothing to upload: its upload cursor
            // starts here, so a first download is not read back as candidates.
            if try state.uploadCursor(in: tx.lmdb) == nil {
                var empty = true
                for (index, type) in types.enumerated() where empty {
                    if let records = try type.operations.records(in: tx), try tx.lmdb.count(in: records) > 0 {
                        empty = false
                    }
                    if try tx.lmdb.count(in: state.shadows[index]) > 0 { empty = false }
                }
                if empty { try state.setUploadCursor(tx.version, in: tx) }
            }
            return id
        }
    }

    // MARK: Control

    /// Starts the thread, unless it runs already. A stopped engine starts again: a new thread, a new
    /// connection, from where the store says the last one left off.
    func start() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        guard threadState.withLock({ $0.thread == nil }) else { return }
        control.withLock { $0 = true }
        board.reopen()
        let names = Set(types.map(\.name))
        let start: Int
        do {
            start = try store.read { $0.version }
        } catch {
            start = 0
            board.update { $0.lastError = .store("\(error)") }
        }
        let feed = store.observeCommits(after: start) { [weak self] event in
            guard let self else { return }
            switch event {
            case .commits(let batch):
                if batch.history.commits.contains(where: { $0.changes.contains { names.contains($0.type) } })
                    || !batch.history.isComplete
                {
                    self.wake()
                }
            case .error(let error):
                self.board.update { $0.lastError = .store("\(error)") }
                self.wake()
            }
        }
        let thread = Thread { [self] in run() }
        thread.name = "lode-sync"
        threadState.withLock { $0 = (thread, feed) }
        thread.start()
    }

    /// Makes the engine look again at once.
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Stops the engine and waits for its thread (a statement under way finishes first; the
    /// connection's timeouts bound it).
    func stop() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        control.withLock { $0 = false }
        let (thread, feed) = threadState.withLock { state in
            defer { state = (nil, nil) }
            return state
        }
        feed?.cancel()
        if thread != nil {
            wake()
            finished.wait()
        }
        board.finish()
    }

    private var running: Bool { control.withLock { $0 } }

    // MARK: The loop

    private func run() {
        var backoff = options.minimumBackoff
        retried = false
        while running {
            do {
                if connection == nil {
                    try connect()
                    backoff = options.minimumBackoff
                }
                try round()
                guard running else { break }
                try waitForWork(timeout: options.pollInterval)
            } catch {
                let failure = Self.syncError(error)
                if failure.isConnectionError || !(connection?.isOpen ?? false) {
                    connection?.close()
                    connection = nil
                }
                board.update {
                    $0.lastError = failure
                    $0.isConnected = self.connection != nil
                    $0.download = nil
                }
                guard running else { break }
                // Without a server no round counts the outbox: count it here, so that the status says
                // how many changes wait (woken by each local commit, this runs again).
                if connection == nil { countPendingUploads() }
                let jitter = Double.random(in: 0.8...1.2)
                sleepUnlessWoken(backoff * jitter)
                backoff = min(backoff * 2, options.maximumBackoff)
            }
        }
        connection?.close()
        connection = nil
        board.update { $0.isConnected = false }
        finished.signal()
    }

    /// Notes rows a download could not apply: the round reports the last as its error.
    func noteProblems(_ found: [SyncError]) {
        if let last = found.last {
            problems += found
            lastSkipped = last
        }
        if rejectedRows.isEmpty { lastSkipped = nil }
        let (skipped, last) = (rejectedRows.count, found.last)
        board.update {
            if let last { $0.lastError = last }
            $0.skippedRows = skipped
        }
    }

    static func syncError(_ error: Error) -> SyncError {
        if let error = error as? SyncError { return error }
        return .store("\(error)")
    }

    private func connect() throws {
        let made = try PostgresConnection(
            connectionString: server.connectionString, defaults: ConnectionDefaults.values)
        let names = types.map(\.name)
        do {
            try ServerSchema.check(made, schema: server.schema, types: names)
        } catch SyncError.serverNotSetUp(let message) {
            guard options.setsUpServer else { throw SyncError.serverNotSetUp(message) }
            try ServerSchema.setUp(made, schema: server.schema, types: names)
        }
        try made.execute("LISTEN " + PostgresConnection.quoted(ServerSchema.channel(server.schema)))
        try made.execute(Self.stagingTable)
        connection = made
        board.update { $0.isConnected = true }
    }

    /// One round: the batch in flight, then downloads and uploads until neither has anything to do.
    private func round() throws {
        let request = board.pendingRequest
        guard let connection else { return }
        problems = []
        _ = try connection.notifications()
        try resendInflight(on: connection)
        if !retried {
            try retryRejected(on: connection)
            retried = true
        }
        var rounds = 0
        var target: Int64?
        var waits = 0
        while running {
            let downloaded = try download(on: connection)
            // What was committed when the round began is what it must bring.
            if target == nil { target = downloaded.visible }
            let uploaded = try upload(on: connection)
            rounds += 1
            if !downloaded.applied && !uploaded {
                // Rows committed before the round began that the horizon keeps back (a transaction
                // that started before them still runs): read once it has passed them.
                guard let target, downloaded.horizon < target else { break }
                sleepUnlessWoken(.milliseconds(min(100, 1 << min(waits, 7))))
                waits += 1
                continue
            }
            if rounds > 1000 { break }
        }
        // A row still skipped keeps its error in the status until it applies.
        let lastProblem = problems.last ?? (rejectedRows.isEmpty ? nil : lastSkipped)
        // Only what changed is published: a round that changed nothing sends no status.
        board.update { $0.lastError = lastProblem }
        board.settle(upTo: request)
    }

    /// Waits for a notification on the connection, a wake-up, or the timeout.
    private func waitForWork(timeout: Duration) throws {
        guard let connection else { return }
        // Notifications that arrived while the round ran are already in libpq's buffer: the socket
        // would not say so.
        if try !connection.notifications().isEmpty { return }
        var fds = [
            pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&fds, 2, Int32(timeout.milliseconds))
        drainWakeups()
        if fds[0].revents != 0 { _ = try connection.notifications() }
    }

    private func sleepUnlessWoken(_ duration: Duration) {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, 1, Int32(duration.milliseconds))
        drainWakeups()
    }

    private func drainWakeups() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, 64) > 0 {}
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
