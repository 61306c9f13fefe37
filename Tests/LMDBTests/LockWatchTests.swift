import Foundation
import LMDB
import Synchronization
import Testing

/// The debug-build watch over the rule that no lock of a higher layer is held while LMDB (or app
/// code) runs.
@Suite struct LockWatchTests {
    @Test func locksAreCountedPerThread() {
        #expect(LockWatch.heldByCurrentThread.isEmpty)
        LockWatch.taken("outer")
        LockWatch.taken("inner")
        #expect(LockWatch.heldByCurrentThread == ["outer", "inner"])
        let other = DispatchSemaphore(value: 0)
        let seen = Mutex<[String]?>(nil)
        Thread {
            seen.withLock { $0 = LockWatch.heldByCurrentThread }
            other.signal()
        }.start()
        other.wait()
        #expect(seen.withLock { $0 } == [], "another thread holds nothing")
        LockWatch.released()
        LockWatch.released()
        #expect(LockWatch.heldByCurrentThread.isEmpty)
    }

    /// A read begun while a watched lock is held stops a debug build, naming the lock and the call.
    @Test func anLMDBCallUnderAWatchedLockStopsADebugBuild() throws {
        let directory = TemporaryDirectory()
        let run = try Helper.run(["read-under-a-lock", directory.path])
        #if DEBUG
            #expect(run.status != 0)
            #expect(
                run.error.contains("lock watch: an LMDB read of"), "\(run.error)")
            #expect(run.error.contains("entered while holding the helper's lock"), "\(run.error)")
            #expect(!run.output.contains("read"))
        #else
            #expect(run.status == 0)
        #endif
    }
}
