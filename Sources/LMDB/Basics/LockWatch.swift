/// A debug-build watchdog over the rule every layer above LMDB keeps: no code holds one of its locks
/// while it calls into LMDB or into the app's code. The layers above report each lock they take and
/// release (``taken(_:)``, ``released()``); LMDB checks at every call that reads or writes the map,
/// and the layers check before they run app code (``check(entering:)``). A call made with a lock held
/// stops the program with the lock's name and the call — in debug builds only, where tests run; in
/// release builds every function here does nothing.
///
/// GRDB's `SchedulingWatchdog`, which checks that database access happens on the right queue, is
/// the model. The count is per thread: a lock taken on one thread says nothing of another.
public enum LockWatch {
    /// Notes that the calling thread took the lock `name`.
    @inline(__always)
    public static func taken(_ name: StaticString) {
        #if DEBUG
            ThreadState.current.heldLocks.append(name)
        #endif
    }

    /// Notes that the calling thread released the lock it took last.
    @inline(__always)
    public static func released() {
        #if DEBUG
            _ = ThreadState.current.heldLocks.popLast()
        #endif
    }

    /// Stops the program (debug builds) when the calling thread holds a watched lock: `call` (an LMDB
    /// call, an app closure) must not run under it.
    @inline(__always)
    public static func check(entering call: @autoclosure () -> String) {
        #if DEBUG
            let held = ThreadState.current.heldLocks
            if !held.isEmpty {
                preconditionFailure(
                    "lock watch: \(call()) entered while holding \(held.map { "\($0)" }.joined(separator: ", "))"
                )
            }
        #endif
    }

    /// The names of the watched locks the calling thread holds, innermost last (for tests).
    public static var heldByCurrentThread: [String] {
        #if DEBUG
            return ThreadState.current.heldLocks.map { "\($0)" }
        #else
            return []
        #endif
    }
}
