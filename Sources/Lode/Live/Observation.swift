import Dispatch
import Foundation
import LMDB

/// Keeps an observation alive: it stops on ``cancel()`` or when the token is released.
public final class ObservationToken: @unchecked Sendable {
    // @unchecked: `stopActions` and `cancelled` are guarded by `lock`; `silencer` is weak and set once,
    // before the token is handed out or on the observation's queue before any write can use it.
    private let lock = NSLock()
    private var stopActions: [() -> Void] = []
    private var cancelled = false
    /// The observation, for writes that skip it.
    weak var silencer: (any DeliverySilencing)?

    init() {}

    /// Runs `action` when the token is cancelled (at once if it already is).
    func onCancel(_ action: @escaping () -> Void) {
        let runNow = lock.withLock { () -> Bool in
            if cancelled { return true }
            stopActions.append(action)
            return false
        }
        if runNow { action() }
    }

    /// True once cancelled.
    public var isCancelled: Bool { lock.withLock { cancelled } }

    /// Stops the observation; no delivery starts after this returns.
    public func cancel() {
        let actions = lock.withLock { () -> [() -> Void] in
            cancelled = true
            defer { stopActions = [] }
            return stopActions
        }
        for action in actions { action() }
    }

    deinit { cancel() }
}

/// An observation that can let one commit pass without a delivery (the app already shows it).
protocol DeliverySilencing: AnyObject, Sendable {
    /// The commit that will have `version` is not to be delivered.
    func silence(version: Int)
    /// That commit did not happen after all.
    func unsilence(version: Int)
}

/// The one observation pipeline: it takes a ``LiveSource`` from version to version after every
/// commit the notifier sees and hands each update — or each error — to the consumer on its queue.
///
/// - Coalescing: at most one delivery is pending; commits that arrive meanwhile join it, since a
///   delivery advances to the newest version.
/// - Liveness: the notifier hands over the snapshot of each version it saw, and a delivery advances
///   at least to it (a reader begun later can never see less, but the snapshot makes it certain).
/// - Silencing: a commit made with ``Store/write(withoutNotifying:_:)`` is passed over silently when
///   it is the only one since the last delivery.
/// - Errors: every failure reaches the consumer; the source stays on its version and the next
///   commit tries again.
///
/// Lock order: `lock` is a leaf. The source is advanced and the consumer called on `queue` with no
/// lock of the driver's held.
final class ObservationDriver<Source: LiveSource>: CommitObserver, DeliverySilencing, @unchecked Sendable {
    // @unchecked: `scheduled`, `target` and `silenced` are guarded by `lock`; the rest is immutable.
    private let store: Store
    private let source: Source
    private let queue: DispatchQueue
    /// Weak: the token's owner keeps the observation alive (the token holds the driver through its
    /// stop action), and releasing the token ends it.
    private weak var token: ObservationToken?
    private let consumer: @Sendable (Result<Source.Update, LodeError>) -> Void
    private let lock = NSLock()
    private var scheduled = false
    private var target: ReadSnapshot?
    private var silenced = Set<Int>()
    /// When set, a delivery waits until the consumer asks for it (``LiveChanges``).
    private let demand: DeliveryDemand?
    /// The version an advance last failed at (only touched on `queue`): it is not tried again until a
    /// newer one commits, so a consumer asking again is not handed the same error in a loop.
    private var failedVersion: Int?

    /// Follows `store` with `source` (on the version it was made at), delivering to `consumer` on
    /// `queue` until `token` is cancelled — only when `demand` asks, if given.
    init(
        store: Store, source: Source, queue: DispatchQueue, token: ObservationToken,
        demand: DeliveryDemand? = nil,
        consumer: @escaping @Sendable (Result<Source.Update, LodeError>) -> Void
    ) {
        self.store = store
        self.source = source
        self.queue = queue
        self.token = token
        self.demand = demand
        self.consumer = consumer
    }

    /// Registers with the store's notifier and catches up with commits made since the source was
    /// evaluated. Call it on `queue` or before anything is delivered.
    func start() {
        guard let token else { return }
        token.silencer = self
        let notifier = LiveContext.of(store).makeNotifier(for: store)
        notifier.add(self)
        token.onCancel { [weak notifier, self] in notifier?.remove(self) }
        demand?.onRequest { [weak self] in self?.schedule(nil) }
        schedule(nil)
    }

    func storeDidCommit(_ snapshot: ReadSnapshot) { schedule(snapshot) }

    func notifierDidFail(_ error: LodeError) {
        queue.async { [self] in
            guard !isCancelled, demand?.take() ?? true else { return }
            consumer(.failure(error))
            if case .storeClosed = error { token?.cancel() }
        }
    }

