import Dispatch
import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// Something a notifier wakes after a commit.
protocol CommitObserver: AnyObject, Sendable {
    /// The store has a version newer than any handed out before: `snapshot` holds it. Called on the
    /// notifier's queue; the observer advances to this version or a newer one.
    func storeDidCommit(_ snapshot: ReadSnapshot)
    /// Looking for commits failed (the store was closed, LMDB failed): the observer delivers the error.
    func notifierDidFail(_ error: LodeError)
}

/// One per store: notices commits — of this process at once, of other processes by polling — and
/// wakes every live observation with a snapshot of the new version. Observations compute their
/// changes on their own queues, from the version they had to the newest one, so commits that
/// arrive while an observer is busy are coalesced into one exact change.
///
/// A version counts as seen only once a read transaction holds it: `mdb_env_info`'s last id can run
/// ahead of what a read transaction begun right after it sees, so it never counts. The snapshot that
/// holds the version is handed to the observers, which advance at least to it: every version the
/// notifier saw reaches every observer.
///
/// Lock order: `lock` (the observer list) is a leaf. Observers are called on the notifier's queue
/// with no lock held.
final class Notifier: @unchecked Sendable {
    // @unchecked: `observers` is guarded by `lock`; `lastSeen` and `stopped` are only touched on
    // `queue`; `timer` is set once.
    private weak var store: Store?
    private let queue = DispatchQueue(label: "lode.notifier")
    private let timer: any DispatchSourceTimer
    private let lock = LodeLock("Notifier")
    private var observers: [ObjectIdentifier: WeakObserver] = [:]
    private var lastSeen = -1
    private var stopped = false

    private struct WeakObserver {
        weak var observer: (any CommitObserver)?
    }

    init(store: Store, interval: Duration) {
        self.store = store
        timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds =
            Int(interval.components.seconds) * 1_000_000_000
            + Int(interval.components.attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now(), repeating: .nanoseconds(Swift.max(nanoseconds, 1_000_000)))
        timer.setEventHandler { [weak self] in self?.check() }
        timer.resume()
    }

    deinit { timer.cancel() }

    func add(_ observer: any CommitObserver) {
        lock.withLock { observers[ObjectIdentifier(observer)] = WeakObserver(observer: observer) }
    }

    func remove(_ observer: any CommitObserver) {
        lock.withLock { observers[ObjectIdentifier(observer)] = nil }
    }

    /// A commit of this process: look now rather than at the next tick. The look runs on the
    /// committing thread (as the queue: it waits for a tick in progress), which saves a thread
    /// wake-up per commit on the way to the observers; it only takes a snapshot and schedules
    /// deliveries on the observers' own queues.
    func storeDidCommit() { queue.sync { check() } }

    private var current: [any CommitObserver] {
        lock.withLock {
            observers = observers.filter { $0.value.observer != nil }
            return observers.values.compactMap(\.observer)
        }
    }

    private func check() {
        guard !stopped else { return }
        guard let store else {
            stop()
            return
        }
        let snapshot: ReadSnapshot
        do {
            snapshot = try store.currentSnapshot()
        } catch {
            let failure = LodeError(error)
            // A closed store stays closed: say so once and stop looking.
            if case .storeClosed = failure { stop() }
            for observer in current { observer.notifierDidFail(failure) }
            return
        }
        guard snapshot.transactionID > lastSeen else { return }
        lastSeen = snapshot.transactionID
        for observer in current { observer.storeDidCommit(snapshot) }
    }

    private func stop() {
        stopped = true
        timer.cancel()
    }
}
