import Foundation
import Lode

/// An encrypted store beside the same store unencrypted (and SQLite), in one run: scans, point
/// reads, bulk inserts and durable one-object commits. Targets (issue 46): each ≥ 0.7× unencrypted,
/// durable commits ≥ 0.9×.
extension Workloads {
    static func encryption(_ settings: Settings) throws -> [Figure] {
        let count = settings.size(200_000)
        var rng = Generator(46)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let key = try StoreKey.random()
        let scratch = Scratch("encryption")
        func open(
            _ name: String, encrypted: Bool, durability: Store.Durability = .noSync, cache: Int = 64 << 20
        ) throws -> Store {
            try Store(
                at: scratch.url.appendingPathComponent(name),
                configuration: StoreConfiguration(
                    durability: durability, initialMapSize: 4 << 30, encryption: encrypted ? .key(key) : nil,
                    decryptedCacheSize: cache),
                types: [Row.self])
        }
        let sealed = try open("sealed", encrypted: true)
        let plain = try open("plain", encrypted: false)
        // The same encrypted store without the decrypted cache: every value read is decrypted.
        let uncached = try open("sealed-uncached", encrypted: true, cache: 0)
        for store in [sealed, plain, uncached] {
            try store.write { tx in for row in rows { try tx.insert(row) } }
        }
        let sqlite = try SQLiteBaseline(path: scratch.path("sqlite.db"))
        try sqlite.insert(rows)
        let sink = Sink()

        let scans = try alternate(
            runs: settings.runs,
            [
                System(name: "encrypted") {
                    sink.value &+= try sealed.read { tx in try tx.objects(Row.self).fetch().count }
                },
                System(name: "unencrypted") {
                    sink.value &+= try plain.read { tx in try tx.objects(Row.self).fetch().count }
                },
                System(name: "SQLite") { sink.value &+= sqlite.scan().count },
                System(name: "encrypted, no cache") {
                    sink.value &+= try uncached.read { tx in try tx.objects(Row.self).fetch().count }
                },
            ])

        let ids = (0..<Swift.max(count / 10, 10)).map { _ in Int.random(in: 0..<count, using: &rng) }
        func reads(_ store: Store) -> System {
            System(name: store === plain ? "unencrypted" : "encrypted") {
                try store.read { tx in
                    for id in ids { sink.value &+= try tx.object(Row.self, key: id)?.score ?? 0 }
                }
            }
        }
        let points = try alternate(
            runs: settings.runs,
            [
                reads(sealed), reads(plain),
                System(name: "SQLite") { sink.value &+= try sqlite.read(ids: ids) },
                reads(uncached),
            ])

        var bulk = Scratch("encryption-bulk")
        func insert(_ encrypted: Bool) -> System {
            System(
                name: encrypted ? "encrypted" : "unencrypted", prepare: { bulk = Scratch("encryption-bulk") },
                body: {
                    let store = try Store(
                        at: bulk.url.appendingPathComponent("lode"),
                        configuration: StoreConfiguration(
                            initialMapSize: 4 << 30, encryption: encrypted ? .key(key) : nil),
                        types: [Row.self])
                    try store.write { tx in for row in rows { try tx.insert(row) } }
                })
        }
        let inserts = try alternate(
            runs: settings.runs,
            [
                insert(true), insert(false),
                System(
                    name: "SQLite", prepare: { bulk = Scratch("encryption-bulk") },
                    body: { try SQLiteBaseline(path: bulk.path("sqlite.db")).insert(rows) }),
            ])

        // Durable commits: the systems take turns slice by slice, as in `durable-commits`.
        let commitCount = settings.size(5_000)
        let durable = (
            try open("sealed-durable", encrypted: true, durability: .full),
            try open(
                "plain-durable", encrypted: false, durability: .full)
        )
        let durableSQLite = try SQLiteBaseline(path: scratch.path("durable.db"))
        let rounds = Swift.max(settings.runs, 5)
        let slice = Swift.max(commitCount / rounds, 1)
        var commits = [[Double](), [Double](), [Double]()]
        for round in 0..<rounds {
            let range = (round * slice)..<Swift.min((round + 1) * slice, rows.count)
            commits[0] += try measure(runs: 1) {
                for row in rows[range] { try durable.0.write { try $0.upsert(row) } }
            }
            commits[1] += try measure(runs: 1) {
                for row in rows[range] { try durable.1.write { try $0.upsert(row) } }
            }
            commits[2] += try measure(runs: 1) { for row in rows[range] { try durableSQLite.insert([row]) } }
        }

        func figure(_ workload: String, _ times: [[Double]], operations: Int, target: Double) -> Figure {
            Figure(
                workload: workload, size: operations,
                timings: [
                    Timing(system: "Lode encrypted", runs: times[0], operations: operations),
                    Timing(system: "Lode unencrypted", runs: times[1], operations: operations),
                    Timing(system: "SQLite", runs: times[2], operations: operations),
                ]
                    + (times.count > 3
                        ? [Timing(system: "Lode encrypted, no cache", runs: times[3], operations: operations)]
                        : []),
                notes: ["target: encrypted ≥ \(target)× unencrypted"])
        }
        return [
            figure("encrypted store: full scan, every object decoded", scans, operations: count, target: 0.7),
            figure(
                "encrypted store: random point reads (decoded)", points, operations: ids.count, target: 0.7),
            figure(
                "encrypted store: bulk insert, one index, one transaction", inserts, operations: count,
                target: 0.7),
            figure(
                "encrypted store: single-object durable commits (fsync each)", commits, operations: slice,
                target: 0.9),
        ]
    }
}

