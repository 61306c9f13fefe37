import Foundation
import LMDB

/// A mutex of Lode's that the lock watch knows (see `LMDB.LockWatch`).
///
/// Every Lode lock is a leaf: held only to read or change a few fields, never while calling LMDB,
/// another layer or the app's code (a `Decodable` initializer, a `#Predicate`, a sort or section
/// key, a delegate, a handler). Work is done on private state and published under the lock. In
/// debug builds each lock taken is noted per thread, and LMDB and the places that run app code stop
/// the program, naming the lock, when they are entered with one held.
package final class LodeLock: NSLocking, @unchecked Sendable {
    // @unchecked: the wrapped lock is thread-safe; `name` is immutable.
    private let mutex: any NSLocking
    /// What the lock guards, named in the watch's message.
    let name: StaticString

    /// A lock named `name`; `recursive` lets the thread that holds it take it again.
    package init(_ name: StaticString, recursive: Bool = false) {
        self.name = name
        self.mutex = recursive ? NSRecursiveLock() : NSLock()
    }

    package func lock() {
        mutex.lock()
        LockWatch.taken(name)
    }

    package func unlock() {
        LockWatch.released()
        mutex.unlock()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
