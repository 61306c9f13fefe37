import CMalloc
import Foundation
import Lode
import LodeMacros
import LodeSync
import LodeTestSupport

/// The object of the sync workloads as a generated model (the same table, the same fields).
@Model(name: "SyncRow")
struct SyncModelRow {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var rank: Int
    var done: Bool
}

/// An object of the sync workloads.
struct SyncRow: Persistable {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    static let schema = Schema<SyncRow>(name: "SyncRow", primaryKey: \.id, indexes: [.on(\.rank)])
}

extension Workloads {
    /// Sync through a PostgreSQL server on this machine (a private cluster the workload starts and
    /// stops, on a Unix socket):
    /// - a write on client A delivered to a live result on client B, against polling a `SELECT`
    ///   every second;
    /// - the first download of `100,000` objects into an empty store, against `COPY` of the same rows
    ///   out of PostgreSQL, with the client's peak memory while it runs;
    /// - the upload of `10,000` commits queued while the client was stopped, against applying each as
    ///   an `INSERT` of its own.
    static func sync(_ settings: Settings) throws -> [Figure] {
        let cluster = try PostgresTestCluster()
        defer { try? cluster.stop(mode: "immediate") }
        var figures: [Figure] = []
        for (_, part) in syncParts { figures += try part(settings, cluster) }
        return figures
    }

    /// The parts of ``sync(_:)``, each also a workload of its own (`--only sync-many`), run only when
    /// named.
    static let syncParts: [(String, @Sendable (Settings, PostgresTestCluster) throws -> [Figure])] = [
        ("sync-latency", { [try syncLatency($0, $1)] }),
        ("sync-download", { [try firstDownload($0, $1), try largeDownload($0, $1)] }),
        ("sync-upload", { [try offlineUpload($0, $1), try queuedUpload($0, $1)] }),
        ("sync-many", { try manyClients($0, $1) }),
        ("sync-partial", { [try partialDownload($0, $1)] }),
    ]

    /// Parts of a workload that run only when named: ``syncParts``, each on a cluster of its own, and
    /// the inverse link of ``links(_:)``. Each with the workload it is a part of.
    static let namedParts: [(String, @Sendable (Settings) throws -> [Figure])] =
        syncParts.map { name, part in
            (
                name,
                { settings in
                    let cluster = try PostgresTestCluster()
                    defer { try? cluster.stop(mode: "immediate") }
                    return try part(settings, cluster)
                }
            )
        } + [("links-inverse", linksInverse)]

    /// The workload a named part belongs to.
    static func whole(ofPart name: String) -> String { name.hasPrefix("sync-") ? "sync" : "links" }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static let benchOptions = SyncOptions(minimumBackoff: .milliseconds(50))

