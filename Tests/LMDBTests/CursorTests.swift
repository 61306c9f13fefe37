import Foundation
import LodeTestSupport
import Testing

@testable import LMDB

@Suite struct CursorTests {
    let tmp = TemporaryDirectory()
    let env: Environment

    init() throws {
        env = try Environment.open(at: tmp.path)
    }

    @Test func keysComeBackInMemcmpOrderBothWays() throws {
        let db = try env.database(named: "d")
        var rng = SeededGenerator(seed: 0x6375_7273)
        let keys = (0..<500).map { _ in
            (0..<Int.random(in: 1...12, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        try env.write { txn throws in for key in keys { try txn.put(key, forKey: key, in: db) } }
        let sorted = Set(keys).sorted { $0.lexicographicallyPrecedes($1) }
        try env.read { txn throws in
            #expect(try txn.entries(in: db).map(\.key) == sorted)
            #expect(try txn.entries(in: db, reverse: true).map(\.key) == sorted.reversed())
            #expect(try txn.entries(in: db).allSatisfy { $0.key == $0.value })
        }
    }

    @Test func seeksAndSteps() throws {
        let db = try env.database(named: "d")
        try env.write { txn throws in
            for i in stride(from: 0, to: 100, by: 10) { try txn.put(be(i * 2), forKey: be(i), in: db) }
        }
        try env.read { txn throws in
            try txn.withCursor(in: db) { cursor throws in
                #expect(try cursor.first()?.key == be(0))
                #expect(try cursor.last()?.key == be(90))
                #expect(try cursor.next() == nil)  // past the end
                #expect(try cursor.seek(to: be(40))?.value == be(80))
                #expect(try cursor.seek(to: be(41)) == nil)
                #expect(try cursor.seek(atLeast: be(41))?.key == be(50))
                #expect(try cursor.previous()?.key == be(40))
                #expect(try cursor.current()?.key == be(40))
                #expect(try cursor.seek(atMost: be(49))?.key == be(40))
                #expect(try cursor.seek(atMost: be(50))?.key == be(50))
                #expect(try cursor.seek(atMost: be(1000))?.key == be(90))
                #expect(try cursor.withCurrent { key, value in key.count + value.count } == 16)
                #expect(try cursor.seek(atLeast: be(91)) == nil)
            }
            #expect(try txn.entries(in: db, from: be(55)).map(\.key) == [be(60), be(70), be(80), be(90)])
            #expect(
                try txn.entries(in: db, from: be(25), reverse: true).map(\.key) == [be(20), be(10), be(0)])
        }
    }

    @Test func borrowedStepsAndSeeksReadInPlace() throws {
        let db = try env.database(named: "d")
        try env.write { txn throws in
            for i in stride(from: 0, to: 100, by: 10) { try txn.put(be(i * 2), forKey: be(i), in: db) }
        }
        try env.read { txn throws in
            try txn.withCursor(in: db) { cursor in
                // From an unpositioned cursor the next entry is the first.
                #expect(try cursor.withNext { key, value in (Array(key), Array(value)) }! == (be(0), be(0)))
                #expect(try cursor.withNext { key, _ in Array(key) } == be(10))
                #expect(try cursor.withValue(at: be(70)) { Array($0) } == be(140))
                #expect(
                    try cursor.withNext { key, _ in Array(key) } == be(80), "the seek positioned the cursor")
                #expect(try cursor.withValue(at: be(75)) { Array($0) } == nil, "an absent key")
                _ = try cursor.withValue(at: be(90)) { _ in () }
                var called = false
                #expect(try cursor.withNext { _, _ in called = true } == nil && !called, "the end")
                #expect(throws: LMDBError.self) { try cursor.withValue(at: [UInt8]()) { _ in () } }
            }
        }
    }

    @Test func emptyDatabaseHasNoEntries() throws {
        let db = try env.database(named: "d")
        try env.read { txn throws in
            #expect(try txn.entries(in: db).map(\.key).isEmpty)
            #expect(try txn.withCursor(in: db) { try $0.first() } == nil)
        }
    }

    @Test func dupSortKeepsValuesSortedPerKey() throws {
        let db = try env.database(named: "dups", kind: .duplicates)
        try env.write { txn throws in
            for value in ["pear", "apple", "fig"] { try txn.put(b(value), forKey: b("fruit"), in: db) }
            try txn.put(b("apple"), forKey: b("fruit"), in: db)  // same pair again: no change
            for value in ["kale", "bean"] { try txn.put(b(value), forKey: b("veg"), in: db) }
            #expect(
                lmdbError { try txn.put(b("fig"), forKey: b("fruit"), in: db, flags: .noDuplicateData) }?.code
                    == .keyExists)
            let long = [UInt8](repeating: 1, count: 512)
            #expect(lmdbError { try txn.put(long, forKey: b("veg"), in: db) }?.code == .invalidValueSize)
        }
        try env.read { txn throws in
            #expect(try txn.values(forKey: b("fruit"), in: db) == [b("apple"), b("fig"), b("pear")])
            #expect(try txn.count(in: db) == 5)
            try txn.withCursor(in: db) { cursor throws in
                #expect(try cursor.seek(to: b("fruit"))?.value == b("apple"))
                #expect(try cursor.duplicateCount() == 3)
                #expect(try cursor.lastDuplicate()?.value == b("pear"))
                #expect(try cursor.nextDuplicate() == nil)
                #expect(try cursor.firstDuplicate()?.value == b("apple"))
                #expect(try cursor.nextKey()?.key == b("veg"))
                #expect(try cursor.current()?.value == b("bean"))
                #expect(try cursor.previousKey()?.value == b("pear"))
                #expect(try cursor.seek(key: b("fruit"), value: b("fig"))?.value == b("fig"))
                #expect(try cursor.seek(key: b("fruit"), value: b("grape")) == nil)
                #expect(try cursor.seek(key: b("fruit"), atLeastValue: b("grape"))?.value == b("pear"))
                #expect(try cursor.seek(key: b("veg"), atLeastValue: b("z")) == nil)
            }
        }
        try env.write { txn throws in
            #expect(try txn.delete(b("fruit"), value: b("fig"), in: db))
            #expect(try !txn.delete(b("fruit"), value: b("fig"), in: db))
        }
        #expect(try env.read { try $0.values(forKey: b("fruit"), in: db) } == [b("apple"), b("pear")])
        try env.write { txn throws in #expect(try txn.delete(b("fruit"), in: db)) }  // all values
        #expect(try env.read { try $0.values(forKey: b("fruit"), in: db) } == [])
    }

    @Test func dupFixedEnforcesTheWidthAndReadsInPages() throws {
        let db = try env.database(named: "fixed", kind: .fixedDuplicates(width: 8))
        try env.write { txn throws in
            for i in 0..<1001 { try txn.put(be(i), forKey: b("k"), in: db) }
            // LMDB itself would read 8 bytes from this 4-byte buffer and store garbage.
            let error = lmdbError { try txn.put([1, 2, 3, 4], forKey: b("k"), in: db) }
            #expect(error?.code == .invalidValueSize)
            #expect(error?.message.contains("8 bytes") == true)
            #expect(
                lmdbError { try txn.put([UInt8](repeating: 0, count: 9), forKey: b("k"), in: db) }?.code
                    == .invalidValueSize)
        }
        try env.read { txn throws in
            let values = try txn.withCursor(in: db) { try $0.fixedDuplicates(forKey: b("k")) }
            #expect(values == (0..<1001).map(be))
            #expect(try txn.count(in: db) == 1001)
        }
        // Reopening without the width learns it from the data.
        let other = try Environment.open(at: tmp.path)
        #expect(other === env)
    }

