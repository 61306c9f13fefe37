import LodeStore

/// An asynchronous sequence of live changes that advances only as fast as it is consumed.
///
/// A consumer that falls behind receives one change covering every commit it missed, never a
/// backlog: each pending change would hold a version of the store (a reader slot and its pages), so
/// an unbounded buffer behind a slow task would exhaust the reader table. At most two elements wait:
/// the initial one and the next change.
///
/// The consuming loop runs in the caller's task, on Swift's cooperative pool unless the task prefers
/// another executor. On Linux the pool has one thread per core, and a thread blocked in a synchronous
/// wait stays held: while every pool thread is held, the loop does not advance. Deliveries made with
/// `observe(on:)` run on dispatch queues and never wait for the pool; use them, or run the consuming
/// task on an executor of its own (`Task(executorPreference:)`), where that matters.
public struct LiveChanges<Change: Sendable>: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = Change

    private let start: @Sendable (DeliveryDemand, @escaping @Sendable (Change) -> Void) -> ObservationToken

    init(
        start: @escaping @Sendable (DeliveryDemand, @escaping @Sendable (Change) -> Void) -> ObservationToken
    ) {
        self.start = start
    }

    /// Starts the observation; it stops when the iterator is released or its task is cancelled.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .unbounded)
        let demand = DeliveryDemand()
        let token = start(demand) { continuation.yield($0) }
        continuation.onTermination = { _ in token.cancel() }
        // The observation ends (the store closed): so does the sequence, after what it delivered.
        token.onCancel { continuation.finish() }
        return AsyncIterator(base: stream.makeAsyncIterator(), demand: demand, token: token)
    }

    /// Asks for the next change when the consumer is ready for it.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Change>.AsyncIterator
        let demand: DeliveryDemand
        /// Keeps the observation alive while the iterator is.
        let token: ObservationToken

        /// The next change: the initial one first, then one per advance, coalescing every commit made
        /// since the previous one was taken.
        public mutating func next() async -> Change? {
            demand.request()
            return await base.next()
        }
    }
}

/// How many more deliveries a consumer has asked for; an observation delivers only against it.
///
/// Lock order: `state` is a leaf; the wake-up runs after it is released.
package final class DeliveryDemand: Sendable {
    private let state = Locked<(count: Int, wake: (@Sendable () -> Void)?)>((0, nil))

    /// One more delivery is wanted.
    func request() {
        let wake = state.withLock { state in
            state.count += 1
            return state.wake
        }
        wake?()
    }

    /// Called when a delivery is requested (the observation schedules one).
    func onRequest(_ wake: @escaping @Sendable () -> Void) { state.withLock { $0.wake = wake } }

    /// Takes one delivery; false when none is wanted.
    func take() -> Bool {
        state.withLock { state in
            guard state.count > 0 else { return false }
            state.count -= 1
            return true
        }
    }

    /// True when a delivery is wanted.
    var isWanted: Bool { state.withLock { $0.count > 0 } }
}
