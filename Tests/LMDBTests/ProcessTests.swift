import Foundation
import LodeTestSupport
import Testing

@testable import LMDB

@Suite struct ProcessTests {
    let tmp = TemporaryDirectory()

    /// Asking who has the environment open, while this process has it open, keeps this process's
    /// lock on `lock.mdb`: another process still sees it (closing a probe descriptor of the file
    /// used to drop it, and the next opener would have reset the reader table under this process).
    @Test func askingWhoHasTheEnvironmentOpenKeepsThisProcesssLock() async throws {
        // The helper runs are waited for on an executor of their own, not the cooperative pool.
        try await onDedicatedExecutor {
            let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20))
            let before = try Helper.run(["openers", tmp.path])
            #expect(before.output == "opened by \(getpid())\n", "\(before)")
            #expect(try Environment.openers(at: tmp.path) == (true, nil))
            let after = try Helper.run(["openers", tmp.path])
            #expect(after.output == "opened by \(getpid())\n", "\(after)")
            _ = env
        }
    }

    @Test func aWriterKilledMidTransactionLeavesNothingAndTheNextWriterProceeds() throws {
        let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20))
        let db = try env.database(named: "data")
        try env.write { try $0.put(b("v"), forKey: b("before"), in: db) }
        let lastBefore = env.info.lastTransactionID
        let writer = try Helper.startAndWaitUntilReady(["hold-write", tmp.path])
        Helper.kill(writer)
        #expect(writer.terminationReason == .uncaughtSignal)
        #expect(env.info.lastTransactionID == lastBefore)
        #expect(try env.read { try $0.get(b("crash"), in: db) } == nil)
        try env.write { try $0.put(b("v"), forKey: b("after"), in: db) }  // the writer lock was recovered
        try env.read { txn throws in
            #expect(try txn.get(b("after"), in: db) == b("v"))
            #expect(try txn.get(b("crash"), in: db) == nil)
        }
    }

    @Test func aStaleReaderSlotOfAKilledReaderIsCleared() throws {
        let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20))
        let db = try env.database(named: "data")
        try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
        let reader = try Helper.startAndWaitUntilReady(["hold-read", tmp.path])
        let pid = reader.processIdentifier
        #expect(env.readers().contains { $0.processID == pid && $0.transactionID != nil })
        Helper.kill(reader)
        let stale = env.readers().filter { $0.processID == pid }
        #expect(stale.count == 1)
        #expect(stale.first?.processIsAlive == false)
        #expect(try env.clearStaleReaders() == 1)
        #expect(!env.readers().contains { $0.processID == pid })
    }

    @Test func aFullReaderTableOfDeadProcessesIsClearedOnTheNextRead() throws {
        let env = try Environment.open(
            at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20, readTransactionPoolSize: 0))
        let db = try env.database(named: "data")
        try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
        let hog = try Helper.startAndWaitUntilReady(["hold-all-reads", tmp.path])
        #expect(env.readers().count == env.info.maxReaders)
        Helper.kill(hog)
        // Every slot belongs to a dead process: the read hits MDB_READERS_FULL, clears them, retries.
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("v"))
        #expect(!env.readers().contains { $0.processID == hog.processIdentifier })
    }
}
