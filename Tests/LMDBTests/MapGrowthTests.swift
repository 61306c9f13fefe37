import Dispatch
import Foundation
import LodeTestSupport
import Synchronization
import Testing

@testable import LMDB

/// A value whose bytes are derived from its key number, so readers can check what they see.
func payload(_ i: Int, size: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: size)
    withUnsafeBytes(of: UInt64(i).bigEndian) { bytes.replaceSubrange(0..<8, with: $0) }
    return bytes
}

@Suite struct MapGrowthTests {
    let tmp = TemporaryDirectory()

    func openSmall() throws -> Environment {
        try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20))
    }

    @Test func takesOneHundredMegabytesFromAOneMiBMapWhileReadersRun() throws {
        let env = try openSmall()
        #expect(env.info.mapSize == 1 << 20)
        let db = try env.database(named: "blobs")
        let valueSize = 10_000
        let perTransaction = 200
        let transactions = 50  // 50 × 200 × 10 KB = 100 MB
        let written = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let readerFailures = Mutex<[String]>([])
        let readsDone = Atomic<Int>(0)
        let readers = DispatchGroup()
        for reader in 0..<3 {
            readers.enter()
            Thread.detachNewThread {
                defer { readers.leave() }
                var generator = SeededGenerator(seed: 0x6d61_7000 + UInt64(reader))
                while !stop.load(ordering: .relaxed) {
                    do {
                        try env.read { txn in
                            let visible = try txn.count(in: db)
                            guard visible > 0 else { return }
                            let i = Int.random(in: 0..<visible, using: &generator)
                            let value = try txn.get(be(i), in: db)
                            if value != payload(i, size: valueSize) {
                                readerFailures.withLock {
                                    $0.append("reader \(reader): key \(i) of \(visible) wrong")
                                }
                            }
                            if reader == 0 {
                                // Walk a stretch with a cursor: pointers into the map stay valid.
                                var count = 0
                                for entry in try txn.entries(in: db, from: be(i)).prefix(50) {
                                    let n = entry.key.reduce(0) { $0 << 8 | Int($1) }
                                    if entry.value != payload(n, size: valueSize) {
                                        readerFailures.withLock { $0.append("cursor: key \(n) wrong") }
                                    }
                                    count += 1
                                }
                                _ = count
                            }
                        }
                        readsDone.add(1, ordering: .relaxed)
                    } catch {
                        readerFailures.withLock { $0.append("reader \(reader): \(error)") }
                    }
                }
            }
        }
        for t in 0..<transactions {
            try env.write { txn in
                for j in 0..<perTransaction {
                    let i = t * perTransaction + j
                    try txn.put(payload(i, size: valueSize), forKey: be(i), in: db, flags: .append)
                }
            }
            written.add(perTransaction, ordering: .relaxed)
        }
        stop.store(true, ordering: .relaxed)
        readers.wait()
        #expect(readerFailures.withLock { $0 }.isEmpty, "\(readerFailures.withLock { $0.prefix(5) })")
        #expect(readsDone.load(ordering: .relaxed) > 0)
        #expect(env.mapResizes.grown >= 6)
        #expect(env.mapResizes.replayedWrites >= 1)
        #expect(env.info.mapSize >= 100_000_000)
        try env.read { txn throws in
            #expect(try txn.count(in: db) == transactions * perTransaction)
            for i in stride(from: 0, to: transactions * perTransaction, by: 97) {
                #expect(try txn.get(be(i), in: db) == payload(i, size: valueSize))
            }
        }
    }

    @Test func theClosureRunsOnceWhenTheMapFillsInTheMiddleOfAWrite() throws {
        let env = try openSmall()
        let db = try env.database(named: "d")
        let side = try env.database(named: "side")
        try env.write { txn in for i in 0..<20 { try txn.put(b("s\(i)"), forKey: be(i), in: side) } }
        var runs = 0
        try env.write { txn in
            runs += 1
            let cursor = try txn.cursor(in: side)
            #expect(try cursor.seek(to: be(7))?.value == b("s7"))
            try txn.delete(be(3), in: side)
            for i in 0..<4000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: db) }  // ~16 MB
            // The transaction was rebuilt underneath: earlier writes, deletes and the cursor survive.
            #expect(try txn.get(be(0), in: db) == payload(0, size: 4000))
            #expect(try txn.get(be(3), in: side) == nil)
            #expect(try cursor.current()?.key == be(7))
            #expect(try cursor.next()?.key == be(8))
        }
        #expect(runs == 1)
        #expect(env.mapResizes.grown >= 3)
        #expect(env.mapResizes.replayedWrites >= 3)
        try env.read { txn throws in
            #expect(try txn.count(in: db) == 4000)
            #expect(try txn.get(be(3999), in: db) == payload(3999, size: 4000))
            #expect(try txn.count(in: side) == 19)
        }
    }

    @Test func writeCursorsAndDupSortSurviveGrowth() throws {
        let env = try openSmall()
        let db = try env.database(named: "dups", kind: .duplicates)
        let blobs = try env.database(named: "blobs")
        try env.write { txn in
            let cursor = try txn.writeCursor(in: db)
            for i in 0..<100 { try cursor.put(be(i), forKey: b("k")) }
            try cursor.seek(key: b("k"), value: be(50))
            for i in 0..<3000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: blobs) }
            #expect(try cursor.current()?.value == be(50))
            #expect(try cursor.deleteCurrent()?.value == be(51))
        }
        #expect(env.mapResizes.replayedWrites >= 1)
        try env.read { txn throws in
            let values = try txn.values(forKey: b("k"), in: db)
            #expect(values.count == 99)
            #expect(!values.contains(be(50)))
        }
    }

    @Test func childTransactionsSurviveGrowth() throws {
        struct Boom: Error {}
        let env = try openSmall()
        let db = try env.database(named: "d")
        try env.write { txn in
            try txn.put(b("parent"), forKey: b("p"), in: db)
            try txn.nested { child in
                for i in 0..<2000 { try child.put(payload(i, size: 4000), forKey: be(i), in: db) }
            }
            #expect(throws: Boom.self) {
                try txn.nested { child in
                    for i in 2000..<4000 { try child.put(payload(i, size: 4000), forKey: be(i), in: db) }
                    throw Boom()
                }
            }
            try txn.put(b("after"), forKey: b("q"), in: db)
        }
        #expect(env.mapResizes.replayedWrites >= 2)
        try env.read { txn throws in
            #expect(try txn.count(in: db) == 2002)
            #expect(try txn.get(be(1999), in: db) == payload(1999, size: 4000))
            #expect(try txn.get(be(2000), in: db) == nil)
        }
    }

    @Test func growthIsRefusedCleanlyWhileTheWritingThreadHoldsARead() throws {
        let env = try openSmall()
        let db = try env.database(named: "d")
        try env.write { try $0.put(b("v"), forKey: b("before"), in: db) }
        let error = lmdbError {
            try env.write { txn in
                try env.read { _ in
                    for i in 0..<1000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: db) }
                }
            }
        }
        #expect(error?.code == .mapFull)
        #expect(error?.message.contains("read transaction") == true)
        try env.read { txn throws in
            #expect(try txn.count(in: db) == 1)
            #expect(try txn.get(b("before"), in: db) == b("v"))
        }
        try env.write { txn in
            for i in 0..<1000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: db) }
        }
        #expect(try env.read { try $0.count(in: db) } == 1001)
    }

    @Test func aMapGrownByAnotherProcessIsAdopted() throws {
        let env = try openSmall()
        let db = try env.database(named: "data")
        try env.write { try $0.put(b("mine"), forKey: b("zz-parent"), in: db) }
        let result = try Helper.run(["fill", tmp.path, String(64 << 20), "5000", "1024"])
        #expect(result.status == 0, "\(result.error)")
        #expect(env.info.mapSize == 1 << 20)  // this process still maps 1 MiB
        try env.read { txn throws in
            #expect(try txn.count(in: db) == 5001)
        }
        #expect(env.mapResizes.adopted >= 1)
        #expect(env.info.mapSize == 64 << 20)
        try env.write { try $0.put(b("again"), forKey: b("zz-parent2"), in: db) }
        #expect(try env.read { try $0.count(in: db) } == 5002)
    }

    @Test func anotherProcessCommittingDuringGrowthIsAConflictAndNothingIsWritten() throws {
        let env = try openSmall()
        let db = try env.database(named: "data")
        try env.write { try $0.put(b("v"), forKey: b("base"), in: db) }
        let path = tmp.path
        env.testHookBeforeReplay = {
            let result = try? Helper.run(["put", path, "outsider", "o"])
            #expect(result?.status == 0)
        }
        var runs = 0
        let error = lmdbError {
            try env.write { txn in
                runs += 1
                for i in 0..<1000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: db) }
            }
        }
        env.testHookBeforeReplay = nil
        #expect(runs == 1)
        #expect(error?.code == .writeConflictDuringGrowth)
        try env.read { txn throws in
            #expect(try txn.get(b("outsider"), in: db) == b("o"))
            #expect(try txn.get(be(0), in: db) == nil)
            #expect(try txn.count(in: db) == 2)
        }
        // Retrying is safe and succeeds.
        try env.write { txn in
            for i in 0..<1000 { try txn.put(payload(i, size: 4000), forKey: be(i), in: db) }
        }
        #expect(try env.read { try $0.count(in: db) } == 1002)
    }
}