    /// A write on A until B's live result delivers it.
    private static func syncLatency(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let server = SyncServer(connectionString: try cluster.makeDatabase())
        try server.setUp(for: [SyncRow.self])
        let scratch = Scratch("sync-latency")
        func store(_ name: String) throws -> Store {
            try Store(
                at: scratch.url.appendingPathComponent(name),
                configuration: StoreConfiguration(durability: .noSync),
                types: [SyncRow.self])
        }
        let a = try store("a")
        let b = try store("b")
        let syncA = try SyncClient(
            store: a, server: server, types: [.type(SyncRow.self)], options: benchOptions)
        let syncB = try SyncClient(
            store: b, server: server, types: [.type(SyncRow.self)], options: benchOptions)
        syncA.start()
        syncB.start()
        defer {
            syncA.stop()
            syncB.stop()
        }
        try a.write { tx in
            for id in 0..<1000 { try tx.insert(SyncRow(id: id, title: "row \(id)", rank: id, done: false)) }
        }
        try syncA.synchronize()
        try syncB.synchronize()
        // B's live result: the time a change arrives, by the rank it carries.
        let arrived = LockedTimes()
        let token = b.objects(SyncRow.self).sorted(by: \.rank).observe { change in
            guard case .update(let results, _) = change, let first = try? results.first else { return }
            arrived.note(first.rank, at: ContinuousClock.now)
        }
        defer { token.cancel() }
        let writes = settings.quick ? 20 : 200
        var lode: [Double] = []
        for write in 0..<writes {
            let rank = -1 - write
            let start = ContinuousClock.now
            try a.write { tx in try tx.update(SyncRow.self, key: write % 1000) { $0.rank = rank } }
            guard let at = arrived.wait(for: rank, timeout: 10) else {
                throw BenchError.sqlite("no delivery")
            }
            lode.append(seconds(at - start))
            Thread.sleep(forTimeInterval: 0.005)
        }
        // The naive way: a writer updates a row with SQL at random moments; a reader polls a SELECT
        // of the rows changed since its last look every second, on its own schedule.
        let naiveWrites = settings.quick ? 3 : 10
        let writer = try PostgresConnection(connectionString: server.connectionString)
        let seenByPoller = LockedTimes()
        let polling = Polling()
        let connection = server.connectionString
        let poller = Thread {
            guard let reader = try? PostgresConnection(connectionString: connection) else { return }
            var seen = (try? reader.execute("SELECT max(version) FROM lode.\"SyncRow\"").integer(0, 0)) ?? 0
            while polling.running {
                guard
                    let rows = try? reader.execute(
                        "SELECT version, data->>'rank' FROM lode.\"SyncRow\" WHERE version > $1 ORDER BY version",
                        ["\(seen)"])
                else { return }
                let now = ContinuousClock.now
                for row in 0..<rows.rowCount {
                    seen = Swift.max(seen, rows.integer(row, 0) ?? seen)
                    if let rank = rows.integer(row, 1) { seenByPoller.note(Int(rank), at: now) }
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }
        poller.start()
        defer { polling.stop() }
        var naive: [Double] = []
        var rng = Generator(77)
        for write in 0..<naiveWrites {
            Thread.sleep(forTimeInterval: Double.random(in: 0.1...1.1, using: &rng))
            let rank = -10_000 - write
            let start = ContinuousClock.now
            try writer.execute(
                "UPDATE lode.\"SyncRow\" SET data = jsonb_set(data, '{rank}', to_jsonb($1::int)) WHERE key = '0'",
                ["\(rank)"])
            guard let at = seenByPoller.wait(for: rank, timeout: 10) else {
                throw BenchError.sqlite("not polled")
            }
            naive.append(seconds(at - start))
        }
        let lodeTiming = Timing(system: "Lode: write on A → B's live result", runs: lode, operations: 1)
        return Figure(
            workload: "sync: a write delivered to another client's live result", size: writes,
            timings: [
                lodeTiming, Timing(system: "naive: SELECT polled every second", runs: naive, operations: 1),
            ],
            notes: [
                "Lode median \(format(lodeTiming.median)), p99 \(format(lodeTiming.percentile(99))), max \(format(lodeTiming.maximum)) (target: median under 50 ms)"
            ])
    }

    /// An empty store's first download of `count` rows, against COPY of the same rows: the rows
    /// read as `SyncRow` (`Codable`) and as `SyncModelRow` (a generated model), turn by turn.
    private static func firstDownload(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let count = settings.size(100_000)
        let server = SyncServer(connectionString: try cluster.makeDatabase())
        try server.setUp(for: [SyncRow.self])
        let database = PostgresTestCluster.database(of: server.connectionString)
        try cluster.psql(
            """
            INSERT INTO lode."SyncRow" (key, data)
            SELECT i::text, jsonb_build_object('id', i, 'title', 'row number ' || i || ' of the first download',
                'rank', (i * 7919) % \(count), 'done', i % 3 = 0)
            FROM generate_series(0, \(count - 1)) AS i
            """, database: database)
        let runs = settings.quick ? 1 : settings.runs
        var lode: [Double] = []
        var generated: [Double] = []
        var copy: [Double] = []
        var peaks: [Int] = []
        var copiedBytes = 0
        // The heap is sampled in the first round only: `mallinfo2` walks malloc's arenas under their
        // locks, and sampling every 5 ms slowed the download it measured.
        func download<T: Persistable>(_ type: T.Type, sampled: Bool) throws -> Double {
            let scratch = Scratch("sync-download")
            let store = try Store(
                at: scratch.url.appendingPathComponent("store"),
                configuration: StoreConfiguration(durability: .noSync, initialMapSize: 1 << 30),
                types: [T.self])
            let client = try SyncClient(
                store: store, server: server, types: [.type(T.self)], options: benchOptions)
            let before = heapBytes()
            let peak = PeakSampler()
            if sampled { peak.start() }
            let start = ContinuousClock.now
            client.start()
            try client.synchronize(timeout: .seconds(600))
            let elapsed = seconds(ContinuousClock.now - start)
            if sampled { peaks.append(peak.stop() - before) }
            client.stop()
            let stored = try store.read { try $0.count(T.self) }
            guard stored == count else { throw BenchError.sqlite("downloaded \(stored) of \(count)") }
            return elapsed
        }
        for run in 0..<runs {
            lode.append(try download(SyncRow.self, sampled: run == 0))
            generated.append(try download(SyncModelRow.self, sampled: run == 0))
            let connection = try PostgresConnection(connectionString: server.connectionString)
            let copyStart = ContinuousClock.now
            var bytes = 0
            try connection.copyOut(
                "COPY (SELECT key, data FROM lode.\"SyncRow\" ORDER BY version, key) TO STDOUT"
            ) {
                bytes += $0.count
            }
            copy.append(seconds(ContinuousClock.now - copyStart))
            copiedBytes = bytes
        }
        return Figure(
            workload: "sync: first download into an empty store", size: count,
            timings: [
                Timing(system: "Lode (download, decode, commit)", runs: lode, operations: count),
                Timing(system: "COPY of the same rows", runs: copy, operations: count),
                Timing(system: "Lode, a generated model", runs: generated, operations: count),
            ],
            notes: [
                String(
                    format:
                        "client's heap grew by at most %.1f MB while %.1f MB of rows came down (target: flat; ≥ 0.5× COPY)",
                    Double(peaks.max() ?? 0) / 1e6, Double(copiedBytes) / 1e6)
            ])
    }

    /// `count` commits made while the client was stopped, uploaded when it starts.
    private static func queuedUpload(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let count = settings.size(10_000)
        let runs = settings.quick ? 1 : settings.runs
        var lode: [Double] = []
        var naive: [Double] = []
        for _ in 0..<runs {
            let server = SyncServer(connectionString: try cluster.makeDatabase())
            try server.setUp(for: [SyncRow.self])
            let scratch = Scratch("sync-upload")
            let store = try Store(
                at: scratch.url.appendingPathComponent("store"),
                configuration: StoreConfiguration(durability: .noSync), types: [SyncRow.self])
            for id in 0..<count {
                try store.write { tx in
                    try tx.insert(SyncRow(id: id, title: "queued \(id)", rank: id, done: false))
                }
            }
            let client = try SyncClient(
                store: store, server: server, types: [.type(SyncRow.self)], options: benchOptions)
            let start = ContinuousClock.now
            client.start()
            try client.synchronize(timeout: .seconds(600))
            lode.append(seconds(ContinuousClock.now - start))
            client.stop()
            // The naive way: each queued commit applied as a transaction of its own.
            let connection = try PostgresConnection(connectionString: server.connectionString)
            let naiveStart = ContinuousClock.now
            for id in 0..<count {
                try connection.execute(
                    "INSERT INTO lode.\"SyncRow\" (key, data) VALUES ($1, $2::jsonb) "
                        + "ON CONFLICT (key) DO UPDATE SET data = excluded.data",
                    [
                        "\(id)",
                        "{\"id\":\(id),\"title\":\"queued again \(id)\",\"rank\":\(id),\"done\":false}",
                    ])
            }
            naive.append(seconds(ContinuousClock.now - naiveStart))
        }
        return Figure(
            workload: "sync: upload of commits queued while offline", size: count,
            timings: [
                Timing(system: "Lode (read, batch, one transaction)", runs: lode, operations: count),
                Timing(system: "one INSERT per commit", runs: naive, operations: count),
            ])
    }
}

/// The times B's live result delivered each rank, for the latency workload.
final class LockedTimes: @unchecked Sendable {
    private let condition = NSCondition()
    private var times: [Int: ContinuousClock.Instant] = [:]

    func note(_ rank: Int, at instant: ContinuousClock.Instant) {
        condition.withLock {
            if times[rank] == nil { times[rank] = instant }
            condition.broadcast()
        }
    }

    func wait(for rank: Int, timeout: Double) -> ContinuousClock.Instant? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while times[rank] == nil {
            if !condition.wait(until: deadline) { return times[rank] }
        }
        return times[rank]
    }
}

/// Whether the naive poller goes on.
private final class Polling: @unchecked Sendable {
    private let lock = NSLock()
    private var going = true
    var running: Bool { lock.withLock { going } }
    func stop() { lock.withLock { going = false } }
}

/// The bytes this process has allocated (malloc's arenas and mapped blocks; the store's map, which
/// the kernel pages in and out, is not counted).
func heapBytes() -> Int {
    let info = mallinfo2()
    return Int(info.uordblks) + Int(info.hblkhd)
}

/// Samples this process's allocated bytes every 5 ms until stopped; returns the peak.
final class PeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0
    private var running = true
    private var thread: Thread?

    func start() {
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                let now = heapBytes()
                lock.withLock { peak = Swift.max(peak, now) }
                usleep(5_000)
            }
        }
        self.thread = thread
        thread.start()
    }

    func stop() -> Int {
        lock.withLock {
            running = false
            return Swift.max(peak, heapBytes())
        }
    }
}
