import Dispatch
import Foundation
import Lode
import LodeInspection
import StoredQuery
import Synchronization

/// Set by SIGINT and SIGTERM: `watch` finishes the commit it is printing and exits cleanly.
let stopRequested = Atomic<Bool>(false)

/// Makes SIGINT and SIGTERM set ``stopRequested`` (a long-running command finishes what it is doing
/// and exits cleanly).
func stopOnInterrupt() {
    signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
    // A parent may have started us with these signals blocked (the mask is inherited): unblock them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
}

/// `watch`: follows commits of any process through the library's notifier and change feed,
/// printing each object inserted, updated or deleted (of `type` only, and matching `filter`, when
/// given) until Ctrl-C or `seconds` have passed. Objects are shown as they are at the version of the
/// batch of commits being printed.
func watch(_ path: String, type: String?, filter: WhereExpression?, seconds: Double?) throws {
    let store = try openStore(path)
    if let type { _ = try store.read { tx in try tx.storedType(named: type) } }
    guard store.hasChangeLog else {
        throw DumpError(description: "\(path): the store has no change log to follow")
    }
    stopOnInterrupt()
    let deadline = seconds.map { Date().addingTimeInterval($0) }
    let start = try store.read { $0.version }
    print("watching \(path) from version \(start)\(type.map { ", type \($0)" } ?? "") (Ctrl-C stops)")
    fflush(nil)
    let printed = Mutex<(version: Int, failure: (any Error)?)>((start, nil))
    let queue = DispatchQueue(label: "lode-dump.watch")
    let token = store.observeCommits(after: start, on: queue) { event in
        do {
            switch event {
            case .commits(let batch):
                try print(batch, type: type, filter: filter)
                printed.withLock { $0.version = batch.version }
            case .error(let error):
                throw error
            }
        } catch {
            printed.withLock { $0.failure = error }
        }
        fflush(nil)
    }
    while !stopRequested.load(ordering: .relaxed), printed.withLock({ $0.failure }) == nil {
        if let deadline, Date() >= deadline { break }
        Thread.sleep(forTimeInterval: 0.02)
    }
    token.cancel()
    queue.sync {}  // a batch being printed finishes before the last line
    let (version, failure) = printed.withLock { $0 }
    if let failure { throw failure }
    print(
        "stopped at version \(version)\(stopRequested.load(ordering: .relaxed) ? " (interrupted)" : " (time limit)")"
    )
}

/// Prints one batch of commits: each change of `type` (or every type), objects matching `filter`.
private func print(_ batch: CommitBatch, type: String?, filter: WhereExpression?) throws {
    if !batch.history.isComplete, let first = batch.history.firstAvailable {
        print("(the change log was pruned: commits before version \(first) were missed)")
    }
    try batch.read { tx in
        for commit in batch.history.commits {
            for change in commit.changes {
                if let type, change.type != type { continue }
                var line = "\(commit.version)  \(describe(change))"
                switch change.kind {
                case .insert, .update:
                    guard let record = try tx.storedRecord(of: change.type, key: change.key) else {
                        print(line + "  (gone since)")
                        continue
                    }
                    let object = try record.value(type: change.type)
                    if let filter, !filter.matches(object) { continue }
                    line += "  " + object.json
                case .delete, .clear, .bulk: break
                }
                print(line)
            }
        }
    }
}
