#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A plain mutex with a condition variable, usable across `lock()`/`unlock()` calls that a closure
/// API cannot express (a write transaction holds the writer lock for the length of its closure).
final class Lock: @unchecked Sendable {
    // @unchecked: a pthread mutex and condition, allocated once and used only through pthread calls.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits on the condition; the mutex must be held.
    func wait() { pthread_cond_wait(condition, mutex) }
    func broadcast() { pthread_cond_broadcast(condition) }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// The lock that makes remapping safe: every transaction holds it shared for its whole life (while
/// bytes from the map may be in use), and growing or re-adopting the map takes it exclusively. A
/// remap under a live reader is a SIGBUS, so nothing else may ever call `mdb_env_set_mapsize`.
///
/// Writers are preferred: once a grower waits, new first-level readers wait too, so growth cannot
/// starve. A thread that already holds the lock shared (a second read on the same thread, a read
/// inside a write) re-enters without waiting, which would otherwise deadlock against a waiting
/// grower.
final class ResizeLock: @unchecked Sendable {
    // @unchecked: `shared`, `exclusive` and `exclusiveWaiters` are only touched under `state`.
    private let state = Lock()
    private var shared = 0
    private var exclusive = false
    private var exclusiveWaiters = 0

    /// Takes the lock shared. `reentrant` says the calling thread already holds it shared.
    func lockShared(reentrant: Bool) {
        state.lock()
        while exclusive || (!reentrant && exclusiveWaiters > 0) { state.wait() }
        shared += 1
        state.unlock()
    }

    func unlockShared() {
        state.lock()
        shared -= 1
        if shared == 0 { state.broadcast() }
        state.unlock()
    }

    /// Takes the lock exclusively; the calling thread must not hold it shared.
    func lockExclusive() {
        state.lock()
        exclusiveWaiters += 1
        while exclusive || shared > 0 { state.wait() }
        exclusiveWaiters -= 1
        exclusive = true
        state.unlock()
    }

    func unlockExclusive() {
        state.lock()
        exclusive = false
        state.broadcast()
        state.unlock()
    }

    /// How many threads wait to take the lock exclusively (tests queue a grower with it).
    var exclusiveWaiting: Int { state.withLock { exclusiveWaiters } }
}

/// What the current thread holds in each environment: how many read transactions, and whether it is
/// inside a write. Kept in thread-local storage so the checks cost no lock.
final class ThreadState {
    struct Entry {
        var environment: ObjectIdentifier
        var reads: Int
        var writing: Bool
    }
    var entries: [Entry] = []
    /// The locks of higher layers the thread holds, innermost last (``LockWatch``, debug builds).
    var heldLocks: [StaticString] = []

    static var current: ThreadState {
        if let raw = pthread_getspecific(threadStateKey) {
            return Unmanaged<ThreadState>.fromOpaque(raw).takeUnretainedValue()
        }
        let state = ThreadState()
        pthread_setspecific(threadStateKey, Unmanaged.passRetained(state).toOpaque())
        return state
    }

    @inline(__always)
    func index(of environment: ObjectIdentifier) -> Int? {
        entries.firstIndex { $0.environment == environment }
    }

    func reads(in environment: ObjectIdentifier) -> Int {
        index(of: environment).map { entries[$0].reads } ?? 0
    }

    func isWriting(in environment: ObjectIdentifier) -> Bool {
        index(of: environment).map { entries[$0].writing } ?? false
    }

    /// True when the thread holds the environment's resize lock shared (any read or the write).
    func holdsShared(in environment: ObjectIdentifier) -> Bool {
        guard let i = index(of: environment) else { return false }
        return entries[i].reads > 0 || entries[i].writing
    }

    func adjustReads(in environment: ObjectIdentifier, by delta: Int) {
        if let i = index(of: environment) {
            entries[i].reads += delta
            if entries[i].reads == 0 && !entries[i].writing { entries.remove(at: i) }
        } else {
            entries.append(Entry(environment: environment, reads: delta, writing: false))
        }
    }

    func setWriting(_ writing: Bool, in environment: ObjectIdentifier) {
        if let i = index(of: environment) {
            entries[i].writing = writing
            if entries[i].reads == 0 && !writing { entries.remove(at: i) }
        } else if writing {
            entries.append(Entry(environment: environment, reads: 0, writing: true))
        }
    }
}

private let threadStateKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { raw in
        if let raw { Unmanaged<ThreadState>.fromOpaque(raw).release() }
    }
    return key
}()
