import Foundation
import Lode
import LodeInspection

/// The cost of keeping history (issue 61): the same work on a store that keeps history and on one
/// that does not, for `lode-bench --instructions` (`history-insert`, `history-update`,
/// `history-durable`). Target: at most 10% more with history.
enum HistorySystems {
    static let names = ["Lode with history", "Lode"]

    static func configuration(history: Bool, durability: Store.Durability = .full) -> StoreConfiguration {
        StoreConfiguration(durability: durability, initialMapSize: 4 << 30, history: history ? .forever : nil)
    }

    /// A new store of each kind filled with `rows` in one transaction.
    static func bulkInsert(rows: [Row]) -> [System] {
        var scratch = Scratch("history-bulk")
        return zip(names, [true, false]).map { name, history in
            System(
                name: name, prepare: { scratch = Scratch("history-bulk") },
                body: {
                    let store = try Store(
                        at: scratch.url.appendingPathComponent("lode"),
                        configuration: configuration(history: history), types: [Row.self])
                    try store.write { tx in for row in rows { try tx.insert(row) } }
                })
        }
    }

    /// Two stores holding `rows`, with and without history, for updates and commits, in a scratch
    /// directory that lives as long as they are measured.
    final class Stores {
        let scratch: Scratch
        let stores: [Store]

        init(rows: [Row], label: String, durability: Store.Durability = .full) throws {
            let scratch = Scratch(label)
            self.scratch = scratch
            stores = try zip(names, [true, false]).map { name, history in
                let store = try Store(
                    at: scratch.url.appendingPathComponent(name == "Lode" ? "plain" : "history"),
                    configuration: configuration(history: history, durability: durability), types: [Row.self])
                try store.write { tx in for row in rows { try tx.insert(row) } }
                return store
            }
        }
    }

    /// One field of every object at `ids` changed in one transaction, in each store.
    static func update(_ fixture: Stores, ids: [Int]) -> [System] {
        var round = 0
        return zip(names, fixture.stores).map { name, store in
            System(
                name: name, prepare: { round += 1 },
                body: {
                    try store.write { tx in
                        for id in ids {
                            try tx.update(Row.self, key: id, \.score) { $0 = ($0 + round) % 1000 }
                        }
                    }
                    withExtendedLifetime(fixture) {}
                })
        }
    }

    /// A store whose history holds `commits` commits of one object each (an update of one field),
    /// and the system that reads them all.
    static func reading(commits: Int) throws -> [System] {
        let scratch = Scratch("history-read")
        let store = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: configuration(history: true, durability: .noSync), types: [Row.self])
        var rng = Generator(61)
        let objects = 1_000
        try store.write { tx in for id in 0..<objects { try tx.insert(Row.make(id, &rng)) } }
        let start = try store.read { $0.historyToken }
        for round in 0..<commits {
            let id = Int.random(in: 0..<objects, using: &rng)
            try store.write { tx in try tx.update(Row.self, key: id, \.score) { $0 = round % 1000 } }
        }
        let sink = Sink()
        return [
            System(name: "history(since:)") {
                sink.value &+= try store.read { try $0.history(since: start) }.count
                withExtendedLifetime(scratch) {}
            }
        ]
    }

    /// `perBody` single-object durable commits (upserts) in each store.
    static func durableCommits(_ fixture: Stores, rows: [Row], perBody: Int) -> [System] {
        var next = [0, 0]
        return zip(names, fixture.stores).enumerated().map { position, pair in
            System(name: pair.0) {
                let start = next[position] % rows.count
                next[position] += perBody
                for row in rows[start..<Swift.min(start + perBody, rows.count)] {
                    try pair.1.write { try $0.upsert(row) }
                }
                withExtendedLifetime(fixture) {}
            }
        }
    }
}

