import Dispatch
import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// The history as a live source: each advance reads the history entries between the version it had
/// and the snapshot's, in that snapshot — of every process's commits, none skipped or delivered
/// twice. With `batch`, an advance reads at most that many commits and leaves the rest for the next.
final class HistoryFeed: LiveSource {
    let store: Store
    private let current: Locked<Int>
    private let batch: Int?

    init(store: Store, after version: Int, batch: Int? = nil) {
        self.store = store
        self.current = Locked(version)
        self.batch = batch
    }

    var version: Int { current.withLock { $0 } }

    func advance(to snapshot: ReadSnapshot) throws -> [HistoryTransaction]? {
        let from = version
        let found = try mapStorageErrors {
            try snapshot.read { txn in
                try Transaction(store: store, lmdb: txn).history(
                    since: HistoryToken(version: from), limit: batch)
            }
        }
        // A batch cut short stands at its last commit; the rest is read by the next advance.
        let reached = batch.map { found.count >= $0 } == true ? found.last!.version : snapshot.transactionID
        current.withLock { $0 = reached }
        return found.isEmpty ? nil : found
    }

    /// A follower of the history is never silenced: it must see every commit.
    func advanceSilently(to snapshot: ReadSnapshot) throws {}
}

extension Store {
    /// Follows the store's history after `token`: `handler` receives every commit's
    /// ``HistoryTransaction`` — of every process — in order, each exactly once, on `queue` (by
    /// default a serial queue of the observation's own), batched when several arrive while it is
    /// busy; and every error (a token older than the history kept is
    /// ``LodeError/historyUnavailable(reason:)``, after which nothing more is delivered until a
    /// commit).
    public func observeHistory(
        since token: HistoryToken, on queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (Result<[HistoryTransaction], LodeError>) -> Void
    ) -> ObservationToken {
        let observation = ObservationToken()
        let driver = ObservationDriver(
            source: HistoryFeed(store: self, after: token.version),
            queue: queue ?? DispatchQueue(label: "lode.history"), token: observation, consumer: handler)
        driver.start()
        return observation
    }

    /// The store's history after `token` as an asynchronous sequence of commits, for followers (a
    /// widget, an indexer, a sync client): it waits for commits — of every process — and yields each
    /// one's ``HistoryTransaction`` in order, reading at most a few thousand ahead of what was
    /// consumed; it ends when the consuming task is cancelled, and throws what reading the history
    /// throws (``LodeError/historyUnavailable(reason:)`` for a token older than the history kept).
    ///
    /// ```swift
    /// for try await commit in store.historyUpdates(since: savedToken) {
    ///     apply(commit)
    ///     savedToken = commit.token
    /// }
    /// ```
    public func historyUpdates(since token: HistoryToken) -> HistoryUpdates {
        let store = self
        return HistoryUpdates(
            base: LiveChanges { demand, yield in
                let observation = ObservationToken()
                let driver = ObservationDriver(
                    source: HistoryFeed(store: store, after: token.version, batch: 4_096),
                    queue: DispatchQueue(label: "lode.history"), token: observation, demand: demand
                ) { yield($0) }
                driver.start()
                return observation
            })
    }
}

/// The commits of a store's history as they are made (see ``Store/historyUpdates(since:)``).
public struct HistoryUpdates: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = HistoryTransaction

    let base: LiveChanges<Result<[HistoryTransaction], LodeError>>

    /// Starts following; it stops when the iterator is released or its task is cancelled.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }

    /// Yields the commits of each batch read, then waits for the next.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: LiveChanges<Result<[HistoryTransaction], LodeError>>.AsyncIterator
        var pending: [HistoryTransaction] = []
        var position = 0

        /// The next commit, once it is made.
        ///
        /// - Throws: what reading the history throws.
        public mutating func next() async throws -> HistoryTransaction? {
            while position == pending.count {
                guard let batch = await base.next() else { return nil }
                pending = try batch.get()
                position = 0
            }
            defer { position += 1 }
            return pending[position]
        }
    }
}
