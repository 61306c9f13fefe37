import CSodium
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Random nonces for seals, drawn from a pool: the system's generator (`getrandom`, through
/// libsodium) cost a system call per nonce, 0.7 µs on a CI machine, three times per object a bulk
/// insert writes. The pool is 4 KB of ChaCha20 output under a fresh 32-byte seed from the system
/// (`randombytes_buf_deterministic`), one system call per 170 nonces of 24 bytes.
///
/// A forked child must not hand out the nonces its parent does: a fork (counted in the child by a
/// `pthread_atfork` handler) makes the child draw a seed of its own before its next nonce, while the
/// parent goes on with its pool.
// Unchecked Sendable: the pool is only touched under `lock`.
final class NonceSource: @unchecked Sendable {
    private struct Pool: ~Copyable {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: NonceSource.poolSize, alignment: 16)
        /// The bytes from here on are unused.
        var next = NonceSource.poolSize
        /// The fork generation the bytes were drawn in.
        var generation = -1

        deinit {
            memset(bytes.baseAddress!, 0, bytes.count)
            bytes.deallocate()
        }
    }

    private static let poolSize = 4096
    /// Counts the forks this process came out of (bumped in the child only).
    private static let forks = Atomic<Int>(0)
    private static let watchesForks: Void = {
        pthread_atfork(nil, nil) { NonceSource.forks.add(1, ordering: .relaxed) }
    }()

    // A pthread mutex (`NSLock`), which ThreadSanitizer understands (`Synchronization.Mutex` waits
    // on a raw futex on Linux).
    private let lock = NSLock()
    private var pool = Pool()

    init() { _ = Self.watchesForks }

    /// Fills `count` bytes (at most 64) at `out` with random bytes no other seal of this process, or
    /// of a process forked from it, gets.
    func fill(_ out: UnsafeMutableRawPointer, count: Int) {
        precondition(count <= 64, "a nonce is at most 64 bytes")
        let generation = Self.forks.load(ordering: .relaxed)
        lock.lock()
        defer { lock.unlock() }
        if pool.generation != generation || pool.next + count > pool.bytes.count {
            withUnsafeTemporaryAllocation(byteCount: Int(randombytes_SEEDBYTES), alignment: 16) { seed in
                randombytes_buf(seed.baseAddress!, seed.count)
                randombytes_buf_deterministic(
                    pool.bytes.baseAddress!, pool.bytes.count,
                    seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
                memset(seed.baseAddress!, 0, seed.count)
            }
            pool.next = 0
            pool.generation = generation
        }
        out.copyMemory(from: pool.bytes.baseAddress! + pool.next, byteCount: count)
        // Handed out once: the pool's copy is wiped.
        memset(pool.bytes.baseAddress! + pool.next, 0, count)
        pool.next += count
    }
}