    private var isCancelled: Bool { token?.isCancelled ?? true }

    func silence(version: Int) { _ = lock.withLock { silenced.insert(version) } }
    func unsilence(version: Int) { _ = lock.withLock { silenced.remove(version) } }

    private func schedule(_ snapshot: ReadSnapshot?) {
        let post = lock.withLock { () -> Bool in
            if let snapshot, snapshot.transactionID > (target?.transactionID ?? -1) { target = snapshot }
            if scheduled { return false }
            scheduled = true
            return true
        }
        if post { queue.async { [self] in deliver() } }
    }

    private func deliver() {
        let wanted = lock.withLock { () -> ReadSnapshot? in
            scheduled = false
            defer { target = nil }
            return target
        }
        // Without demand nothing advances: the commits wait in the store, and the delivery that
        // demand schedules reads the newest version.
        guard !isCancelled, demand?.isWanted ?? true else { return }
        var attempted: Int?
        do {
            var next = LiveContext.of(store).hooks.deliverySnapshot(try store.currentSnapshot())
            if let wanted, wanted.transactionID > next.transactionID { next = wanted }
            let from = source.version
            guard next.transactionID > from, next.transactionID != failedVersion else { return }
            attempted = next.transactionID
            let silent = lock.withLock { () -> Bool in
                let silent = next.transactionID == from + 1 && silenced.contains(from + 1)
                silenced = silenced.filter { $0 > next.transactionID }
                return silent
            }
            if silent {
                try source.advanceSilently(to: next)
            } else if let update = try source.advance(to: next) {
                _ = demand?.take()
                consumer(.success(update))
            }
            failedVersion = nil
        } catch {
            failedVersion = attempted
            _ = demand?.take()
            let failure = LodeError(error)
            consumer(.failure(failure))
            // A closed store stays closed: the observation ends with the error.
            if case .storeClosed = failure { token?.cancel() }
        }
    }
}

extension Results {
    /// Observes these results: `handler` runs on `queue` with `.initial` first, then `.update` with
    /// the exact change after every commit (of any process) that changes them — never inside a write
    /// transaction — and `.error` when advancing fails. Commits that arrive while the queue is busy
    /// are coalesced into one change.
    ///
    /// Without a queue, the observation delivers on a serial queue of its own, so a command-line
    /// program that never runs the main queue receives its changes; pass `.main` to update a UI.
    /// With `keyPaths`, changes to other fields of an object do not count as modifications.
    public func observe(
        keyPaths: [PartialKeyPath<Element>]? = nil, on queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) -> ObservationToken {
        observe(keyPaths: keyPaths, on: queue, demand: nil, handler)
    }

    func observe(
        keyPaths: [PartialKeyPath<Element>]?, on queue: DispatchQueue?, demand: DeliveryDemand?,
        _ handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let results = self
        let paths = UncheckedKeyPaths(keyPaths)
        let queue = queue ?? DispatchQueue(label: "lode.observation")
        queue.async {
            guard !token.isCancelled else { return }
            do {
                let live = try LiveResults(results, keyPaths: paths.value)
                let driver = ObservationDriver(
                    store: live.store, source: live, queue: queue, token: token, demand: demand
                ) { result in
                    switch result {
                    case .success(let update): handler(.update(update.results, update.change))
                    case .failure(let error): handler(.error(error))
                    }
                }
                // Registered (and silenceable) before the initial results reach the app; deliveries
                // it schedules run on this queue after this block.
                driver.start()
                handler(.initial(live.results))
            } catch {
                handler(.error(LodeError(error)))
            }
        }
        return token
    }

    /// The same observation as an asynchronous sequence that advances as fast as it is consumed (a
    /// consumer that falls behind gets one change covering what it missed); it ends when the
    /// consuming task is cancelled.
    public var changes: LiveChanges<ResultsChange<Element>> {
        let results = self
        return LiveChanges { demand, yield in
            results.observe(keyPaths: nil, on: nil, demand: demand) { yield($0) }
        }
    }

    /// Live results that follow this query (see ``LiveResults``).
    public func live(keyPaths: [PartialKeyPath<Element>]? = nil) throws -> LiveResults<Element> {
        try LiveResults(self, keyPaths: keyPaths)
    }
}

/// Key paths are immutable values; this carries them into the delivery queue.
struct UncheckedKeyPaths<Root>: @unchecked Sendable {
    // @unchecked: key paths are immutable once made; Swift 6.3 does not mark `PartialKeyPath` Sendable.
    let value: [PartialKeyPath<Root>]?
    init(_ value: [PartialKeyPath<Root>]?) { self.value = value }
}
