import Foundation
import LMDB
import Testing

@Suite struct PageCheckTests {
    let tmp = TemporaryDirectory("pages")

    /// An environment with every kind of page: deep trees, values on overflow pages, duplicates kept
    /// in a node and in a tree of their own, fixed-size duplicates, and a free list from deletions.
    func populatedEnvironment(_ name: String = "env", seed: UInt64 = 1) throws -> Environment {
        let env = try Environment.open(
            at: tmp.subpath(name), options: EnvironmentOptions(mapSize: 256 << 20, createDirectory: true))
        var rng = SplitMix(seed: seed)
        try env.write { tx in
            let plain = try tx.database(named: "plain")
            let duplicates = try tx.database(named: "duplicates", kind: .duplicates)
            let fixed = try tx.database(named: "fixed", kind: .fixedDuplicates(width: 8))
            for index in 0..<6000 {
                try tx.put(
                    b("value \(index) " + String(repeating: "x", count: Int(rng.next() % 200))),
                    forKey: be(index), in: plain)
            }
            for index in 0..<40 {
                try tx.put(
                    [UInt8](repeating: UInt8(index), count: 5000 + index * 300), forKey: b("big \(index)"),
                    in: plain)
            }
            for key in 0..<50 {
                // A few values per key stay in the node; thousands get a tree of their own.
                for value in 0..<(key % 10 == 0 ? 3000 : 3) {
                    try tx.put(be(value), forKey: b("k\(key)"), in: duplicates)
                    try tx.put(be(value * 7), forKey: b("k\(key)"), in: fixed)
                }
            }
        }
        for round in 0..<5 {
            try env.write { tx in
                let plain = try tx.database(named: "plain")
                let duplicates = try tx.database(named: "duplicates", kind: .duplicates)
                for index in stride(from: round, to: 6000, by: 7) { _ = try tx.delete(be(index), in: plain) }
                _ = try tx.delete(b("big \(round)"), in: plain)
                if round < 2 { _ = try tx.delete(b("k\(round * 10)"), in: duplicates) }
            }
        }
        return env
    }

    @Test func aHealthyEnvironmentHasNoProblemsAndEveryPageIsAccountedFor() throws {
        let env = try populatedEnvironment()
        let report = try env.checkPages()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.unaccountedPages == 0)
        #expect(report.databases == 5)  // main, free list, plain, duplicates, fixed
        #expect(report.freePages > 0)
        #expect(report.pagesInUse + report.freePages + 2 == report.lastPage + 1)
        let expected = try env.read { tx in
            try ["plain", "duplicates", "fixed"].reduce(3) { total, name in
                total + (try tx.count(in: try env.database(named: name, create: false)))
            }
        }
        #expect(report.entries == expected)  // the main database's three records, and every value
    }

    /// Copies the environment's data file, lets `damage` change the copy's bytes, and checks the
    /// copy's pages.
    func checkDamagedCopy(
        of env: Environment, maxProblems: Int = 100, _ damage: (inout [UInt8], Int) -> Void
    ) throws -> PageCheck {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: env.path + "/data.mdb")))
        damage(&bytes, env.pageSize)
        let copy = tmp.subpath("copy-\(UUID())")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: copy + "/data.mdb"))
        return try Environment.open(at: copy).checkPages(maxProblems: maxProblems)
    }

    @Test func aZeroedPageIsFoundWhereverItIs() throws {
        let env = try populatedEnvironment()
        let info = env.info
        var missed: [Int] = []
        for page in stride(from: 2, through: info.lastPageNumber, by: 23) {
            let report = try checkDamagedCopy(of: env) { bytes, size in
                for index in page * size..<(page + 1) * size { bytes[index] = 0 }
            }
            // A free page may be zeroed without harm; every other page is found.
            if report.isClean && report.unaccountedPages == 0 { missed.append(page) }
        }
        let free = try env.checkPages().freePages
        #expect(missed.count <= free, "zeroed pages not noticed: \(missed)")
    }

    @Test func aPageNamedOutsideTheFileIsReportedNotRead() throws {
        let env = try populatedEnvironment()
        let report = try checkDamagedCopy(of: env) { bytes, size in
            // Every branch page (in use or free) points its first child far past the file's end.
            for page in 2..<(bytes.count / size) where bytes[page * size + 10] == 0x01 {
                let node = Int(bytes[page * size + 16]) | Int(bytes[page * size + 17]) << 8
                bytes[page * size + node + 2] = 0xff
                bytes[page * size + node + 3] = 0x7f
            }
        }
        #expect(report.problems.contains { $0.message.contains("outside pages") }, "\(report.problems)")
    }

    @Test func keysOutOfOrderAreFound() throws {
        let env = try Environment.open(
            at: tmp.subpath("order"), options: EnvironmentOptions(createDirectory: true))
        try env.write { tx in
            let plain = try tx.database(named: "plain")
            for index in 0..<20 { try tx.put(b("value"), forKey: b("key \(index + 10)"), in: plain) }
        }
        let report = try checkDamagedCopy(of: env) { bytes, size in
            // Rename the first key "key 10" to "key 99": it now sorts after its neighbours.
            let text = Array("key 10".utf8)
            for start in 2 * size..<(bytes.count - text.count)
            where Array(bytes[start..<(start + text.count)]) == text {
                bytes[start + 4] = UInt8(ascii: "9")
                bytes[start + 5] = UInt8(ascii: "9")
                break
            }
        }
        #expect(report.problems.contains { $0.message.contains("out of order") }, "\(report.problems)")
    }

    @Test func problemsStopAtTheLimit() throws {
        let env = try populatedEnvironment()
        let damage: (inout [UInt8], Int) -> Void = { bytes, size in
            for page in 2..<(bytes.count / size) { bytes[page * size + 3] ^= 0x5a }  // every page's number
        }
        let report = try checkDamagedCopy(of: env, damage)
        #expect(report.problems.count > 1)
        let limited = try checkDamagedCopy(of: env, maxProblems: 1, damage)
        #expect(limited.problems.count == 1 && limited.truncated)
        #expect(limited.problems.first?.message.contains("says it is page") == true, "\(limited.problems)")
    }

    @Test func aCheckWhileAnotherThreadCommitsReadsOneVersion() throws {
        let env = try populatedEnvironment()
        let done = Flag()
        let writer = Thread {
            var round = 0
            while !done.isSet {
                try? env.write { tx in
                    let plain = try tx.database(named: "plain")
                    for index in 0..<50 { try tx.put(b("round \(round)"), forKey: be(index * 13), in: plain) }
                }
                round += 1
            }
        }
        writer.start()
        defer { done.set() }
        for _ in 0..<10 {
            let report = try env.checkPages()
            #expect(report.isClean, "\(report.problems)")
            #expect(report.unaccountedPages == 0)
        }
    }
}

/// A small seeded generator.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A flag one thread sets and another reads.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
