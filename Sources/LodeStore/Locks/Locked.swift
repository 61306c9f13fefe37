import Foundation

/// A value behind a lock, with `Mutex`'s shape (`withLock { value in … }`).
///
/// Lode uses it rather than `Synchronization.Mutex` because on Linux `Mutex` waits on a raw futex,
/// which ThreadSanitizer cannot see: every access guarded by one would be reported as a race, and
/// the live suites must run under ThreadSanitizer with no report. This one is a pthread mutex
/// (`NSLock`), which ThreadSanitizer understands.
///
/// Lock order: a leaf wherever it is used — nothing is called while it is held but the closure,
/// which must only read or write the value.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `withLock`, under `lock`.
    private let lock: LodeLock
    private var value: Value

    /// A lock around `value`, named `name` in the lock watch's messages.
    package init(_ value: Value, name: StaticString = "a Locked value") {
        self.value = value
        self.lock = LodeLock(name)
    }

    /// Runs `body` with the value, under the lock.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
