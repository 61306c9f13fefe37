import Foundation
import LMDB
import Lode
import LodeInspection

/// Where a workload's results go so the compiler cannot drop the work that made them.
final class Sink {
    var value = 0
}

/// The systems of the core read and write workloads, shared by the timed runs (`Workloads`) and the
/// instruction counts (`Instructions`), so both measure the same code.
enum CoreSystems {
    /// The bounds of the 1% range query: 10 of 1,000 scores.
    static let rangeBounds = (lower: 500, upper: 510)

    /// Inserting `rows` in one transaction into a fresh store, environment or database each run.
    static func bulkInsert(rows: [Row], encoded: [(key: [UInt8], value: [UInt8], indexKey: [UInt8])])
        -> [System]
    {
        var scratch = Scratch("bulk")
        let codableRows = rows.map(CodableRow.init)
        return [
            System(
                name: "Lode", prepare: { scratch = Scratch("bulk") },
                body: {
                    let store = try Store(
                        at: scratch.url.appendingPathComponent("lode"),
                        configuration: StoreConfiguration(initialMapSize: 4 << 30), types: [Row.self])
                    try store.write { tx in for row in rows { try tx.insert(row) } }
                }),
            System(
                name: "raw LMDB", prepare: { scratch = Scratch("bulk") },
                body: { try RawLMDB(path: scratch.path("raw")).insert(encoded) }),
            System(
                name: "SQLite", prepare: { scratch = Scratch("bulk") },
                body: { try SQLiteBaseline(path: scratch.path("sqlite.db")).insert(rows) }),
            System(
                name: "Lode (Codable)", prepare: { scratch = Scratch("bulk") },
                body: {
                    let store = try Store(
                        at: scratch.url.appendingPathComponent("lode"),
                        configuration: StoreConfiguration(initialMapSize: 4 << 30), types: [CodableRow.self])
                    try store.write { tx in for row in codableRows { try tx.insert(row) } }
                }),
        ]
    }

    /// Reading the rows with `ids` by primary key, each decoded, in one read transaction.
    static func pointReads(_ fixture: Fixture, ids: [Int], sink: Sink) throws -> [System] {
        let keys = try ids.map { try KeyEncoder().encode($0) }
        let decoder = CBORDecoder()
        return [
            System(name: "Lode") {
                try fixture.store.read { tx in
                    for id in ids { sink.value &+= try tx.object(Row.self, key: id)?.score ?? 0 }
                }
            },
            System(name: "raw LMDB") {
                try fixture.raw.environment.read { txn in
                    for key in keys {
                        sink.value &+=
                            try txn.withValue(forKey: key, in: fixture.raw.records) {
                                try decoder.decode(Row.self, from: $0).score
                            } ?? 0
                    }
                }
            },
            System(name: "SQLite") { sink.value &+= try fixture.sqlite.read(ids: ids) },
            System(name: "Lode (Codable)") {
                try fixture.codableStore.read { tx in
                    for id in ids { sink.value &+= try tx.object(CodableRow.self, key: id)?.score ?? 0 }
                }
            },
        ]
    }

    /// Reading and decoding every row.
    static func scan(_ fixture: Fixture, sink: Sink) -> [System] {
        let decoder = CBORDecoder()
        return [
            System(name: "Lode") {
                sink.value &+= try fixture.store.read { tx in try tx.objects(Row.self).fetch().count }
            },
            System(name: "raw LMDB") {
                try fixture.raw.environment.read { txn in
                    try txn.withCursor(in: fixture.raw.records) { cursor in
                        var entry = try cursor.first()
                        while entry != nil {
                            sink.value &+=
                                try cursor.withCurrent { _, value in
                                    try decoder.decode(Row.self, from: value).score
                                } ?? 0
                            entry = try cursor.next()
                        }
                    }
                }
            },
            System(name: "SQLite") { sink.value &+= fixture.sqlite.scan().count },
            System(name: "Lode (Codable)") {
                sink.value &+= try fixture.codableStore.read { tx in
                    try tx.objects(CodableRow.self).fetch().count
                }
            },
        ]
    }

    /// The bound of the filtered scan: the rows whose value (half the id) is below it, the first 1%.
    static func valueBound(_ fixture: Fixture) -> Double { Double(fixture.rows.count / 100) * 0.5 }

