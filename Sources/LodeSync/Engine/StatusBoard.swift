import Foundation
import LodeStore

/// The client's status and the rounds it has completed, shared between the engine's thread and the
/// app: the engine publishes, readers copy. Waiters for a synced state block on the condition.
///
/// Lock order: `condition` is a leaf; nothing is called while it is held except yielding to the
/// status streams' continuations (which only enqueue).
final class StatusBoard: @unchecked Sendable {
    private let condition = NSCondition()
    private var current = SyncStatus()
    private var streams: [Int: AsyncStream<SyncStatus>.Continuation] = [:]
    private var nextStream = 0
    /// Requests for a full round: a waiter asks for round `requested` and waits until `settled`
    /// reaches it.
    private var requested = 0
    private var settled = 0
    private var stopped = false

    var status: SyncStatus { condition.withLock { current } }

    /// Changes the status and tells every stream when it changed.
    func update(_ body: (inout SyncStatus) -> Void) {
        condition.lock()
        var changed = current
        body(&changed)
        let differs = changed != current
        current = changed
        let targets = differs ? Array(streams.values) : []
        condition.broadcast()
        condition.unlock()
        for continuation in targets { continuation.yield(changed) }
    }

    func stream() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(64))
        condition.lock()
        let id = nextStream
        nextStream += 1
        if stopped {
            continuation.yield(current)
            continuation.finish()
        } else {
            streams[id] = continuation
            continuation.yield(current)
        }
        condition.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.condition.withLock { _ = self.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// A new request for a full round; returns its number.
    func request() -> Int {
        condition.withLock {
            requested += 1
            return requested
        }
    }

    /// The requests a round starting now will satisfy.
    var pendingRequest: Int { condition.withLock { requested } }

    /// A round that began when requests up to `request` had been made ended with nothing left to
    /// upload.
    func settle(upTo request: Int) {
        condition.withLock {
            settled = max(settled, request)
            condition.broadcast()
        }
    }

    /// Waits until round `request` settled; false on timeout or when the client stopped first.
    func wait(for request: Int, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while settled < request && !stopped {
            if !condition.wait(until: deadline) { return settled >= request }
        }
        return settled >= request
    }

    /// The client starts again: streams made from now on follow it, and waits wait for it.
    func reopen() { condition.withLock { stopped = false } }

    /// The client stopped: every stream ends, and waits return.
    func finish() {
        condition.lock()
        stopped = true
        let targets = Array(streams.values)
        streams = [:]
        condition.broadcast()
        condition.unlock()
        for continuation in targets { continuation.finish() }
    }
}
