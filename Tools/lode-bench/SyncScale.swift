import CMalloc
import Foundation
import Lode
import LodeSync
import LodeTestSupport

extension Workloads {
    /// Fills the sync table of `SyncRow` in `database` with `count` rows (`part` = id % 100, a field
    /// the app's type does not know) in one statement.
    private static func fillRows(
        _ count: Int, database: String, cluster: PostgresTestCluster, table: String = "SyncRow"
    )
        throws
    {
        try cluster.psql(
            """
            INSERT INTO lode."\(table)" (key, data)
            SELECT i::text, jsonb_build_object('id', i, 'title', 'row number ' || i || ' of the download',
                'rank', (i::bigint * 7919) % \(count), 'done', i % 3 = 0, 'part', i % 100)
            FROM generate_series(0, \(count - 1)) AS i;
            ANALYZE lode."\(table)";
            """, database: database)
    }

    private static func downloadStore(_ scratch: Scratch, _ name: String) throws -> Store {
        try Store(
            at: scratch.url.appendingPathComponent(name),
            configuration: StoreConfiguration(durability: .noSync, initialMapSize: 1 << 30),
            types: [SyncRow.self])
    }

    /// A first download of `1,000,000` rows: the client's heap while it runs (target: at most 64 MB
    /// of growth).
    static func largeDownload(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let count = settings.size(1_000_000)
        let server = SyncServer(connectionString: try cluster.makeDatabase())
        try server.setUp(for: [SyncRow.self])
        try fillRows(
            count, database: PostgresTestCluster.database(of: server.connectionString), cluster: cluster)
        let scratch = Scratch("sync-large")
        let store = try downloadStore(scratch, "store")
        let client = try SyncClient(
            store: store, server: server, types: [.type(SyncRow.self)], options: benchOptions)
        let before = heapBytes()
        let peak = PeakSampler()
        peak.start()
        let start = ContinuousClock.now
        client.start()
        try client.synchronize(timeout: .seconds(1800))
        let elapsed = seconds(ContinuousClock.now - start)
        let grown = peak.stop() - before
        client.stop()
        let stored = try store.read { try $0.count(SyncRow.self) }
        guard stored == count else { throw BenchError.sqlite("downloaded \(stored) of \(count)") }
        return Figure(
            workload: "sync: first download of a large table", size: count,
            timings: [Timing(system: "Lode (download, decode, commit)", runs: [elapsed], operations: count)],
            notes: [
                String(
                    format: "client's heap grew by at most %.1f MB (target: at most 64 MB)",
                    Double(grown) / 1e6)
            ])
    }

    /// `100,000` objects written while the client was offline (in commits of 1,000), uploaded when it
    /// starts, against `COPY FROM` of the same rows into a sync table (same triggers) of the server.
    static func offlineUpload(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let count = settings.size(100_000)
        let runs = settings.quick ? 1 : settings.runs
        var lode: [Double] = []
        var copy: [Double] = []
        for _ in 0..<runs {
            let server = SyncServer(connectionString: try cluster.makeDatabase())
            try server.setUp(typeNames: ["SyncRow", "SyncRowCopy"])
            let scratch = Scratch("sync-offline")
            let store = try downloadStore(scratch, "store")
            var id = 0
            while id < count {
                try store.write { tx in
                    for _ in 0..<Swift.min(1000, count - id) {
                        try tx.insert(
                            SyncRow(id: id, title: "written offline \(id)", rank: id % 977, done: id % 2 == 0)
                        )
                        id += 1
                    }
                }
            }
            let client = try SyncClient(
                store: store, server: server, types: [.type(SyncRow.self)], options: benchOptions)
            let start = ContinuousClock.now
            client.start()
            try client.synchronize(timeout: .seconds(1800))
            lode.append(seconds(ContinuousClock.now - start))
            client.stop()
            let connection = try PostgresConnection(connectionString: server.connectionString)
            let rows = (0..<count).lazy.map { id in
                Array(
                    "\(id)\t{\"id\":\(id),\"title\":\"written offline \(id)\",\"rank\":\(id % 977),\"done\":\(id % 2 == 0)}\n"
                        .utf8)
            }
            let copyStart = ContinuousClock.now
            try connection.copyIn("COPY lode.\"SyncRowCopy\" (key, data) FROM STDIN", rows: rows)
            copy.append(seconds(ContinuousClock.now - copyStart))
            connection.close()
        }
        return Figure(
            workload: "sync: upload of objects written offline", size: count,
            timings: [
                Timing(system: "Lode (read records, batch, upload)", runs: lode, operations: count),
                Timing(system: "COPY FROM of the same rows (same triggers)", runs: copy, operations: count),
            ])
    }