    @Test func dupFixedWidthIsLearnedFromStoredData() throws {
        let path = tmp.subpath("learn")
        do {
            let env = try Environment.open(at: path, options: EnvironmentOptions(createDirectory: true))
            let db = try env.database(named: "fixed", kind: .fixedDuplicates(width: 4))
            try env.write { try $0.put([0, 0, 0, 1], forKey: b("k"), in: db) }
        }
        let env = try Environment.open(at: path)
        let db = try env.database(named: "fixed")
        #expect(db.kind == .fixedDuplicates(width: 4))
        #expect(
            lmdbError { _ = try env.database(named: "fixed", kind: .fixedDuplicates(width: 8)) }?.code
                == .incompatible)
    }

    @Test func writeCursorPutsDeletesAndMovesOn() throws {
        let db = try env.database(named: "d")
        try env.write { txn throws in
            let cursor = try txn.writeCursor(in: db)
            for i in 0..<10 { try cursor.put(be(i), forKey: be(i), flags: .append) }
            #expect(try cursor.current()?.key == be(9))
            #expect(try cursor.seek(to: be(3)) != nil)
            #expect(try cursor.deleteCurrent()?.key == be(4))  // lands on the next entry
            #expect(try cursor.current()?.key == be(4))
            #expect(try cursor.next()?.key == be(5))
            #expect(try cursor.last() != nil)
            #expect(try cursor.deleteCurrent() == nil)  // deleting the last one: nothing follows
        }
        #expect(try env.read { try $0.entries(in: db).map(\.key) } == [0, 1, 2, 4, 5, 6, 7, 8].map(be))
    }

    @Test func writeCursorDeletesDuplicatesOneByOne() throws {
        let db = try env.database(named: "dups", kind: .duplicates)
        try env.write { txn throws in
            for i in 0..<50 { try txn.put(be(i), forKey: b("a"), in: db) }
            for i in 0..<3 { try txn.put(be(i), forKey: b("b"), in: db) }
        }
        try env.write { txn throws in
            let cursor = try txn.writeCursor(in: db)
            var entry = try cursor.first()
            var deleted = 0
            while let current = entry {
                let n = current.value.reduce(0) { $0 << 8 | Int($1) }
                if n % 2 == 0 {
                    entry = try cursor.deleteCurrent()
                    deleted += 1
                } else {
                    entry = try cursor.next()
                }
            }
            #expect(deleted == 27)
        }
        try env.read { txn throws in
            #expect(try txn.values(forKey: b("a"), in: db) == stride(from: 1, to: 50, by: 2).map(be))
            #expect(try txn.values(forKey: b("b"), in: db) == [be(1)])
        }
        try env.write { txn throws in
            let cursor = try txn.writeCursor(in: db)
            try cursor.seek(to: b("a"))
            #expect(try cursor.deleteCurrent(allDuplicates: true)?.key == b("b"))
        }
        #expect(try env.read { try $0.count(in: db) } == 1)
    }

    @Test func sequencesCanBeAbandonedAndCursorsClosedEarly() throws {
        let db = try env.database(named: "d")
        try env.write { txn throws in for i in 0..<100 { try txn.put(be(i), forKey: be(i), in: db) } }
        try env.read { txn throws in
            for _ in 0..<1000 {
                let firstThree = Array(try txn.entries(in: db).prefix(3))
                #expect(firstThree.count == 3)
            }
            let cursor = try txn.cursor(in: db)
            cursor.close()
            #expect(lmdbError { try cursor.first() }?.code == .transactionNotActive)
        }
    }
}
