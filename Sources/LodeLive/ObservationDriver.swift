import Dispatch
import Foundation
import LodeStore

import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// The one observation pipeline: it takes a ``LiveSource`` from version to version after every
/// commit the notifier sees and hands each update — or each error — to the consumer on its queue.
///
/// - Coalescing: at most one delivery is pending; commits that arrive meanwhile join it, since a
///   delivery advances to the newest version.
/// - Liveness: the notifier hands over the snapshot of each version it saw, and a delivery advances
///   at least to it (a reader begun later can never see less, but the snapshot makes it certain).
/// - Silencing: a commit made with ``Store/write(withoutNotifying:_:)`` is passed over silently when
///   it is the only one since the last delivery (the token keeps which commits were silenced).
/// - Errors: every failure reaches the consumer; the source stays on its version and the next
///   commit tries again.
///
/// Lock order: `lock` is a leaf. The source is advanced and the consumer called on `queue` with no
/// lock of the driver's held.
package final class ObservationDriver<Source: LiveSource>: CommitObserver, @unchecked Sendable {
    // @unchecked: `scheduled` and `target` are guarded by `lock`; the rest is immutable.
    private let store: Store
    /// The store's live context, looked up once (not at every delivery).
    private let context: LiveContext
    private let source: Source
    private let queue: DispatchQueue
    /// Weak: the token's owner keeps the observation alive (the token holds the driver through its
    /// stop action), and releasing the token ends it.
    private weak var token: ObservationToken?
    private let consumer: @Sendable (Result<Source.Update, LodeError>) -> Void
    private let lock = LodeLock("ObservationDriver")
    private var scheduled = false
    private var target: ReadSnapshot?
    /// When set, a delivery waits until the consumer asks for it (``LiveChanges``).
    private let demand: DeliveryDemand?
    /// The version an advance last failed at (only touched on `queue`): it is not tried again until a
    /// newer one commits, so a consumer asking again is not handed the same error in a loop.
    private var failedVersion: Int?

    /// Follows the store with `source` (on the version it was made at), delivering to `consumer` on
    /// `queue` until `token` is cancelled — only when `demand` asks, if given.
    package init(
        source: Source, queue: DispatchQueue, token: ObservationToken, demand: DeliveryDemand? = nil,
        consumer: @escaping @Sendable (Result<Source.Update, LodeError>) -> Void
    ) {
        self.store = source.store
        self.context = LiveContext.of(source.store)
        self.source = source
        self.queue = queue
        self.token = token
        self.demand = demand
        self.consumer = consumer
    }

    /// Registers with the store's notifier and catches up with commits made since the source was
    /// evaluated. Call it on `queue` or before anything is delivered.
    package func start() {
        guard let token else { return }
        let notifier = context.makeNotifier(for: store)
        notifier.add(self)
        token.onCancel { [weak notifier, self] in notifier?.remove(self) }
        demand?.onRequest { [weak self] in self?.schedule(nil) }
        schedule(nil)
    }

    func storeDidCommit(_ snapshot: ReadSnapshot) { schedule(snapshot) }

    func notifierDidFail(_ error: LodeError) {
        queue.async { [self] in
            guard !isCancelled, demand?.take() ?? true else { return }
            LockWatch.check(entering: "an observation handler")
            consumer(.failure(error))
            if case .storeClosed = error { token?.cancel() }
        }
    }

    private var isCancelled: Bool { token?.isCancelled ?? true }

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
            var next = context.hooks.deliverySnapshot(try store.currentSnapshot())
            if let wanted, wanted.transactionID > next.transactionID { next = wanted }
            let from = source.version
            guard next.transactionID > from, next.transactionID != failedVersion else { return }
            attempted = next.transactionID
            if token?.takeSilence(from: from, to: next.transactionID) ?? false {
                try source.advanceSilently(to: next)
            } else if let update = try source.advance(to: next) {
                // Cancelled while it advanced (the check above came before the version was read): a
                // commit made after `cancel()` returned is never delivered.
                guard !isCancelled else { return }
                _ = demand?.take()
                LockWatch.check(entering: "an observation handler")
                consumer(.success(update))
            }
            failedVersion = nil
        } catch {
            failedVersion = attempted
            guard !isCancelled else { return }
            _ = demand?.take()
            let failure = LodeError(error)
            LockWatch.check(entering: "an observation handler")
            consumer(.failure(failure))
            // A closed store stays closed: the observation ends with the error.
            if case .storeClosed = failure { token?.cancel() }
        }
    }

    /// Starts an observation of a source made on `queue` (by default a serial queue of its own):
    /// `initial` receives the source as made, then `consumer` every update and error; a source that
    /// cannot be made is reported to `failed`. Returns the token that keeps it alive.
    static func observe(
        on queue: DispatchQueue?, demand: DeliveryDemand? = nil,
        make: @escaping @Sendable () throws -> Source, initial: @escaping @Sendable (Source) -> Void,
        failed: @escaping @Sendable (LodeError) -> Void,
        consumer: @escaping @Sendable (Result<Source.Update, LodeError>) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let queue = queue ?? DispatchQueue(label: "lode.observation")
        queue.async {
            guard !token.isCancelled else { return }
            let source: Source
            do {
                source = try make()
            } catch {
                failed(LodeError(error))
                return
            }
            LiveContext.of(source.store).hooks.sourceMade()
            let driver = ObservationDriver(
                source: source, queue: queue, token: token, demand: demand, consumer: consumer)
            // Registered (and silenceable) before the initial value reaches the app; deliveries it
            // schedules run on this queue after this block.
            driver.start()
            initial(source)
        }
        return token
    }
}
