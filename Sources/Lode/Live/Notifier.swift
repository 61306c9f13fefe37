import Dispatch
import Foundation

/// Something a notifier wakes after a commit.
protocol CommitObserver: AnyObject {
    /// Called on the notifier's queue when the store has a version newer than `version`.
    func storeDidCommit(version: Int)
}

/// One per store: notices commits — of this process at once, of other processes by polling the last
/// transaction id — and wakes every live observation. Observations compute their changes themselves,
/// on their own queues, from the version they had to the newest one, so commits that arrive while an
/// observer is busy are coalesced into one exact change.
final class Notifier: @unchecked Sendable {
    private weak var store: Store?
    private let queue = DispatchQueue(label: "lode.notifier")
    private let timer: any DispatchSourceTimer
    private let lock = NSLock()
    private var observers: [ObjectIdentifier: WeakObserver] = [:]
    private var lastSeen = -1

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

    func stop() { timer.cancel() }

    func add(_ observer: any CommitObserver) {
        lock.withLock { observers[ObjectIdentifier(observer)] = WeakObserver(observer: observer) }
    }

    func remove(_ observer: any CommitObserver) {
        lock.withLock { observers[ObjectIdentifier(observer)] = nil }
    }

    /// A commit of this process: look now rather than at the next tick.
    func wake() { queue.async { [weak self] in self?.check() } }

    private func check() {
        guard let store, let environment = try? store.environment() else { return }
        let version = environment.info.lastTransactionID
        guard version != lastSeen else { return }
        lastSeen = version
        let current = lock.withLock { () -> [any CommitObserver] in
            observers = observers.filter { $0.value.observer != nil }
            return observers.values.compactMap(\.observer)
        }
        for observer in current { observer.storeDidCommit(version: version) }
    }
}
