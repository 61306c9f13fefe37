import CMalloc
import Foundation
import LMDB
import Lode
import LodeInspection
import ModelStorage

/// How big and how often.
struct Settings {
    var scale = 1.0
    var quick = false
    var runs = 3

    func size(_ full: Int) -> Int {
        quick ? Swift.max(full / 1000, 20) : Swift.max(Int(Double(full) * scale), 1)
    }
}

/// A store, a raw LMDB environment and a SQLite database holding the same `count` rows.
final class Fixture {
    let scratch = Scratch("fixture")
    let rows: [Row]
    let store: Store
    /// The same store opened with ``CodableRow``, the `Codable` path beside the generated one.
    let codableStore: Store
    let raw: RawLMDB
    let sqlite: SQLiteBaseline

    init(count: Int, scores: Int = 1000, durability: Store.Durability = .noSync) throws {
        var rng = Generator(42)
        let rows = (0..<count).map { Row.make($0, &rng, scores: scores) }
        self.rows = rows
        store = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: StoreConfiguration(durability: durability, initialMapSize: 4 << 30),
            types: [Row.self])
        try store.write { tx in for row in rows { try tx.insert(row) } }
        codableStore = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: StoreConfiguration(durability: durability, initialMapSize: 4 << 30),
            types: [CodableRow.self])
        raw = try RawLMDB(path: scratch.path("raw"), durability: durability == .full ? .full : .noSync)
        try raw.insert(try rows.map(RawLMDB.bytes))
        sqlite = try SQLiteBaseline(path: scratch.path("sqlite.db"), synchronous: durability == .full)
        try sqlite.insert(rows)
    }
}

