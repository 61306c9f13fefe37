import Dispatch
import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// Commits delivered together, with the store as it is at the newest of them.
public struct CommitBatch: Sendable {
    /// The commits, and whether the log still held all of them.
    public let history: CommitHistory
    /// The version the batch leads to: the store as ``read(_:)`` sees it.
    public let version: Int
    let store: Store
    let snapshot: ReadSnapshot

    /// Reads the store at the batch's version (objects as the last commit of the batch left them).
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes, and whatever `body` throws.
    public func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        try mapStorageErrors { try snapshot.read { txn in try body(Transaction(store: store, lmdb: txn)) } }
    }
}

/// The change log as a live source: each advance reads the commits between the version it had
/// and the snapshot's, in that snapshot, so no commit is skipped or delivered twice.
final class CommitFeed: LiveSource {
    let store: Store
    private let current: Locked<Int>

    init(store: Store, after version: Int) {
        self.store = store
        self.current = Locked(version)
    }

    package var version: Int { current.withLock { $0 } }

    func advance(to snapshot: ReadSnapshot) throws -> CommitBatch? {
        let from = version
        let history = try mapStorageErrors {
            try snapshot.read { txn in try Transaction(store: store, lmdb: txn).commits(after: from) }
        }
        current.withLock { $0 = snapshot.transactionID }
        guard !history.commits.isEmpty || !history.isComplete else { return nil }
        return CommitBatch(
            history: history, version: snapshot.transactionID, store: store, snapshot: snapshot)
    }
}

extension Store {
    /// Follows the commits of every process after `version` (typically `try store.read { $0.version }`):
    /// `handler` receives them in order on `queue` (by default a serial queue of the observation's
    /// own), each exactly once — batched when several arrive while the handler is busy — and every
    /// error. Versions come from read transactions, never from the environment's last id, so a
    /// commit that a reader could not see yet is delivered with the next batch, not skipped.
    public func observeCommits(
        after version: Int, on queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (CommitFeedEvent) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let driver = ObservationDriver(
            source: CommitFeed(store: self, after: version),
            queue: queue ?? DispatchQueue(label: "lode.commits"), token: token
        ) { result in
            switch result {
            case .success(let batch): handler(.commits(batch))
            case .failure(let error): handler(.error(error))
            }
        }
        driver.start()
        return token
    }
}
