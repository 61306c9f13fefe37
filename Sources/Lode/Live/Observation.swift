import Dispatch
import Foundation
import LMDB

/// Keeps an observation alive: it stops on ``cancel()`` or when the token is released.
public final class ObservationToken: @unchecked Sendable {
    private let lock = NSLock()
    private var stopAction: (() -> Void)?
    private var cancelled = false
    /// The observation, for writes that skip it.
    weak var silencer: (any DeliverySilencing)?

    init() {}

    func onCancel(_ action: @escaping () -> Void) {
        let runNow = lock.withLock { () -> Bool in
            if cancelled { return true }
            stopAction = action
            return false
        }
        if runNow { action() }
    }

    /// True once cancelled.
    public var isCancelled: Bool { lock.withLock { cancelled } }

    /// Stops the observation; no delivery starts after this returns.
    public func cancel() {
        let action = lock.withLock { () -> (() -> Void)? in
            cancelled = true
            defer { stopAction = nil }
            return stopAction
        }
        action?()
    }

    deinit { cancel() }
}

/// An observation that can let one commit pass without a delivery (the app already shows it).
protocol DeliverySilencing: AnyObject {
    /// The commit that will have `version` is not to be delivered.
    func silence(version: Int)
    /// That commit did not happen after all.
    func unsilence(version: Int)
}

/// The silenced versions of an observation, and the silent advance itself.
final class SilencedVersions: @unchecked Sendable {
    private let lock = NSLock()
    private var versions = Set<Int>()

    func insert(_ version: Int) { _ = lock.withLock { versions.insert(version) } }
    func remove(_ version: Int) { _ = lock.withLock { versions.remove(version) } }

    /// If the next commit after `current` is silenced and is the last one, the snapshot to advance to
    /// silently.
    func silentTarget(after current: Int, store: Store) -> ReadSnapshot? {
        let silenced = lock.withLock { versions.contains(current + 1) }
        guard silenced, let snapshot = try? store.currentSnapshot() else { return nil }
        // The silenced write may not have committed yet: keep waiting for it.
        guard snapshot.transactionID > current else { return nil }
        lock.withLock { _ = versions.remove(current + 1) }
        return snapshot.transactionID == current + 1 ? snapshot : nil
    }
}

/// Runs an observation's delivery on its queue at most once at a time: commits that arrive while a
/// delivery is pending join it (the delivery advances to the newest version, so nothing is lost).
final class CoalescingDelivery: @unchecked Sendable {
    let queue: DispatchQueue
    let token: ObservationToken
    private let lock = NSLock()
    private var scheduled = false

    init(queue: DispatchQueue, token: ObservationToken) {
        self.queue = queue
        self.token = token
    }

    /// Schedules `deliver` unless a delivery is already pending or the token was cancelled.
    func schedule(_ deliver: @escaping @Sendable () -> Void) {
        let schedule = lock.withLock { () -> Bool in
            if scheduled { return false }
            scheduled = true
            return true
        }
        guard schedule else { return }
        queue.async { [self] in
            lock.withLock { scheduled = false }
            guard !token.isCancelled else { return }
            deliver()
        }
    }
}

/// Turns an error from advancing into the `LodeError` an observer receives.
func observationError<Element: Persistable>(_ error: any Error, _ type: Element.Type) -> LodeError {
    (error as? LodeError) ?? .schemaMismatch(type: Element.schema.typeName, reason: "\(error)")
}

/// The delivery side of a live results observation.
final class ResultsObservation<Element: Persistable>: CommitObserver, DeliverySilencing, @unchecked Sendable {
    let silenced = SilencedVersions()
    let store: Store
    let live: LiveResults<Element>
    let handler: @Sendable (ResultsChange<Element>) -> Void
    let delivery: CoalescingDelivery

    init(
        store: Store, live: LiveResults<Element>, queue: DispatchQueue, token: ObservationToken,
        handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) {
        self.store = store
        self.live = live
        self.handler = handler
        self.delivery = CoalescingDelivery(queue: queue, token: token)
    }

    func silence(version: Int) { silenced.insert(version) }
    func unsilence(version: Int) { silenced.remove(version) }

    func storeDidCommit(version: Int) {
        delivery.schedule { [self] in
            do {
                if let target = silenced.silentTarget(after: live.version, store: store) {
                    _ = try live.refresh(to: target)
                }
                if let change = try live.refresh(), !change.isEmpty || change.wasFullyReevaluated {
                    handler(.update(live.results, change))
                }
            } catch {
                handler(.error(observationError(error, Element.self)))
            }
        }
    }
}

extension Results {
    /// Observes these results: `handler` runs on `queue` with `.initial` first, then `.update` with
    /// the exact change after every commit (of any process) that changes them — never inside a write
    /// transaction. Commits that arrive while the queue is busy are coalesced into one change.
    ///
    /// With `keyPaths`, changes to other fields of an object do not count as modifications.
    public func observe(
        keyPaths: [PartialKeyPath<Element>]? = nil, on queue: DispatchQueue = .main,
        _ handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let results = self
        let paths = UncheckedKeyPaths(keyPaths)
        queue.async {
            guard !token.isCancelled else { return }
            do {
                let live = try LiveResults(results, keyPaths: paths.value)
                guard case .store(let store) = results.source else { return }
                let observation = ResultsObservation(
                    store: store, live: live, queue: queue, token: token, handler: handler)
                token.silencer = observation
                let notifier = store.makeNotifier()
                notifier.add(observation)
                token.onCancel { [weak notifier] in notifier?.remove(observation) }
                handler(.initial(live.results))
                // Commits between the evaluation and registration are picked up now.
                observation.storeDidCommit(version: live.version)
            } catch {
                handler(.error(observationError(error, Element.self)))
            }
        }
        return token
    }

    /// The same observation as an asynchronous sequence; it ends when the consuming task is
    /// cancelled.
    public var changes: AsyncStream<ResultsChange<Element>> {
        let (stream, continuation) = AsyncStream<ResultsChange<Element>>.makeStream(
            bufferingPolicy: .unbounded)
        let token = observe(on: DispatchQueue(label: "lode.results.changes")) { change in
            continuation.yield(change)
        }
        continuation.onTermination = { _ in token.cancel() }
        return stream
    }

    /// Live results that follow this query (see ``LiveResults``).
    public func live(keyPaths: [PartialKeyPath<Element>]? = nil) throws -> LiveResults<Element> {
        try LiveResults(self, keyPaths: keyPaths)
    }
}

/// Key paths are immutable values; this carries them into the delivery queue.
struct UncheckedKeyPaths<Root>: @unchecked Sendable {
    let value: [PartialKeyPath<Root>]?
    init(_ value: [PartialKeyPath<Root>]?) { self.value = value }
}
