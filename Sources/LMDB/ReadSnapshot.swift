import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A read transaction kept open across calls: a pinned, consistent view of one committed version
/// that outlives a single closure (lazy query results read from it long after they were evaluated).
///
/// Between calls to ``read(_:)`` the snapshot holds no pointer into the map, so the map may be grown
/// or re-adopted underneath it; inside ``read(_:)`` it holds the resize lock like any transaction.
/// A snapshot holds a reader slot and keeps the pages of its version from being reused: release it
/// (drop the last reference) when it is no longer needed.
public final class ReadSnapshot: @unchecked Sendable {
    // @unchecked: `handle` is only used inside `read`, under `lock` (and the resize lock shared);
    // the environment is opened with `MDB_NOTLS`, so the transaction may move between threads.
    /// The environment it reads.
    public let environment: Environment
    /// The id of the version it sees.
    public let transactionID: Int
    /// The environment's ``Environment/databaseGeneration`` when the snapshot began: it can read the
    /// databases open then.
    public let databaseGeneration: Int
    private var handle: OpaquePointer?
    private let lock = Lock()

    init(environment: Environment, handle: OpaquePointer, databaseGeneration: Int) {
        self.environment = environment
        self.handle = handle
        self.transactionID = Int(mdb_txn_id(handle))
        self.databaseGeneration = databaseGeneration
    }

    deinit {
        if let handle { mdb_txn_abort(handle) }
    }

    /// Runs `body` with a read transaction on the pinned version. Calls from several threads are
    /// serialized.
    ///
    /// - Throws: whatever `body` throws, and ``LMDBError`` when the snapshot's transaction cannot be renewed.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        LockWatch.check(entering: "an LMDB read of a snapshot")
        return try environment.withMapAccess { _ in
            try lock.withLock {
                guard let handle else {
                    throw LMDBError(
                        .transactionNotActive, operation: "snapshot read",
                        message: "the snapshot was released")
                }
                let txn = ReadTransaction(environment: environment, handle: handle)
                defer {
                    txn.closeCursors()
                    txn.handle = nil
                }
                return try body(txn)
            }
        }
    }
}

extension Environment {
    /// Pins the last committed version as a ``ReadSnapshot``.
    ///
    /// - Throws: ``LMDBError`` when a read transaction cannot begin (`.readersFull`).
    public func snapshot() throws -> ReadSnapshot {
        for attempt in 0..<2 {
            let outcome = withMapAccess { reentrant -> Result<ReadSnapshot, LMDBError>? in
                // Read before beginning: the snapshot sees at least the handles open at this point.
                let generation = databaseGeneration
                var txn: OpaquePointer?
                var rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                if rc == MDB_READERS_FULL {
                    _ = try? clearStaleReaders()
                    rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                }
                if rc == MDB_MAP_RESIZED && !reentrant && attempt == 0 { return nil }
                if rc != 0 {
                    return .failure(LMDBError(returnCode: rc, operation: "mdb_txn_begin (snapshot)"))
                }
                return .success(ReadSnapshot(environment: self, handle: txn!, databaseGeneration: generation))
            }
            if let outcome { return try outcome.get() }
            try read { _ in }  // adopts the map another process grew, then try again
        }
        throw LMDBError(.mapResized, operation: "snapshot", message: "the map kept changing size; retry")
    }
}
