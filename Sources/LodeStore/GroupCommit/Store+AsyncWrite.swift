import Foundation
import LMDB

/// A result made on the group-commit thread, read by its caller after `finish` told it.
private final class ResultBox<R>: @unchecked Sendable {
    // @unchecked: written by the write's closure on the group-commit thread before `finish`, read by
    // the caller after `finish` resumed it.
    var value: R?
}

// MARK: - Group commit

extension Store {
    /// Runs `body` in a write transaction on the store's writer thread, so a task never holds a
    /// write transaction across an `await`.
    ///
    /// **Group commit.** Writes that arrive while another commits — from many tasks, or threads
    /// using ``groupedWrite(_:)`` — wait together and then run one after another in one
    /// transaction, each in its own savepoint, and one commit (one flush to disk) acknowledges them
    /// all. Each write is still all-or-nothing: a closure that throws rolls back alone and only its
    /// caller gets the error; the others commit. Observers see the group as one commit. A write
    /// waits at most for the commit in progress and for the writes queued before it; many
    /// concurrent durable writers get many times the commits per second of one-commit-per-write
    /// (see docs/BENCHMARKS.md, `concurrent-writers`). Write-map durability modes have no
    /// savepoints: there each write commits alone.
    ///
    /// A closure runs once, except that it runs again from the start when the whole group has to:
    /// when another process commits while the group grows the map (as ``write(_:)-86d6p`` describes), and
    /// when the group's commit itself fails, after which each write of the group runs again in a
    /// transaction of its own so that every caller gets the outcome of its own write.
    ///
    /// - Throws: ``LodeError/readOnly(path:)`` in a read-only store, ``LodeError/storeClosed(path:)`` after
    ///   the store closed and ``LodeError/storage(_:)`` when LMDB fails (a full disk included),
    ///   ``LodeError/storage(_:)`` too for a write begun on a thread already inside a write of the store
    ///   (rather than a deadlock), and whatever `body` throws (then nothing is written).
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> R) async throws
        -> R
    {
        guard !configuration.readOnly else { throw LodeError.readOnly(path: path) }
        _ = try environment()
        let box = ResultBox<R>()
        return try await withCheckedThrowingContinuation { continuation in
            let write = GroupedWrite(
                run: { tx in box.value = try body(tx) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: box.value!)
                    }
                })
            enqueue(write)
        }
    }

    /// Runs `body` in a write transaction that joins the writes of other threads and tasks arriving
    /// at the same time: group commit (see the async `write`) for threads. The closure runs on the
    /// store's writer thread while the calling thread waits; the result or error is this write's
    /// own. Use it where many threads commit durably at once; ``write(_:)-86d6p`` runs the closure on the
    /// calling thread and commits alone.
    ///
    /// - Throws: the nested-write ``LodeError/storage(_:)`` error when the calling thread is inside a
    ///   write of this store (waiting would deadlock), ``LodeError/readOnly(path:)``,
    ///   ``LodeError/storeClosed(path:)``, and whatever `body` throws.
    @discardableResult
    @available(*, noasync, message: "use the async write, which groups the same way")
    public func groupedWrite<R: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> R) throws
        -> R
    {
        guard !configuration.readOnly else { throw LodeError.readOnly(path: path) }
        try mapStorageErrors { try environment().refuseNestedWrite() }
        let box = ResultBox<R>()
        let failure = ResultBox<Error>()
        let done = DispatchSemaphore(value: 0)
        enqueue(
            GroupedWrite(
                run: { tx in box.value = try body(tx) },
                finish: { error in
                    failure.value = error
                    done.signal()
                }))
        done.wait()
        if let error = failure.value { throw error }
        return box.value!
    }

    private func enqueue(_ write: GroupedWrite) {
        guard groupCommit.add(write) else { return }
        groupCommit.queue.async { self.drainGroupedWrites() }
    }

    /// Commits the waiting writes, group by group, until none is left.
    private func drainGroupedWrites() {
        let savepoints = configuration.durability.lmdb.allowsNestedTransactions
        while true {
            let group = groupCommit.next()
            if group.isEmpty { return }
            if savepoints {
                commit(group)
            } else {
                for write in group { commit([write]) }
            }
        }
    }

    /// Commits `group` in one transaction and tells each write its outcome.
    private func commit(_ group: [GroupedWrite]) {
        let outcomes: [Error?]
        do {
            outcomes = try runInOneTransaction(group)
        } catch {
            if group.count > 1, !Self.endsEveryWrite(error) {
                // The shared commit failed: each write runs alone, so that each caller gets the
                // outcome of its own write.
                for write in group { commit([write]) }
            } else {
                for write in group { write.finish(error) }
            }
            return
        }
        for (write, outcome) in zip(group, outcomes) { write.finish(outcome) }
    }

    /// Errors every write of a group would meet alone as well.
    private static func endsEveryWrite(_ error: Error) -> Bool {
        switch error as? LodeError {
        case .storeClosed?, .readOnly?: return true
        default: return false
        }
    }

    /// Runs the writes of `group` in one write transaction, each in a savepoint of its own when
    /// there are several; returns each write's error (nil when it joined the commit).
    private func runInOneTransaction(_ group: [GroupedWrite]) throws -> [Error?] {
        try commitWrite { tx in
            var outcomes = [Error?](repeating: nil, count: group.count)
            if group.count == 1 {
                try group[0].run(tx)
                return outcomes
            }
            for (position, write) in group.enumerated() {
                do {
                    try tx.savepoint { try write.run($0) }
                } catch let error as LMDBError where error.code == .writeConflictDuringGrowth {
                    throw error  // the whole transaction is gone: the group runs again
                } catch let error as LodeError where error.isGrowthConflict {
                    throw error
                } catch let error as LMDBError {
                    outcomes[position] = LodeError(storage: error)
                } catch {
                    outcomes[position] = error
                }
            }
            return outcomes
        }
    }
}