    /// Fifty clients, each with a store and a connection of its own, in this process:
    /// - a write on one delivered to a live result on every other (p95 target: under 250 ms);
    /// - every client writing one object per commit for a few seconds: synced writes per second,
    ///   until the server has them all, against the same rows written by fifty connections with plain
    ///   `INSERT`s (one per transaction) into a plain table, and into a sync table (through its
    ///   triggers); at the end every store equals the server.
    static func manyClients(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> [Figure] {
        let count = settings.quick ? 5 : 50
        let server = SyncServer(connectionString: try cluster.makeDatabase())
        try server.setUp(typeNames: ["SyncRow", "SyncRowInsert"])
        let database = PostgresTestCluster.database(of: server.connectionString)
        try cluster.psql("CREATE TABLE lode.plain (key text PRIMARY KEY, data jsonb)", database: database)
        let scratch = Scratch("sync-many")
        let stores = try (0..<count).map { try downloadStore(scratch, "client-\($0)") }
        let clients = try stores.map {
            try SyncClient(store: $0, server: server, types: [.type(SyncRow.self)], options: benchOptions)
        }
        for client in clients { client.start() }
        defer { for client in clients { client.stop() } }
        try stores[0].write { tx in
            for id in 0..<count {
                try tx.insert(SyncRow(id: id, title: "probe \(id)", rank: id, done: false))
            }
        }
        for client in clients { try client.synchronize(timeout: .seconds(120)) }
        for client in clients { try client.synchronize(timeout: .seconds(120)) }

        // Latency: each probe write on one client, seen by the live results of all others.
        let arrivals = (0..<count).map { _ in LockedTimes() }
        let tokens = stores.enumerated().map { index, store in
            store.objects(SyncRow.self).sorted(by: \.rank).observe { change in
                guard case .update(let results, _) = change, let first = try? results.first else { return }
                arrivals[index].note(first.rank, at: ContinuousClock.now)
            }
        }
        defer { for token in tokens { token.cancel() } }
        Thread.sleep(forTimeInterval: 0.5)
        var latencies: [Double] = []
        let probes = settings.quick ? 5 : 40
        for probe in 0..<probes {
            let writer = probe % count
            let rank = -1 - probe
            let start = ContinuousClock.now
            try stores[writer].write { tx in
                try tx.update(SyncRow.self, key: probe % count) { $0.rank = rank }
            }
            for reader in 0..<count where reader != writer {
                guard let at = arrivals[reader].wait(for: rank, timeout: 30) else {
                    throw BenchError.sqlite("client \(reader) did not see probe \(probe)")
                }
                latencies.append(seconds(at - start))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        for token in tokens { token.cancel() }
        let latency = Timing(
            system: "Lode: write on one → live result on every other", runs: latencies, operations: 1)

        // Throughput: every client writes for a while, each on a thread of its own; the time until
        // the server has every write (its other clients download meanwhile, on the same cores).
        let duration = settings.quick ? 0.5 : 3.0
        let written = (0..<count).map { _ in LockedCount() }
        let counter = try PostgresConnection(connectionString: server.connectionString)
        defer { counter.close() }
        let start = ContinuousClock.now
        try onThreads(count) { index in
            var n = 0
            let base = 1_000_000 * (index + 1)
            while seconds(ContinuousClock.now - start) < duration {
                try stores[index].write { tx in
                    try tx.insert(
                        SyncRow(id: base + n, title: "client \(index) write \(n)", rank: n, done: false))
                }
                n += 1
            }
            written[index].set(n)
        }
        let total = written.reduce(0) { $0 + $1.value }
        while try counter.execute("SELECT count(*) FROM lode.\"SyncRow\" WHERE NOT deleted").integer(0, 0)
            != Int64(total + count)
        {
            guard seconds(ContinuousClock.now - start) < 600 else {
                throw BenchError.sqlite("the server did not get every write in 10 minutes")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        let lodeElapsed = seconds(ContinuousClock.now - start)
        for client in clients { try client.synchronize(timeout: .seconds(600)) }
        let converged = seconds(ContinuousClock.now - start)
        // The same rows with plain INSERTs from as many connections at once, one per transaction.
        func inserts(into table: String) throws -> Double {
            let perConnection = (total + count - 1) / count
            let pool = ConnectionPool(
                try (0..<count).map { _ in try PostgresConnection(connectionString: server.connectionString) }
            )
            defer { for connection in pool.connections { connection.close() } }
            let begin = ContinuousClock.now
            try onThreads(count) { index in
                for n in 0..<perConnection {
                    let id = 1_000_000 * (index + 1) + n
                    try pool.connections[index].execute(
                        "INSERT INTO lode.\(table) (key, data) VALUES ($1, $2::jsonb)",
                        [
                            "\(id)",
                            "{\"id\":\(id),\"title\":\"client \(index) write \(n)\",\"rank\":\(n),\"done\":false}",
                        ])
                }
            }
            return seconds(ContinuousClock.now - begin)
        }
        let plain = try inserts(into: "plain")
        let stamped = try inserts(into: "\"SyncRowInsert\"")
        // Every store equals the server.
        for client in clients { try client.synchronize(timeout: .seconds(600)) }
        for client in clients { try client.synchronize(timeout: .seconds(600)) }
        let rows = try cluster.psql(
            "SELECT key || ':' || (data->>'rank') FROM lode.\"SyncRow\" WHERE NOT deleted", database: database
        )
        let expected = Set(rows.split(separator: "\n").map(String.init))
        for (index, store) in stores.enumerated() {
            let local = try store.read { tx in
                Set(try tx.objects(SyncRow.self).fetch().map { "\($0.id):\($0.rank)" })
            }
            guard local == expected else {
                throw BenchError.sqlite("client \(index) differs from the server")
            }
        }
        return [
            Figure(
                workload: "sync: \(count) clients, a write delivered to every other client's live result",
                size: latencies.count, timings: [latency],
                notes: [
                    "median \(format(latency.median)), p95 \(format(latency.percentile(95))), max \(format(latency.maximum)) (target: p95 under 250 ms)"
                ]),
            Figure(
                workload: "sync: \(count) clients writing at once, until the server has every write",
                size: total,
                timings: [
                    Timing(
                        system: "Lode (one object per commit, synced)", runs: [lodeElapsed], operations: total
                    ),
                    Timing(system: "plain INSERTs, \(count) connections", runs: [plain], operations: total),
                    Timing(
                        system: "INSERTs into a sync table (its triggers)", runs: [stamped],
                        operations: total),
                ],
                notes: [
                    "every client had every write \(format(converged)) after the first (every store equal to the server at the end, \(total + count) rows)"
                ]),
        ]
    }

    /// A first download of the 1% of a `1,000,000`-row table that a filter selects (through its
    /// index), against a full first download of a `10,000`-row table (target: at most 3× the time).
    static func partialDownload(_ settings: Settings, _ cluster: PostgresTestCluster) throws -> Figure {
        let big = settings.size(1_000_000)
        let small = settings.size(10_000)
        let bigServer = SyncServer(connectionString: try cluster.makeDatabase())
        try bigServer.setUp(typeNames: ["SyncRow"], filterIndexes: [.init(type: "SyncRow", path: ["part"])])
        try fillRows(
            big, database: PostgresTestCluster.database(of: bigServer.connectionString), cluster: cluster)
        let smallServer = SyncServer(connectionString: try cluster.makeDatabase())
        try smallServer.setUp(typeNames: ["SyncRow"])
        try fillRows(
            small, database: PostgresTestCluster.database(of: smallServer.connectionString), cluster: cluster)
        let runs = settings.quick ? 1 : settings.runs
        var partial: [Double] = []
        var full: [Double] = []
        for _ in 0..<runs {
            for (server, filter) in [(bigServer, SyncFilter.field("part", equals: 7)), (smallServer, nil)] {
                let scratch = Scratch("sync-partial")
                let store = try downloadStore(scratch, "store")
                let client = try SyncClient(
                    store: store, server: server, types: [.type(SyncRow.self, filter: filter)],
                    options: benchOptions)
                let start = ContinuousClock.now
                client.start()
                try client.synchronize(timeout: .seconds(600))
                let elapsed = seconds(ContinuousClock.now - start)
                client.stop()
                let stored = try store.read { try $0.count(SyncRow.self) }
                if filter != nil {
                    guard stored == (big + 92) / 100 else {
                        throw BenchError.sqlite("partial: \(stored) rows")
                    }
                    partial.append(elapsed)
                } else {
                    guard stored == small else { throw BenchError.sqlite("full: \(stored) rows") }
                    full.append(elapsed)
                }
            }
        }
        let partialTiming = Timing(
            system: "Lode: 1% of \(big) rows (filter index)", runs: partial, operations: 1)
        let fullTiming = Timing(system: "Lode: all of \(small) rows", runs: full, operations: 1)
        return Figure(
            workload: "sync: first download of a 1% partial sync", size: big / 100,
            timings: [partialTiming, fullTiming],
            notes: [
                String(
                    format: "the partial download takes %.2f× the time of the full one (target: at most 3×)",
                    partialTiming.median / Swift.max(fullTiming.median, 1e-9))
            ])
    }
}

/// A count set by one thread and read by another.
final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = 0
    var value: Int { lock.withLock { stored } }
    func set(_ value: Int) { lock.withLock { stored = value } }
}

/// Connections that threads use one each (the thread's index picks it).
private final class ConnectionPool: @unchecked Sendable {
    let connections: [PostgresConnection]
    init(_ connections: [PostgresConnection]) { self.connections = connections }
}
