import Dispatch
import Foundation
import Testing

@testable import LMDB

@Suite struct TransactionTests {
    let tmp = TemporaryDirectory()
    let env: Environment
    let db: Database

    init() throws {
        env = try Environment.open(at: tmp.path)
        db = try env.database(named: "d")
    }

    @Test func putGetReplaceDelete() throws {
        try env.write { txn throws in
            try txn.put(b("one"), forKey: b("a"), in: db)
            try txn.put(b("two"), forKey: b("b"), in: db)
            #expect(try txn.get(b("a"), in: db) == b("one"))  // reads its own writes
        }
        try env.write { txn throws in
            try txn.put(b("uno"), forKey: b("a"), in: db)
            #expect(try txn.delete(b("b"), in: db))
            #expect(try !txn.delete(b("missing"), in: db))
        }
        try env.read { txn throws in
            #expect(try txn.get(b("a"), in: db) == b("uno"))
            #expect(try txn.get(b("b"), in: db) == nil)
            #expect(try txn.contains(b("a"), in: db))
            #expect(try txn.count(in: db) == 1)
            #expect(try txn.withValue(forKey: b("a"), in: db) { $0.count } == 3)
        }
    }

    @Test func noOverwriteThrowsKeyExistsAndKeepsTheOldValue() throws {
        try env.write { try $0.put(b("first"), forKey: b("k"), in: db) }
        try env.write { txn throws in
            let error = lmdbError { try txn.put(b("second"), forKey: b("k"), in: db, flags: .noOverwrite) }
            #expect(error?.code == .keyExists)
            try txn.put(b("other"), forKey: b("k2"), in: db)  // the transaction is still usable
        }
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("first"))
        #expect(try env.read { try $0.get(b("k2"), in: db) } == b("other"))
    }

    @Test func appendRequiresSortedKeys() throws {
        try env.write { txn throws in
            for i in 0..<100 { try txn.put(be(i), forKey: be(i), in: db, flags: .append) }
            #expect(
                lmdbError { try txn.put(b("x"), forKey: be(5), in: db, flags: .append) }?.code == .keyExists)
        }
        #expect(try env.read { try $0.count(in: db) } == 100)
    }

    @Test func throwingClosureAbortsEverything() throws {
        struct Boom: Error {}
        try env.write { try $0.put(b("kept"), forKey: b("k"), in: db) }
        #expect(throws: Boom.self) {
            try env.write { txn throws in
                try txn.put(b("changed"), forKey: b("k"), in: db)
                try txn.put(b("new"), forKey: b("n"), in: db)
                throw Boom()
            }
        }
        try env.read { txn throws in
            #expect(try txn.get(b("k"), in: db) == b("kept"))
            #expect(try txn.get(b("n"), in: db) == nil)
        }
    }

    @Test func keysOutsideOneTo511BytesAreRefusedBeforeLMDB() throws {
        try env.write { txn throws in
            let long = [UInt8](repeating: 1, count: 512)
            let error = lmdbError { try txn.put(b("v"), forKey: long, in: db) }
            #expect(error?.code == .invalidKeySize)
            #expect(error?.message.contains("512") == true)
            #expect(lmdbError { try txn.put(b("v"), forKey: [UInt8](), in: db) }?.code == .invalidKeySize)
            #expect(lmdbError { _ = try txn.get(long, in: db) }?.code == .invalidKeySize)
            try txn.put(b("v"), forKey: [UInt8](repeating: 2, count: 511), in: db)
        }
        #expect(try env.read { try $0.count(in: db) } == 1)
    }

    @Test func childTransactionsCommitIntoTheParentOrRollBackAlone() throws {
        struct Boom: Error {}
        try env.write { txn throws in
            try txn.put(b("p"), forKey: b("parent"), in: db)
            try txn.nested { child throws in
                try child.put(b("c"), forKey: b("child"), in: db)
                #expect(try child.get(b("parent"), in: db) == b("p"))
            }
            #expect(throws: Boom.self) {
                try txn.nested { child throws in
                    try child.put(b("x"), forKey: b("discarded"), in: db)
                    try child.delete(b("parent"), in: db)
                    throw Boom()
                }
            }
            #expect(try txn.get(b("discarded"), in: db) == nil)
            #expect(try txn.get(b("parent"), in: db) == b("p"))
            try txn.nested { child throws in
                // The parent is blocked while a child is active.
                #expect(lmdbError { _ = try txn.get(b("parent"), in: db) }?.code == .transactionNotActive)
                try child.nested { grandchild throws in
                    try grandchild.put(b("g"), forKey: b("grandchild"), in: db)
                }
            }
        }
        try env.read { txn throws in
            #expect(try txn.get(b("child"), in: db) == b("c"))
            #expect(try txn.get(b("grandchild"), in: db) == b("g"))
            #expect(try txn.get(b("discarded"), in: db) == nil)
        }
    }

    @Test func readersKeepTheirSnapshotWhileAWriterCommits() throws {
        try env.write { try $0.put(b("old"), forKey: b("k"), in: db) }
        let committed = DispatchSemaphore(value: 0)
        try env.read { txn throws in
            #expect(try txn.get(b("k"), in: db) == b("old"))
            let env = self.env
            let db = self.db
            Thread.detachNewThread {
                try! env.write { try $0.put(b("new"), forKey: b("k"), in: db) }
                committed.signal()
            }
            committed.wait()
            #expect(try txn.get(b("k"), in: db) == b("old"))
            #expect(env.info.lastTransactionID > txn.id)
        }
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("new"))
    }

    @Test func aNestedWriteOnTheSameThreadThrowsInsteadOfDeadlocking() throws {
        try env.write { txn throws in
            let error = lmdbError { try env.write { _ in } }
            #expect(error?.code == .nestedWrite)
            try txn.put(b("v"), forKey: b("k"), in: db)
        }
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("v"))
    }

    @Test func aWriteInsideAReadOnTheSameThreadThrows() throws {
        try env.read { _ in
            #expect(lmdbError { try env.write { _ in } }?.code == .writeInsideRead)
        }
        try env.write { _ in }  // and the thread is free again afterwards
    }

    @Test func readsInsideAWriteSeeTheLastCommit() throws {
        try env.write { try $0.put(b("committed"), forKey: b("k"), in: db) }
        try env.write { txn throws in
            try txn.put(b("pending"), forKey: b("k"), in: db)
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("committed"))
        }
    }

    @Test func aTransactionUsedAfterItsClosureThrows() throws {
        var escaped: WriteTransaction?
        try env.write { escaped = $0 }
        #expect(lmdbError { try escaped!.put(b("v"), forKey: b("k"), in: db) }?.code == .transactionNotActive)
        var escapedRead: ReadTransaction?
        var escapedCursor: Cursor?
        try env.read { txn throws in
            escapedRead = txn
            escapedCursor = try txn.cursor(in: db)
        }
        #expect(lmdbError { _ = try escapedRead!.get(b("k"), in: db) }?.code == .transactionNotActive)
        #expect(lmdbError { try escapedCursor!.first() }?.code == .transactionNotActive)
    }

    @Test func aWriteTransactionCannotBeUsedFromAnotherThread() throws {
        try env.write { txn throws in
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) let shared = txn
            nonisolated(unsafe) var code: LMDBError.Code?
            let db = self.db
            Thread.detachNewThread {
                do { try shared.put(b("v"), forKey: b("k"), in: db) } catch let error as LMDBError {
                    code = error.code
                } catch {}
                done.signal()
            }
            done.wait()
            #expect(code == .transactionNotActive)
        }
    }

    @Test func writersInManyThreadsAreSerialized() throws {
        let env = self.env
        let db = self.db
        try env.write { try $0.put(be(0), forKey: b("counter"), in: db) }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<50 {
                try! env.write { txn throws in
                    let value = try txn.get(b("counter"), in: db)!
                    let n = value.reduce(0) { $0 << 8 | Int($1) }
                    try txn.put(be(n + 1), forKey: b("counter"), in: db)
                }
            }
        }
        #expect(try env.read { try $0.get(b("counter"), in: db) } == be(400))
    }

    @Test func asyncWriteRunsOnTheWriterThreadAndReturnsItsResult() async throws {
        let db = self.db
        let count = try await env.write { txn -> Int in
            for i in 0..<10 { try txn.put(be(i), forKey: be(i), in: db) }
            return try txn.count(in: db)
        }
        #expect(count == 10)
        #expect(try env.read { try $0.count(in: db) } == 10)
    }

    @Test func manyReadsOnManyThreadsDoNotExhaustReaderSlots() throws {
        let env = self.env
        let db = self.db
        try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
        // More threads than reader slots: NOTLS + the pool keep slot use bounded.
        let lock = NSLock()
        nonisolated(unsafe) var reads = 0
        nonisolated(unsafe) var errors: [String] = []
        DispatchQueue.concurrentPerform(iterations: 300) { _ in
            for _ in 0..<20 {
                do {
                    let value = try env.read { try $0.get(b("k"), in: db) }
                    lock.withLock { reads += value == b("v") ? 1 : 0 }
                } catch {
                    lock.withLock { errors.append("\(error)") }
                }
            }
        }
        #expect(lock.withLock { errors } == [])
        #expect(lock.withLock { reads } == 6_000)
        try env.read { txn throws in
            try env.read { inner throws in  // two read transactions on one thread (MDB_NOTLS)
                #expect(try inner.get(b("k"), in: db) == txn.get(b("k"), in: db))
            }
        }
    }

    @Test func emptyAndDropDatabases() throws {
        let other = try env.database(named: "other")
        try env.write { txn throws in
            try txn.put(b("v"), forKey: b("k"), in: db)
            try txn.put(b("v"), forKey: b("k"), in: other)
        }
        try env.write { txn throws in
            try txn.empty(db)
            try txn.drop(other)
        }
        #expect(try env.read { try $0.count(in: db) } == 0)
        #expect(lmdbError { _ = try env.database(named: "other", create: false) }?.code == .notFound)
        let recreated = try env.database(named: "other")
        #expect(try env.read { try $0.count(in: recreated) } == 0)
    }

    @Test func databasesOpenedInsideAWriteAreVisibleAfterCommitOnly() throws {
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try env.write { txn throws in
                let fresh = try txn.database(named: "fresh")
                try txn.put(b("v"), forKey: b("k"), in: fresh)
                throw Boom()
            }
        }
        #expect(lmdbError { _ = try env.database(named: "fresh", create: false) }?.code == .notFound)
        try env.write { txn throws in
            let fresh = try txn.database(named: "fresh")
            try txn.put(b("v"), forKey: b("k"), in: fresh)
        }
        let fresh = try env.database(named: "fresh", create: false)
        #expect(try env.read { try $0.get(b("k"), in: fresh) } == b("v"))
    }
}
