import Foundation
import Lode

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