/// The median time of handing work to a serial queue and being woken when it is done: the floor
/// under any delivery that crosses threads (Lode's crosses two: to the observer's queue, and from
/// it to whoever waits).
func bareHop() -> Double {
    let queue = DispatchQueue(label: "lode-bench.hop")
    let done = DispatchSemaphore(value: 0)
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<200 {
        let elapsed = clock.measure {
            queue.async { done.signal() }
            done.wait()
        }
        samples.append(Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
    }
    return samples.sorted()[samples.count / 2]
}

/// What `Codable` costs by itself for `rows`, the median of `runs`: encoding each into CBOR, and
/// decoding each back from bytes already in memory — the part of Lode's writes and reads that no
/// storage engine shares (SQLite binds and reads the four columns by hand).
func codingCost(_ rows: [Row], runs: Int) throws -> (encode: Double, decode: Double) {
    let encoder = CBOREncoder()
    let decoder = CBORDecoder()
    var bytes: [[UInt8]] = []
    let encoding = try measure(runs: runs) { bytes = try rows.map { try encoder.encode($0) } }
    var sink = 0
    let decoding = try measure(runs: runs) {
        for record in bytes { sink &+= try decoder.decode(Row.self, from: record).score }
    }
    _ = sink
    return (encoding.sorted()[encoding.count / 2], decoding.sorted()[decoding.count / 2])
}

enum Workloads {
    static let all: [(String, @Sendable (Settings) throws -> [Figure])] = [
        ("bulk-insert", bulkInsert), ("point-reads", pointReads), ("scan-decode", scanAndDecode),
        ("range-query", rangeQuery), ("filtered-scan", filteredScan), ("sorted-top", sortedTop),
        ("projection", projection),
        ("durable-commits", durableCommits),
        ("update-10pct", updateTenPercent),
        ("live-sorted", liveSorted), ("live-sectioned", liveSectioned),
        ("live-many-queries", liveManyQueries),
        ("differs", differs), ("live-memory", liveMemory), ("page-check", pageCheck),
        ("open-check", openCheck), ("commit-latency", commitLatency),
        ("same-class-durability", sameClassDurability), ("concurrent-writers", concurrentWriters),
        ("links", links), ("sync", sync), ("studio", studio), ("text", text), ("encryption", encryption),
        ("history", history),
    ]

    static func bulkInsert(_ settings: Settings) throws -> [Figure] {
        let count = settings.size(1_000_000)
        var rng = Generator(1)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let encoded = try rows.map(RawLMDB.bytes)
        let times = try alternate(runs: settings.runs, CoreSystems.bulkInsert(rows: rows, encoded: encoded))
        let (lode, raw, sqlite) = (times[0], times[1], times[2])
        let coding = try codingCost(rows, runs: settings.runs)
        return [
            Figure(
                workload: "bulk insert, one index, one transaction", size: count,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: count),
                    Timing(system: "raw LMDB", runs: raw, operations: count),
                    Timing(system: "SQLite", runs: sqlite, operations: count),
                    Timing(system: "Lode (Codable)", runs: times[3], operations: count),
                ],
                notes: [
                    "Codable encoding of the rows alone: \(format(coding.encode)) (raw LMDB is given the bytes ready-made)"
                ])
        ]
    }

    static func pointReads(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        var rng = Generator(2)
        let ids = (0..<Swift.max(fixture.rows.count / 10, 10)).map { _ in
            Int.random(in: 0..<fixture.rows.count, using: &rng)
        }
        let sink = Sink()
        let times = try alternate(
            runs: settings.runs, try CoreSystems.pointReads(fixture, ids: ids, sink: sink))
        let (lode, raw, sqlite) = (times[0], times[1], times[2])
        let coding = try codingCost(ids.map { fixture.rows[$0] }, runs: settings.runs)
        return [
            Figure(
                workload: "random point reads by primary key (decoded)", size: ids.count,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: ids.count),
                    Timing(system: "raw LMDB", runs: raw, operations: ids.count),
                    Timing(system: "SQLite", runs: sqlite, operations: ids.count),
                    Timing(system: "Lode (Codable)", runs: times[3], operations: ids.count),
                ],
                notes: ["Codable decoding of these records alone, from memory: \(format(coding.decode))"])
        ]
    }

    static func scanAndDecode(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let times = try alternate(runs: settings.runs, CoreSystems.scan(fixture, sink: Sink()))
        let (lode, raw, sqlite) = (times[0], times[1], times[2])
        let count = fixture.rows.count
        let coding = try codingCost(fixture.rows, runs: settings.runs)
        return [
            Figure(
                workload: "full scan, every object decoded", size: count,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: count),
                    Timing(system: "raw LMDB", runs: raw, operations: count),
                    Timing(system: "SQLite", runs: sqlite, operations: count),
                    Timing(system: "Lode (Codable)", runs: times[3], operations: count),
                ],
                notes: ["Codable decoding of every record alone, from memory: \(format(coding.decode))"])
        ]
    }

    static func rangeQuery(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let (lower, upper) = CoreSystems.rangeBounds
        let sink = Sink()
        let results = fixture.store.objects(Row.self).filter(
            #Predicate { $0.score >= lower && $0.score < upper })
        let times = try alternate(runs: settings.runs, CoreSystems.range(fixture, sink: sink))
        let found = sink.value
        let (lode, sqlite) = (times[0], times[1])
        let coding = try codingCost(
            fixture.rows.filter { $0.score >= lower && $0.score < upper }, runs: settings.runs)
        return [
            Figure(
                workload: "indexed range query returning 1%", size: found,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: found),
                    Timing(system: "SQLite", runs: sqlite, operations: found),
                    Timing(system: "Lode (Codable)", runs: times[2], operations: found),
                ],
                notes: [
                    "plan: \(try results.explain())",
                    "Codable decoding of the records found alone, from memory: \(format(coding.decode))",
                ])
        ]
    }

    static func filteredScan(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let times = try alternate(runs: settings.runs, CoreSystems.filteredScan(fixture, sink: Sink()))
        let bound = CoreSystems.valueBound(fixture)
        let found = fixture.rows.count { $0.value < bound }
        let plan = try fixture.store.objects(Row.self).filter(#Predicate { $0.value < bound }).explain()
        return [
            Figure(
                workload: "filtered scan: 1% by a property without an index", size: fixture.rows.count,
                timings: [
                    Timing(system: "Lode", runs: times[0], operations: fixture.rows.count),
                    Timing(system: "SQLite", runs: times[1], operations: fixture.rows.count),
                    Timing(system: "Lode (Codable)", runs: times[2], operations: fixture.rows.count),
                ],
                notes: ["\(found) objects found; plan: \(plan)"])
        ]
    }

    static func sortedTop(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let times = try alternate(runs: settings.runs, CoreSystems.sortedTop(fixture, sink: Sink()))
        let plan = try fixture.store.objects(Row.self).sorted(by: \.value, ascending: false).limit(100)
            .explain()
        return [
            Figure(
                workload: "top 100 by a property without an index", size: fixture.rows.count,
                timings: [
                    Timing(system: "Lode", runs: times[0], operations: fixture.rows.count),
                    Timing(system: "SQLite", runs: times[1], operations: fixture.rows.count),
                    Timing(system: "Lode (Codable)", runs: times[2], operations: fixture.rows.count),
                ],
                notes: ["plan: \(plan)"])
        ]
    }

    static func projection(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let times = try alternate(runs: settings.runs, CoreSystems.projection(fixture, sink: Sink()))
        let count = fixture.rows.count
        let decoding = try measure(runs: settings.runs) { _ = try fixture.store.objects(Row.self).fetch() }
        return [
            Figure(
                workload: "projection: one field of every object (values(of: \\.name))", size: count,
                timings: [
                    Timing(system: "Lode", runs: times[0], operations: count),
                    Timing(system: "SQLite (SELECT name)", runs: times[1], operations: count),
                    Timing(system: "Lode (Codable)", runs: times[2], operations: count),
                ],
                notes: [
                    "Lode decoding every whole object instead (fetch()): \(format(decoding.sorted()[decoding.count / 2]))"
                ])
        ]
    }

    static func durableCommits(_ settings: Settings) throws -> [Figure] {
        let count = settings.size(10_000)
        let scratch = Scratch("durable")
        let store = try Store(at: scratch.url.appendingPathComponent("lode"), types: [Row.self])
        let raw = try RawLMDB(path: scratch.path("raw"))
        let sqlite = try SQLiteBaseline(path: scratch.path("sqlite.db"))
        var rng = Generator(3)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let encoded = try rows.map(RawLMDB.bytes)
        // fsync latency drifts over a run, so the systems take turns: each round commits the next
        // slice of rows one by one in each system, and every round is one sample.
        let rounds = Swift.max(settings.runs, 5)
        let slice = Swift.max(count / rounds, 1)
        let systems = CoreSystems.durableCommits(
            store: store, raw: raw, sqlite: sqlite, rows: rows, encoded: encoded, perBody: slice)
        var times = Array(repeating: [Double](), count: systems.count)
        // The bytes each system has the kernel write (pages, logs, metadata), from /proc/self/io.
        var written = Array(repeating: 0, count: systems.count)
        for _ in 0..<rounds {
            for (position, system) in systems.enumerated() {
                let before = writtenBytes()
                times[position] += try measure(runs: 1, system.body)
                written[position] += writtenBytes() - before
            }
        }
        let (lode, rawTimes, sqliteTimes) = (times[0], times[1], times[2])
        let commits = Double(rounds * slice)
        return [
            Figure(
                workload: "single-object durable commits (fsync each)", size: count,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: slice),
                    Timing(system: "raw LMDB", runs: rawTimes, operations: slice),
                    Timing(system: "SQLite", runs: sqliteTimes, operations: slice),
                ],
                notes: [
                    "bytes written per commit (/proc/self/io write_bytes): "
                        + zip(systems, written).map { "\($0.name) \(Int(Double($1) / commits))" }.joined(
                            separator: ", ")
                ])
        ]
    }

    /// One-object commits right after a bulk load, one by one, the systems taking turns commit by
    /// commit: the spread (p99 and max against the median) shows whether some commits pay for work
    /// the others skip (change-log pruning once did: every 64th commit took 63 ms after a 20k load).
    /// Without fsync (`.noSync`, SQLite `synchronous=OFF`-like NORMAL in WAL), so the disk's own
    /// latency does not hide the library's.
    static func commitLatency(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let commits = settings.quick ? 100 : 1_000
        var rng = Generator(8)
        let ids = (0..<commits).map { _ in Int.random(in: 0..<fixture.rows.count, using: &rng) }
        var next = 0
        let decoder = CBORDecoder()
        let times = try alternate(
            runs: commits,
            [
                System(name: "Lode") {
                    let id = ids[next % commits]
                    try fixture.store.write { tx in try tx.update(Row.self, key: id) { $0.value += 1 } }
                },
                System(name: "raw LMDB") {
                    let key = try KeyEncoder().encode(ids[next % commits])
                    try fixture.raw.environment.write { txn in
                        guard let stored = try txn.get(key, in: fixture.raw.records) else { return }
                        var row = try decoder.decode(Row.self, from: stored)
                        row.value += 1
                        try txn.put(try CBOREncoder().encode(row), forKey: key, in: fixture.raw.records)
                    }
                },
                System(name: "SQLite") {
                    try fixture.sqlite.exec("BEGIN")
                    try fixture.sqlite.readModifyWrite(id: ids[next % commits]) { $0.value += 1 }
                    try fixture.sqlite.exec("COMMIT")
                    next += 1
                },
            ])
        let timings = zip(["Lode", "raw LMDB", "SQLite"], times).map {
            Timing(system: $0.0, runs: $0.1, operations: 1)
        }
        return [
            Figure(
                workload: "one-object commits after a bulk load (no fsync): latency",
                size: fixture.rows.count,
                timings: timings,
                notes: timings.map { timing in
                    "\(timing.system): median \(format(timing.median)), p99 \(format(timing.percentile(99))), max \(format(timing.maximum)), p99/median \(String(format: "%.2f", timing.percentile(99) / timing.median))"
                })
        ]
    }

    /// The structural check of every page (`StoreConfiguration.pageCheck`, `lode-dump check`) against SQLite's
    /// own structural check (`PRAGMA quick_check`) and against reading the file once, the floor for
    /// any check that looks at every page. Systems take turns run by run.
    static func pageCheck(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let file = fixture.store.path + "/data.mdb"
        var sink = 0
        let times = try alternate(
            runs: Swift.max(settings.runs, 3),
            [
                System(name: "Lode") {
                    let report = try fixture.store.checkPages()
                    guard report.isClean else { throw BenchError.sqlite("page check: \(report.problems)") }
                    sink &+= report.pagesInUse
                },
                System(name: "SQLite") { try fixture.sqlite.exec("PRAGMA quick_check") },
                System(name: "read") {
                    let descriptor = Foundation.open(file, O_RDONLY)
                    defer { close(descriptor) }
                    var buffer = [UInt8](repeating: 0, count: 1 << 20)
                    var offset = 0
                    while true {
                        let count = buffer.withUnsafeMutableBytes {
                            pread(descriptor, $0.baseAddress, 1 << 20, off_t(offset))
                        }
                        guard count > 0 else { break }
                        sink &+= Int(buffer[0])
                        offset += count
                    }
                },
            ])
        let (lode, sqlite, read) = (times[0], times[1], times[2])
        _ = sink
        let info = try fixture.store.fileInfo()
        return [
            Figure(
                workload: "structural check of every page", size: fixture.rows.count,
                timings: [
                    Timing(system: "Lode (checkPages)", runs: lode, operations: fixture.rows.count),
                    Timing(
                        system: "SQLite (PRAGMA quick_check)", runs: sqlite, operations: fixture.rows.count),
                    Timing(system: "reading data.mdb once", runs: read, operations: fixture.rows.count),
                ],
                notes: ["data.mdb uses \(info.usedBytes >> 20) MiB"])
        ]
    }

    /// Opening a store with its type registered, with the check at open (the catalog's example
    /// record of each shape and the first and last 16 records decoded) and without it; and a cold
    /// open and close of the store closed cleanly, with the record of its clean close and without.
    static func openCheck(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let url = URL(fileURLWithPath: fixture.store.path)
        func open(checking: Bool) throws {
            try Store(
                at: url, configuration: StoreConfiguration(checksTypesAtOpen: checking), types: [Row.self]
            )
            .close()
        }
        let times = try alternate(
            runs: Swift.max(settings.runs, 3),
            [
                System(name: "Lode, checked") { try open(checking: true) },
                System(name: "Lode, unchecked") { try open(checking: false) },
            ])
        let count = fixture.rows.count
        // Cold opens of a store closed cleanly, nothing else holding it in this process: as an app
        // opens it (the record of its last clean close read and compared, written again at close)
        // against the open before Lode kept the record. Each run opens and closes the store.
        fixture.store.close()
        fixture.codableStore.close()
        var checkedOpens = 0
        func cold(recording: Bool) throws {
            var configuration = StoreConfiguration()
            configuration.keepsCloseRecord = recording
            let store = try Store(at: url, configuration: configuration, types: [Row.self])
            if store.pagesCheckedAtOpen { checkedOpens += 1 }
            store.close()
        }
        try cold(recording: true)
        checkedOpens = 0
        let coldTimes = try alternate(
            runs: Swift.max(settings.runs, 5),
            [
                System(name: "Lode") { try cold(recording: true) },
                System(name: "Lode, no record") { try cold(recording: false) },
            ])
        return [
            Figure(
                workload: "open with the type check at open", size: count,
                timings: [
                    Timing(system: "Lode, checked", runs: times[0], operations: count),
                    Timing(system: "Lode, unchecked", runs: times[1], operations: count),
                ]),
            Figure(
                workload: "open and close of a store closed cleanly", size: count,
                timings: [
                    Timing(system: "Lode (clean-close record)", runs: coldTimes[0], operations: count),
                    Timing(system: "Lode (no record, as before)", runs: coldTimes[1], operations: count),
                ],
                notes: ["opens that checked the pages (the file not found as recorded): \(checkedOpens)"]),
        ]
    }

    static func updateTenPercent(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let ids = Array(stride(from: 0, to: fixture.rows.count, by: 10))
        let times = try alternate(runs: settings.runs, CoreSystems.update(fixture, ids: ids))
        let (lode, raw, sqlite) = (times[0], times[1], times[2])
        return [
            Figure(
                workload: "update 10% of objects in one transaction", size: ids.count,
                timings: [
                    Timing(system: "Lode", runs: lode, operations: ids.count),
                    Timing(system: "raw LMDB", runs: raw, operations: ids.count),
                    Timing(system: "SQLite", runs: sqlite, operations: ids.count),
                    Timing(system: "Lode (whole object)", runs: times[3], operations: ids.count),
                    Timing(system: "Lode (Codable)", runs: times[4], operations: ids.count),
                ],
                notes: [
                    "Lode changes the one property in place (update(_:key:_:_:)); whole object: update(_:key:_:)"
                ])
        ]
    }

    /// What the live workloads sample, each commit apart.
    struct LiveSamples {
        var endToEnd: [Double] = []
        var writes: [Double] = []
        var incremental: [Double] = []
        var naive: [Double] = []

        /// The two figures of a live workload: write → delivered against the naive way, and the
        /// incremental part alone.
        func figures(_ kind: String, naiveName: String, size: Int) -> [Figure] {
            let delivery = zip(endToEnd, writes).map { $0 - $1 }
            return [
                Figure(
                    workload: "live \(kind) results: one-object write → change delivered", size: size,
                    timings: [
                        Timing(system: "Lode observe", runs: endToEnd, operations: 1),
                        Timing(system: naiveName, runs: naive, operations: 1),
                    ],
                    notes: [
                        "a bare hop to another thread and back on this machine (DispatchQueue.async, then a semaphore): \(format(bareHop())) median",
                        "of which the write itself (until store.write returned): \(format(Timing(system: "", runs: writes, operations: 1).median)) median; "
                            + "delivery after it (notifier, advance, hop to the observer): \(format(Timing(system: "", runs: delivery, operations: 1).median)) median",
                    ]),
                Figure(
                    workload: "live \(kind) results: incremental part (refresh after the commit)", size: size,
                    timings: [Timing(system: "Lode live", runs: incremental, operations: 1)]),
            ]
        }
    }

    /// Samples a live workload: one-object writes that give a random row a random score, in blocks
    /// of five per system in turn — a naive re-fetch of every key between two of Lode's commits would
    /// leave each of them cold, which is not what an app sees. End to end: the write, then waiting
    /// for the observer (`delivered`); the incremental part: `refresh` after a write; the naive
    /// way: `naive(id, score)`.
    static func sampleLive(
        _ fixture: Fixture, commits: Int, seed: UInt64, delivered: DispatchSemaphore,
        refresh: () throws -> Void, naive: (Int, Int) throws -> Void
    ) throws -> LiveSamples {
        var rng = Generator(seed)
        var samples = LiveSamples()
        let clock = ContinuousClock()
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        for _ in 0..<(commits / 5) {
            let block = (0..<5).map { _ in
                (Int.random(in: 0..<fixture.rows.count, using: &rng), Int.random(in: 0..<1000, using: &rng))
            }
            for (id, score) in block {
                let start = clock.now
                try fixture.store.write { tx in try tx.update(Row.self, key: id) { $0.score = score } }
                let written = clock.now
                delivered.wait()
                samples.endToEnd.append(seconds(clock.now - start))
                samples.writes.append(seconds(written - start))
            }
            for (id, score) in block {
                try fixture.store.write { tx in
                    try tx.update(Row.self, key: id) { $0.score = (score + 1) % 1000 }
                }
                delivered.wait()
                samples.incremental += try measure(runs: 1) { try refresh() }
            }
            for (id, score) in block { samples.naive += try measure(runs: 1) { try naive(id, score) } }
        }
        return samples
    }

    /// One-object commits on live sorted results of 10k, 100k and 1M objects, three ways: the
    /// incremental part alone (`refresh()` after the commit), end to end through the public
    /// observation API (from the start of the write to the change delivered on the observer's
    /// queue), and the naive way an app without live results would do it — re-fetch the ordered keys
    /// from SQLite after its own update and `difference(from:)` them (no move inference).
    static func liveSorted(_ settings: Settings) throws -> [Figure] {
        try [10_000, 100_000, 1_000_000].flatMap { full in
            let fixture = try Fixture(count: settings.size(full))
            let query = fixture.store.objects(Row.self).sorted(by: \.score)
            let live = try query.live()
            let delivered = DispatchSemaphore(value: 0)
            let token = query.observe { _ in delivered.signal() }
            defer { token.cancel() }
            delivered.wait()  // the initial evaluation, on the observer's queue
            var previous = fixture.sqlite.idsByScore()
            let samples = try sampleLive(
                fixture, commits: settings.quick ? 5 : 20, seed: 4, delivered: delivered,
                refresh: { _ = try live.refresh() },
                naive: { id, score in
                    try fixture.sqlite.update(id: id, score: score, ownTransaction: true)
                    let ids = fixture.sqlite.idsByScore()
                    _ = ids.difference(from: previous)
                    previous = ids
                })
            return samples.figures(
                "sorted", naiveName: "naive: SQLite update, re-fetch keys, difference",
                size: fixture.rows.count)
        }
    }

    /// Live sections (by score / 100, rows by score) end to end, as `liveSorted` measures: a write,
    /// then the change delivered through `observe`; the naive way updates SQLite, fetches the ordered
    /// ids with their scores again, cuts them into sections and diffs each section with
    /// `difference(from:)`. Blocks of five commits, alternating; the incremental part apart.
    static func liveSectioned(_ settings: Settings) throws -> [Figure] {
        try [10_000, 100_000, 1_000_000].flatMap { full in
            let fixture = try Fixture(count: settings.size(full))
            let sectioned = fixture.store.objects(Row.self).sorted(by: \.score).sectioned { $0.score / 100 }
            let live = try sectioned.live()
            let delivered = DispatchSemaphore(value: 0)
            let token = sectioned.observe { _ in delivered.signal() }
            defer { token.cancel() }
            delivered.wait()  // the initial sections, on the observer's queue
            func sections(_ rows: [(id: Int, score: Int)]) -> [[Int]] {
                var result: [[Int]] = []
                var current = -1
                for row in rows {
                    if row.score / 100 != current {
                        current = row.score / 100
                        result.append([])
                    }
                    result[result.count - 1].append(row.id)
                }
                return result
            }
            var previous = sections(fixture.sqlite.idsAndScoresByScore())
            let samples = try sampleLive(
                fixture, commits: settings.quick ? 5 : 20, seed: 5, delivered: delivered,
                refresh: { _ = try live.refresh() },
                naive: { id, score in
                    try fixture.sqlite.update(id: id, score: score, ownTransaction: true)
                    let fresh = sections(fixture.sqlite.idsAndScoresByScore())
                    for (index, section) in fresh.enumerated() where index < previous.count {
                        _ = section.difference(from: previous[index])
                    }
                    previous = fresh
                })
            return samples.figures(
                "sectioned", naiveName: "naive: SQLite update, re-fetch, sections, difference",
                size: fixture.rows.count)
        }
    }

    /// 1,000 live queries (one score each, ordered by value) absorbing commits of 10,000 changed
    /// objects, half of which change score (leave one query, join another) and half value (move inside
    /// their query): Lode's live group against the naive way — SQLite applies the same changes, then
    /// every query's ordered keys are fetched again and diffed with `difference(from:)`. Neither the
    /// commit nor SQLite's writes are timed; five rounds, the systems in turn.
    static func liveManyQueries(_ settings: Settings) throws -> [Figure] {
        let queries = settings.quick ? 10 : 1000
        let fixture = try Fixture(count: queries * (settings.quick ? 20 : 1000), scores: queries)
        let group = LiveGroup(store: fixture.store)
        for score in 0..<queries {
            group.add(
                try fixture.store.objects(Row.self).filter(#Predicate { $0.score == score }).sorted(
                    by: \.value
                )
                .live())
        }
        var previous = (0..<queries).map { fixture.sqlite.ids(score: $0) }
        var current = fixture.rows
        var rng = Generator(6)
        let changed = settings.quick ? 50 : 10_000
        var lode: [Double] = []
        var naive: [Double] = []
        var moved = 0
        for _ in 0..<5 {
            var changes: [(id: Int, score: Int, value: Double)] = []
            for index in 0..<changed {
                let id = Int.random(in: 0..<current.count, using: &rng)
                if index % 2 == 0 {
                    current[id].score = Int.random(in: 0..<queries, using: &rng)
                } else {
                    current[id].value = Double.random(in: 0..<Double(current.count), using: &rng)
                }
                changes.append((id, current[id].score, current[id].value))
            }
            try fixture.store.write { tx in
                for change in changes {
                    try tx.update(Row.self, key: change.id) {
                        $0.score = change.score
                        $0.value = change.value
                    }
                }
            }
            lode += try measure(runs: 1) {
                for change in try group.refresh() {
                    if case .results(_, let collection) = change { moved += collection.moves.count }
                }
            }
            try fixture.sqlite.exec("BEGIN")
            for change in changes {
                try fixture.sqlite.set(id: change.id, score: change.score, value: change.value)
            }
            try fixture.sqlite.exec("COMMIT")
            naive += measure(runs: 1) {
                for score in 0..<queries {
                    let ids = fixture.sqlite.ids(score: score)
                    _ = ids.difference(from: previous[score])
                    previous[score] = ids
                }
            }
        }
        return [
            Figure(
                workload:
                    "\(queries) live queries absorbing a \(changed)-object commit (membership and order)",
                size: fixture.rows.count,
                timings: [
                    Timing(system: "Lode live group", runs: lode, operations: 1),
                    Timing(system: "naive: SQLite re-fetch keys + difference", runs: naive, operations: 1),
                ], notes: ["moves reported over the five commits: \(moved)"])
        ]
    }

    static func differs(_ settings: Settings) throws -> [Figure] {
        var figures: [Figure] = []
        for full in [10_000, 100_000] {
            for percent in [1, 20] {
                let count = settings.size(full)
                var rng = Generator(UInt64(count * percent))
                let old = Array(0..<count)
                var new = old
                for _ in 0..<(count * percent / 100) {
                    // Half moves, half replacements.
                    if Bool.random(using: &rng) {
                        let value = new.remove(at: Int.random(in: 0..<new.count, using: &rng))
                        new.insert(value, at: Int.random(in: 0...new.count, using: &rng))
                    } else {
                        new[Int.random(in: 0..<new.count, using: &rng)] =
                            count + Int.random(in: 0..<count, using: &rng)
                    }
                }
                let uniqueNew = Array(NSOrderedSet(array: new)) as! [Int]
                // The four take turns run by run, so a change in the machine's state (another
                // tenant's use of the shared cache) lands on all of them.
                let seconds = try alternate(
                    runs: Swift.max(settings.runs, 5),
                    [
                        System(name: "Heckel") { _ = HeckelDiffer().diff(old, uniqueNew) },
                        System(name: "inferringMoves") {
                            _ = uniqueNew.difference(from: old).inferringMoves()
                        },
                        System(name: "Myers") { _ = MyersDiffer().diff(old, uniqueNew) },
                        System(name: "difference") { _ = uniqueNew.difference(from: old) },
                    ])
                let ratios = zip(seconds[0], seconds[1]).map { $1 / $0 }
                figures.append(
                    Figure(
                        workload: "differs, \(percent)% changed (moves and replacements)", size: count,
                        timings: [
                            Timing(system: "Heckel", runs: seconds[0], operations: count),
                            Timing(
                                system: "difference(from:).inferringMoves()", runs: seconds[1],
                                operations: count),
                        ],
                        notes: [
                            String(
                                format: "ratio run by run: %.2f× to %.2f×", ratios.min() ?? 0,
                                ratios.max() ?? 0)
                        ]))
                figures.append(
                    Figure(
                        workload: "Myers differ, \(percent)% changed", size: count,
                        timings: [
                            Timing(system: "Myers", runs: seconds[2], operations: count),
                            Timing(system: "difference(from:)", runs: seconds[3], operations: count),
                        ]))
            }
        }
        return figures
    }

    static func liveMemory(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        func allocated() -> Int {
            malloc_trim(0)
            let info = mallinfo2()
            return Int(info.uordblks) + Int(info.hblkhd)
        }
        let query = fixture.store.objects(Row.self).sorted(by: \.score)
        let before = allocated()
        var live: LiveResults<Row>? = nil
        let times = try measure(runs: 1) { live = try query.live() }
        let kept = allocated() - before
        let count = try live?.results.count ?? 0
        live = nil
        let released = allocated() - before
        return [
            Figure(
                workload: "memory of a live sorted result", size: count,
                timings: [Timing(system: "Lode live (made in)", runs: times, operations: 1)],
                notes: [
                    String(
                        format:
                            "allocations kept: %.1f MB (%.0f bytes per object); after releasing it: %.1f MB",
                        Double(kept) / 1e6, Double(kept) / Double(Swift.max(count, 1)), Double(released) / 1e6
                    )
                ])
        ]
    }
}

extension Results where Element == Row {
    func copyingIDs() throws -> [Int] { try fetch().map(\.id) }
}