/// History in wall-clock time (issue 61), in one run: what recording costs (with history against
/// the same store without), how fast the history reads, and what time travel costs.
extension Workloads {
    static func history(_ settings: Settings) throws -> [Figure] {
        var figures: [Figure] = []
        let count = settings.size(200_000)
        var rng = Generator(61)
        let rows = (0..<count).map { Row.make($0, &rng) }
        let names = HistorySystems.names

        // 1. What recording costs: bulk insert, update 10%, single-object durable commits.
        let bulk = try alternate(runs: settings.runs, HistorySystems.bulkInsert(rows: rows))
        figures.append(
            Figure(
                workload: "history kept: bulk insert, one index, one transaction", size: count,
                timings: zip(names, bulk).map { Timing(system: $0, runs: $1, operations: count) },
                notes: ["target: with history ≥ 0.91× without (at most 10% more)"]))
        let stores = try HistorySystems.Stores(rows: rows, label: "history-update", durability: .noSync)
        let ids = (0..<Swift.max(count / 10, 1)).map { _ in Int.random(in: 0..<count, using: &rng) }
        let updates = try alternate(runs: settings.runs, HistorySystems.update(stores, ids: ids))
        figures.append(
            Figure(
                workload: "history kept: update 10% of objects in one transaction", size: ids.count,
                timings: zip(names, updates).map { Timing(system: $0, runs: $1, operations: ids.count) },
                notes: ["target: with history ≥ 0.91× without"] + (try historyBytes(stores.stores[0]))))
        let durable = try HistorySystems.Stores(rows: [], label: "history-durable")
        let perBody = 100
        let commits = try alternate(
            runs: settings.runs, HistorySystems.durableCommits(durable, rows: rows, perBody: perBody))
        figures.append(
            Figure(
                workload: "history kept: single-object durable commits (fsync each)", size: perBody,
                timings: zip(names, commits).map { Timing(system: $0, runs: $1, operations: perBody) },
                notes: ["target: with history ≥ 0.91× without"]))

        // 2. Reading the history: 10,000 commits of one object each.
        let scratch = Scratch("history-read")
        let store = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: HistorySystems.configuration(history: true, durability: .noSync), types: [Row.self]
        )
        let objects = Swift.min(1_000, rows.count)
        try store.write { tx in for row in rows.prefix(objects) { try tx.insert(row) } }
        let start = try store.read { $0.historyToken }
        // The figure is of 10,000 commits (--quick: 100, and time travel as far back as they go).
        let commitCount = settings.quick ? 100 : 10_000
        for round in 0..<commitCount {
            let id = Int.random(in: 0..<objects, using: &rng)
            try store.write { tx in try tx.update(Row.self, key: id, \.score) { $0 = round % 1000 } }
        }
        let sink = Sink()
        let read = try alternate(
            runs: settings.runs,
            [
                System(name: "history(since:)") {
                    sink.value &+= try store.read { try $0.history(since: start) }.count
                }
            ]
        )
        figures.append(
            Figure(
                workload: "history(since:) of \(commitCount) commits of one object each", size: commitCount,
                timings: [Timing(system: "history(since:)", runs: read[0], operations: commitCount)],
                notes: ["target: ≥ 1 M changes/s"]))

        // 3. Time travel 1,000 commits back: one object, and a result of 100 objects (of 1,000).
        let now = try store.read { $0.version }
        let back = Swift.min(1_000, commitCount)
        let past = now - back
        let key = Int.random(in: 0..<objects, using: &rng)
        let query = store.objects(Row.self).filter(#Predicate { $0.score < 500 }).sorted(by: \.score).limit(
            100)
        let travel = try alternate(
            runs: settings.runs * 20,
            [
                System(name: "object as of \(back) commits back") {
                    sink.value &+=
                        try store.read { try $0.object(Row.self, key: key, asOf: past) }?.score ?? 0
                },
                System(name: "the same object now") {
                    sink.value &+= try store.read { try $0.object(Row.self, key: key) }?.score ?? 0
                },
            ])
        figures.append(
            Figure(
                workload: "time travel: one object as of \(back) commits back", size: 1,
                timings: [
                    Timing(system: "object(_:key:asOf:)", runs: travel[0], operations: 1),
                    Timing(system: "object(_:key:) now", runs: travel[1], operations: 1),
                ], notes: ["target: < 1 ms"]))
        let results = try alternate(
            runs: settings.runs * 5,
            [
                System(name: "as of") { sink.value &+= try query.reevaluated().fetch(asOf: past).count },
                System(name: "now") { sink.value &+= try query.reevaluated().fetch().count },
            ])
        figures.append(
            Figure(
                workload: "time travel: 100 objects (filter, sort, limit) as of \(back) commits back",
                size: 100,
                timings: [
                    Timing(system: "fetch(asOf:)", runs: results[0], operations: 1),
                    Timing(system: "fetch() now", runs: results[1], operations: 1),
                ], notes: ["target: < 10 ms"]))
        withExtendedLifetime((stores, durable, scratch)) {}
        return figures
    }

    /// What the history of the update commits takes: the history entries' bytes per changed
    /// object, beside the bytes of the field values they hold (the commit that filled the store is
    /// left out).
    static func historyBytes(_ store: Store) throws -> [String] {
        var sizes: [Int: Int] = [:]
        try store.inspect { tx in
            try tx.forEachRawEntry(ofDatabase: "@changes") { key, value in
                // A history entry's key: the version, 8 bytes big-endian, then `h`.
                guard key.count == 9, key[8] == 0x68 else { return }
                sizes[key.prefix(8).reduce(0) { $0 << 8 | Int($1) }] = value.count
            }
        }
        var entries = 0
        var bytes = 0
        var changes = 0
        for commit in try store.read({ try $0.history() })
        where commit.changes.allSatisfy({ $0.kind == .update }) {
            entries += 1
            bytes += sizes[commit.version] ?? 0
            changes += commit.changes.count
        }
        guard changes > 0 else { return [] }
        return [
            String(
                format:
                    "history of the updates: %d entries, %d changes, %.1f bytes per changed object (the field before and after, its name, the type, key and operation)",
                entries, changes, Double(bytes) / Double(changes))
        ]
    }
}