    /// The rows whose value is below ``valueBound(_:)``, a property without an index: every record is
    /// read and the condition checked (Lode's generated reader checks the field before decoding).
    static func filteredScan(_ fixture: Fixture, sink: Sink) -> [System] {
        let bound = valueBound(fixture)
        return [
            System(name: "Lode") {
                sink.value &+= try fixture.store.read { tx in
                    try tx.objects(Row.self).filter(#Predicate { $0.value < bound }).fetch().count
                }
            },
            System(name: "SQLite") { sink.value &+= try fixture.sqlite.rows(valueBelow: bound).count },
            System(name: "Lode (Codable)") {
                sink.value &+= try fixture.codableStore.read { tx in
                    try tx.objects(CodableRow.self).filter(#Predicate { $0.value < bound }).fetch().count
                }
            },
        ]
    }

    /// The 100 rows of the largest value, a property without an index: an in-memory sort cut by a
    /// limit (Lode's generated reader reads the value alone and decodes the 100 kept).
    static func sortedTop(_ fixture: Fixture, sink: Sink) -> [System] {
        [
            System(name: "Lode") {
                sink.value &+= try fixture.store.read { tx in
                    try tx.objects(Row.self).sorted(by: \.value, ascending: false).limit(100).fetch().count
                }
            },
            System(name: "SQLite") { sink.value &+= try fixture.sqlite.rows(topByValue: 100).count },
            System(name: "Lode (Codable)") {
                sink.value &+= try fixture.codableStore.read { tx in
                    try tx.objects(CodableRow.self).sorted(by: \.value, ascending: false).limit(100).fetch()
                        .count
                }
            },
        ]
    }

    /// The rows whose score is in ``rangeBounds``, through the index, decoded.
    static func range(_ fixture: Fixture, sink: Sink) -> [System] {
        let (lower, upper) = rangeBounds
        return [
            System(name: "Lode") {
                sink.value = try fixture.store.read { tx in
                    try tx.objects(Row.self).filter(#Predicate { $0.score >= lower && $0.score < upper })
                        .fetch().count
                }
            },
            System(name: "SQLite") { sink.value = fixture.sqlite.range(score: lower, upper).count },
            System(name: "Lode (Codable)") {
                sink.value = try fixture.codableStore.read { tx in
                    try tx.objects(CodableRow.self).filter(
                        #Predicate { $0.score >= lower && $0.score < upper }
                    )
                    .fetch().count
                }
            },
        ]
    }

    /// Every row's name in primary-key order, one field read from each record (SQLite: `SELECT name`).
    static func projection(_ fixture: Fixture, sink: Sink) -> [System] {
        [
            System(name: "Lode") {
                sink.value &+= try fixture.store.objects(Row.self).values(of: \.name).count
            },
            System(name: "SQLite") { sink.value &+= try fixture.sqlite.names().count },
            System(name: "Lode (Codable)") {
                sink.value &+= try fixture.codableStore.objects(CodableRow.self).values(of: \.name).count
            },
        ]
    }

    /// Changing the score of the rows with `ids` in one transaction: each system reads the current row,
    /// changes it and writes it back, with its index entry.
    static func update(_ fixture: Fixture, ids: [Int]) -> [System] {
        var round = 0
        let decoder = CBORDecoder()
        return [
            System(
                name: "Lode", prepare: { round += 1 },
                body: {
                    try fixture.store.write { tx in
                        for id in ids {
                            try tx.update(Row.self, key: id, \.score) { $0 = ($0 + round) % 1000 }
                        }
                    }
                }),
            System(
                name: "raw LMDB", prepare: { round += 1 },
                body: {
                    try fixture.raw.environment.write { txn in
                        for id in ids {
                            let key = try KeyEncoder().encode(id)
                            guard let stored = try txn.get(key, in: fixture.raw.records) else { continue }
                            var row = try decoder.decode(Row.self, from: stored)
                            let oldIndexKey = try KeyEncoder().encode(row.score)
                            row.score = (row.score + round) % 1000
                            let new = try RawLMDB.bytes(row)
                            try txn.put(new.value, forKey: key, in: fixture.raw.records)
                            try txn.delete(oldIndexKey, value: key, in: fixture.raw.index)
                            try txn.put(key, forKey: new.indexKey, in: fixture.raw.index)
                        }
                    }
                }),
            System(
                name: "SQLite", prepare: { round += 1 },
                body: {
                    try fixture.sqlite.exec("BEGIN")
                    for id in ids {
                        try fixture.sqlite.readModifyWrite(id: id) { $0.score = ($0.score + round) % 1000 }
                    }
                    try fixture.sqlite.exec("COMMIT")
                }),
            System(
                name: "Lode (whole object)", prepare: { round += 1 },
                body: {
                    try fixture.store.write { tx in
                        for id in ids {
                            try tx.update(Row.self, key: id) { $0.score = ($0.score + round) % 1000 }
                        }
                    }
                }),
            System(
                name: "Lode (Codable)", prepare: { round += 1 },
                body: {
                    try fixture.codableStore.write { tx in
                        for id in ids {
                            try tx.update(CodableRow.self, key: id) { $0.score = ($0.score + round) % 1000 }
                        }
                    }
                }),
        ]
    }

    /// One-object commits of `rows`, one transaction each, into the stores given; `next` is where
    /// the following body starts in `rows`, `perBody` how many commits one body makes.
    static func durableCommits(
        store: Store, raw: RawLMDB, sqlite: SQLiteBaseline, rows: [Row],
        encoded: [(key: [UInt8], value: [UInt8], indexKey: [UInt8])], perBody: Int
    ) -> [System] {
        var next = [0, 0, 0]
        func slice(_ system: Int) -> Range<Int> {
            let start = next[system] % rows.count
            next[system] += perBody
            return start..<Swift.min(start + perBody, rows.count)
        }
        return [
            System(name: "Lode") { for row in rows[slice(0)] { try store.write { try $0.upsert(row) } } },
            System(name: "raw LMDB") {
                for row in encoded[slice(1)] {
                    try raw.environment.write { txn in
                        try txn.put(row.value, forKey: row.key, in: raw.records)
                        try txn.put(row.key, forKey: row.indexKey, in: raw.index)
                    }
                }
            },
            System(name: "SQLite") { for row in rows[slice(2)] { try sqlite.insert([row]) } },
        ]
    }
}