/// The encrypted and the unencrypted store of ``Workloads/encryption(_:)`` with the same rows, for
/// `lode-bench --instructions` (`encrypted-scan`, `encrypted-point-reads`, `encrypted-insert`).
struct EncryptionFixture {
    let scratch = Scratch("encryption-instructions")
    let key: StoreKey
    let rows: [Row]
    let sealed: Store
    let plain: Store

    init(count: Int) throws {
        var rng = Generator(46)
        rows = (0..<count).map { Row.make($0, &rng) }
        let key = try StoreKey.random()
        self.key = key
        let directory = scratch.url
        func open(_ name: String, encrypted: Bool) throws -> Store {
            try Store(
                at: directory.appendingPathComponent(name),
                configuration: StoreConfiguration(
                    durability: .noSync, initialMapSize: 1 << 30, encryption: encrypted ? .key(key) : nil),
                types: [Row.self])
        }
        sealed = try open("sealed", encrypted: true)
        plain = try open("plain", encrypted: false)
        let rows = rows
        for store in [sealed, plain] { try store.write { tx in for row in rows { try tx.insert(row) } } }
    }

    /// Both stores scanned, every object decoded.
    func scans(sink: Sink) -> [System] {
        [
            System(name: "Lode encrypted") {
                sink.value &+= try sealed.read { tx in try tx.objects(Row.self).fetch().count }
            },
            System(name: "Lode") {
                sink.value &+= try plain.read { tx in try tx.objects(Row.self).fetch().count }
            },
        ]
    }

    /// Both stores read object by object at `ids`.
    func pointReads(ids: [Int], sink: Sink) -> [System] {
        [("Lode encrypted", sealed), ("Lode", plain)].map { name, store in
            System(name: name) {
                try store.read { tx in
                    for id in ids { sink.value &+= try tx.object(Row.self, key: id)?.score ?? 0 }
                }
            }
        }
    }

    /// A new store of each kind filled with the rows in one transaction.
    func inserts() -> [System] {
        var bulk = Scratch("encryption-instructions-bulk")
        let (rows, key) = (rows, key)
        return [("Lode encrypted", true), ("Lode", false)].map { name, encrypted in
            System(
                name: name, prepare: { bulk = Scratch("encryption-instructions-bulk") },
                body: {
                    let store = try Store(
                        at: bulk.url.appendingPathComponent("lode"),
                        configuration: StoreConfiguration(
                            initialMapSize: 1 << 30, encryption: encrypted ? .key(key) : nil),
                        types: [Row.self])
                    try store.write { tx in for row in rows { try tx.insert(row) } }
                })
        }
    }
}
