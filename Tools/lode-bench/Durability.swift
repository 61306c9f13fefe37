import Foundation
import LMDB
import Lode
import LodeInspection
import Synchronization

/// Runs `body(thread)` on `count` threads of their own (not a pool sized to the cores: the point is
/// many writers waiting at once) and returns when all are done; the first error is rethrown.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let failure = Mutex<Error?>(nil)
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        let thread = Thread {
            do { try body(index) } catch { failure.withLock { $0 = $0 ?? error } }
            done.leave()
        }
        thread.start()
    }
    done.wait()
    if let error = failure.withLock({ $0 }) { throw error }
}

extension Workloads {
    /// One writer, single-object commits that a process crash cannot lose but a power loss may
    /// (the last few): Lode `.noMetaSync` (data flushed, meta page not) against SQLite WAL with
    /// `synchronous=NORMAL` (the WAL is not synced at each commit). The systems take turns, round by
    /// round.
    static func sameClassDurability(_ settings: Settings) throws -> [Figure] {
        let rounds = Swift.max(settings.runs, 5)
        let slice = Swift.max(settings.size(10_000) / rounds, 1)
        let count = slice * rounds
        let scratch = Scratch("same-class")
        let store = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: StoreConfiguration(durability: .noMetaSync), types: [Row.self])
        let unsynced = try Store(
            at: scratch.url.appendingPathComponent("lode-nosync"),
            configuration: StoreConfiguration(durability: .noSync), types: [Row.self])
        let raw = try RawLMDB(path: scratch.path("raw"), durability: .noMetaSync)
        let sqlite = try SQLiteBaseline(path: scratch.path("sqlite.db"), synchronous: false)
        var rng = Generator(5)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let encoded = try rows.map(RawLMDB.bytes)
        var next = [0, 0, 0, 0]
        func range(_ system: Int) -> Range<Int> {
            defer { next[system] += slice }
            return next[system]..<(next[system] + slice)
        }
        let seconds = try alternate(
            runs: rounds,
            [
                System(name: "Lode") { for row in rows[range(0)] { try store.write { try $0.upsert(row) } } },
                System(name: "SQLite") { for row in rows[range(1)] { try sqlite.insert([row]) } },
                System(name: "raw LMDB") {
                    for row in encoded[range(2)] {
                        try raw.environment.write { txn in
                            try txn.put(row.value, forKey: row.key, in: raw.records)
                            try txn.put(row.key, forKey: row.indexKey, in: raw.index)
                        }
                    }
                },
                System(name: "Lode .noSync") {
                    for row in rows[range(3)] { try unsynced.write { try $0.upsert(row) } }
                },
            ])
        let withoutSync = Timing(system: "Lode .noSync", runs: seconds[3], operations: slice)
        return [
            Figure(
                workload:
                    "single-object commits, same durability class (Lode .noMetaSync, SQLite WAL synchronous=NORMAL)",
                size: count,
                timings: [
                    Timing(system: "Lode .noMetaSync", runs: seconds[0], operations: slice),
                    Timing(system: "SQLite WAL NORMAL", runs: seconds[1], operations: slice),
                    Timing(system: "raw LMDB .noMetaSync", runs: seconds[2], operations: slice),
                ],
                notes: [
                    "LMDB's .noMetaSync still flushes the data pages at every commit (SQLite's NORMAL flushes the WAL only at checkpoints); "
                        + "without any flush (Lode .noSync, which a power loss can damage on file systems that reorder writes): "
                        + "\(format(withoutSync.median)) per \(slice) commits (\(formatRate(withoutSync.opsPerSecond)))"
                ])
        ]
    }

    /// Eight threads each committing single objects durably (fsync per commit) at the same time:
    /// Lode with group commit (`groupedWrite`: writes that arrive together share one commit) against
    /// SQLite WAL `synchronous=FULL` (a connection per thread, waiting in SQLite's busy handler; and
    /// one connection the threads take turns on — SQLite serializes writers and syncs each commit)
    /// and raw LMDB (a write transaction per object; the same puts). Lode's `write`,
    /// one commit per write, is there for reference. The systems take turns, round by round.
    static func concurrentWriters(_ settings: Settings) throws -> [Figure] {
        let writers = 8
        let rounds = Swift.max(settings.runs, 5)
        let perWriter = Swift.max(settings.size(16_000) / rounds / writers, 1)
        let perRound = perWriter * writers
        let count = perRound * rounds
        let scratch = Scratch("concurrent")
        let store = try Store(at: scratch.url.appendingPathComponent("lode"), types: [Row.self])
        let alone = try Store(at: scratch.url.appendingPathComponent("lode-alone"), types: [Row.self])
        let raw = try RawLMDB(path: scratch.path("raw"))
        let sqlitePath = scratch.path("sqlite.db")
        let connections = try (0..<writers).map { _ in try SQLiteBaseline(path: sqlitePath, synchronous: true)
        }
        var rng = Generator(11)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let encoded = try rows.map(RawLMDB.bytes)
        // Round `round`, writer `writer`: the rows it commits (each system gets the same rows).
        let slice = { @Sendable (round: Int, writer: Int) -> Range<Int> in
            let start = round * perRound + writer * perWriter
            return start..<(start + perWriter)
        }
        let sendableRows = rows
        let sendableEncoded = encoded.map { SendableRow(key: $0.key, value: $0.value, indexKey: $0.indexKey) }
        let sendableConnections = UncheckedSendable(value: connections)
        // The other careful way: one connection that every thread uses in turn (what GRDB's
        // database pool does for writes), so no writer sleeps in SQLite's busy handler.
        let shared = UncheckedSendable(
            value: try SQLiteBaseline(path: scratch.path("shared.db"), synchronous: true))
        let sharedLock = NSLock()
        let records = raw.records
        let index = raw.index
        let environment = raw.environment
        // System `number` commits, on each of the writer threads, that thread's rows of the round
        // (`commit(writer, row)` for each).
        var round = [0, 0, 0, 0, 0]
        func system(_ number: Int, _ name: String, _ commit: @escaping @Sendable (Int, Int) throws -> Void)
            -> System
        {
            System(name: name) {
                let current = round[number]
                try onThreads(writers) { writer in
                    for row in slice(current, writer) { try commit(writer, row) }
                }
                round[number] += 1
            }
        }
        let seconds = try alternate(
            runs: rounds,
            [
                system(0, "Lode") { _, row in try store.groupedWrite { try $0.upsert(sendableRows[row]) } },
                system(1, "SQLite") { writer, row in
                    try sendableConnections.value[writer].insert([sendableRows[row]])
                },
                system(2, "raw LMDB") { _, row in
                    let bytes = sendableEncoded[row]
                    try environment.write { txn in
                        try txn.put(bytes.value, forKey: bytes.key, in: records)
                        try txn.put(bytes.key, forKey: bytes.indexKey, in: index)
                    }
                },
                system(3, "Lode alone") { _, row in try alone.write { try $0.upsert(sendableRows[row]) } },
                system(4, "SQLite shared") { _, row in
                    try sharedLock.withLock { try shared.value.insert([sendableRows[row]]) }
                },
            ])
        let commits = try store.read { $0.version }
        return [
            Figure(
                workload:
                    "durable single-object commits from \(writers) concurrent writers (fsync per commit)",
                size: perWriter * writers * rounds,
                timings: [
                    Timing(system: "Lode (group commit)", runs: seconds[0], operations: perWriter * writers),
                    Timing(
                        system: "SQLite WAL FULL, a connection each", runs: seconds[1],
                        operations: perWriter * writers),
                    Timing(
                        system: "SQLite WAL FULL, one shared connection", runs: seconds[4],
                        operations: perWriter * writers),
                    Timing(system: "raw LMDB", runs: seconds[2], operations: perWriter * writers),
                    Timing(
                        system: "Lode, a commit per write", runs: seconds[3], operations: perWriter * writers),
                ],
                notes: [
                    "Lode committed \(perWriter * writers * rounds) writes in about \(commits) commits (the store's version)"
                ])
        ]
    }
}

/// One row's encoded bytes, sendable to writer threads.
struct SendableRow: Sendable {
    var key: [UInt8]
    var value: [UInt8]
    var indexKey: [UInt8]
}

/// A value handed to threads that each use their own part of it (each writer its own connection).
struct UncheckedSendable<Value>: @unchecked Sendable {
    // @unchecked: each thread touches only its own element (see the call sites).
    var value: Value
}
