import Dispatch

/// A task executor with a thread of its own, for the async tests that wait against a deadline.
///
/// Swift Testing runs every test on the cooperative pool, which has one thread per core (two on the
/// CI machines), and a synchronous test holds its thread until it ends: a power-cut test holds one
/// for minutes. An async test resumes after each `await` only when a pool thread is free, behind
/// every job queued before it, so in a busy suite its deadline could run out before its consumers
/// had run at all (`LiveStressTests` failed that way). On this executor a test's continuations, and
/// the tasks it starts with `Task(executorPreference:)`, never wait for the pool.
///
/// Jobs run one at a time, in order, on a serial dispatch queue: an overcommitting queue, which gets
/// a thread whatever the pool is doing.
public final class DedicatedExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is the only state, and it is thread-safe.
    private let queue: DispatchQueue

    /// An executor whose queue is labelled after `label`.
    public init(_ label: String) { queue = DispatchQueue(label: "lode-test.\(label)") }

    /// Runs `job` on the executor's queue.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Runs `body` on an executor of its own (see ``DedicatedExecutor``): for a test that waits against
/// a deadline, so that the wait measures the code under test rather than the cooperative pool.
public func onDedicatedExecutor<R>(
    _ label: String = #function, isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> R
) async throws -> R {
    try await withTaskExecutorPreference(DedicatedExecutor(label), isolation: isolation, operation: body)
}
