import CLMDB
import CSQLite
import Foundation
import LMDB
import Lode
import LodeInspection
import LodeMacros

/// The benchmark's object: a primary key, an indexed integer and two more fields.
/// The benchmark's object, a model of the model macro: Lode reads and writes it with its generated
/// record codec.
@Model
struct Row: Equatable {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var score: Int
    var value: Double

    static func make(_ id: Int, _ rng: inout Generator, scores: Int = 1000) -> Row {
        Row(
            id: id, name: "row \(id)", score: Int.random(in: 0..<scores, using: &rng), value: Double(id) * 0.5
        )
    }
}

/// ``Row`` with a hand-written schema and `Codable`: Lode's path for types without the macro, measured
/// beside it.
struct CodableRow: Persistable, Equatable {
    var id: Int
    var name: String
    var score: Int
    var value: Double
    static let schema = Schema<CodableRow>(name: "Row", primaryKey: \.id, indexes: [.on(\.score)])

    init(_ row: Row) { (id, name, score, value) = (row.id, row.name, row.score, row.value) }
}

/// The same key and value bytes Lode writes, written and read straight through the LMDB layer: the
/// physical limit of this design.
final class RawLMDB {
    let environment: Environment
    let records: Database
    let index: Database

    init(path: String, durability: Durability = .full) throws {
        environment = try Environment.open(
            at: path,
            options: EnvironmentOptions(mapSize: 4 << 30, durability: durability, createDirectory: true))
        records = try environment.database(named: "Row")
        index = try environment.database(named: "Row.score", kind: .duplicates)
    }

    static func bytes(_ row: Row) throws -> (key: [UInt8], value: [UInt8], indexKey: [UInt8]) {
        (try KeyEncoder().encode(row.id), try CBOREncoder().encode(row), try KeyEncoder().encode(row.score))
    }

    /// Inserts rows whose encoded bytes are given, in one transaction.
    func insert(_ encoded: [(key: [UInt8], value: [UInt8], indexKey: [UInt8])]) throws {
        try environment.write { txn in
            for row in encoded {
                try txn.put(row.value, forKey: row.key, in: records, flags: .noOverwrite)
                try txn.put(row.key, forKey: row.indexKey, in: index)
            }
        }
    }
}

/// SQLite through its C API, as a careful user would use it: one table, the same secondary index,
/// prepared statements, WAL, one transaction for bulk work, rows decoded into the same struct.
final class SQLiteBaseline {
    private var db: OpaquePointer?
    private var insertStatement: OpaquePointer?
    private var selectByID: OpaquePointer?
    private var scanAll: OpaquePointer?
    private var selectByScore: OpaquePointer?
    private var updateScore: OpaquePointer?
    private var idsByScoreStatement: OpaquePointer?
    private var idsAndScoresStatement: OpaquePointer?
    private var idsOfScoreStatement: OpaquePointer?
    private var updateBoth: OpaquePointer?
    private var pageStatement: OpaquePointer?
    private var namesStatement: OpaquePointer?
    private var valueBelowStatement: OpaquePointer?
    private var topByValueStatement: OpaquePointer?

    init(path: String, synchronous: Bool = true) throws {
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError.sqlite("open \(path)") }
        // Concurrent writers (each with its own connection) wait for the write lock, as LMDB's do.
        sqlite3_busy_timeout(db, 60_000)
        try exec("PRAGMA journal_mode=WAL")
        try exec(synchronous ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        try exec(
            "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL, value REAL NOT NULL)"
        )
        try exec("CREATE INDEX IF NOT EXISTS rows_score ON rows(score)")
        insertStatement = try prepare("INSERT INTO rows (id, name, score, value) VALUES (?, ?, ?, ?)")
        selectByID = try prepare("SELECT id, name, score, value FROM rows WHERE id = ?")
        scanAll = try prepare("SELECT id, name, score, value FROM rows")
        selectByScore = try prepare("SELECT id, name, score, value FROM rows WHERE score >= ? AND score < ?")
        updateScore = try prepare("UPDATE rows SET score = ? WHERE id = ?")
    }

    deinit {
        for statement in [
            insertStatement, selectByID, scanAll, selectByScore, updateScore, idsByScoreStatement,
            idsAndScoresStatement,
            idsOfScoreStatement, updateBoth, namesStatement, pageStatement, valueBelowStatement,
            topByValueStatement,
        ] {
            sqlite3_finalize(statement)
        }
        sqlite3_close(db)
    }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError.sqlite("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchError.sqlite("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func insert(_ rows: [Row]) throws {
        try exec("BEGIN")
        for row in rows {
            sqlite3_reset(insertStatement)
            sqlite3_bind_int64(insertStatement, 1, Int64(row.id))
            sqlite3_bind_text(insertStatement, 2, row.name, -1, Self.transient)
            sqlite3_bind_int64(insertStatement, 3, Int64(row.score))
            sqlite3_bind_double(insertStatement, 4, row.value)
            guard sqlite3_step(insertStatement) == SQLITE_DONE else { throw BenchError.sqlite("insert") }
        }
        try exec("COMMIT")
    }

    private func row(_ statement: OpaquePointer?) -> Row {
        Row(
            id: Int(sqlite3_column_int64(statement, 0)),
            name: String(cString: sqlite3_column_text(statement, 1)),
            score: Int(sqlite3_column_int64(statement, 2)), value: sqlite3_column_double(statement, 3))
    }

    func read(ids: [Int]) throws -> Int {
        var found = 0
        try exec("BEGIN")
        for id in ids {
            sqlite3_reset(selectByID)
            sqlite3_bind_int64(selectByID, 1, Int64(id))
            if sqlite3_step(selectByID) == SQLITE_ROW {
                found += row(selectByID).id == id ? 1 : 0
            }
        }
        try exec("COMMIT")
        return found
    }

    /// The ids of the rows with `score`, ordered by value (then id): one naive live query's keys.
    func ids(score: Int) -> [Int] {
        if idsOfScoreStatement == nil {
            idsOfScoreStatement = try? prepare("SELECT id FROM rows WHERE score = ? ORDER BY value, id")
        }
        sqlite3_reset(idsOfScoreStatement)
        sqlite3_bind_int64(idsOfScoreStatement, 1, Int64(score))
        var ids: [Int] = []
        while sqlite3_step(idsOfScoreStatement) == SQLITE_ROW {
            ids.append(Int(sqlite3_column_int64(idsOfScoreStatement, 0)))
        }
        return ids
    }

    /// Sets a row's score and value (inside the caller's transaction).
    func set(id: Int, score: Int, value: Double) throws {
        if updateBoth == nil { updateBoth = try prepare("UPDATE rows SET score = ?, value = ? WHERE id = ?") }
        sqlite3_reset(updateBoth)
        sqlite3_bind_int64(updateBoth, 1, Int64(score))
        sqlite3_bind_double(updateBoth, 2, value)
        sqlite3_bind_int64(updateBoth, 3, Int64(id))
        guard sqlite3_step(updateBoth) == SQLITE_DONE else { throw BenchError.sqlite("update") }
    }

    /// The ids of every row ordered by score (then id): the keys a naive live list re-fetches.
    /// Every row's id and score, ordered by score (then id).
    func idsAndScoresByScore() -> [(id: Int, score: Int)] {
        if idsAndScoresStatement == nil {
            idsAndScoresStatement = try? prepare("SELECT id, score FROM rows ORDER BY score, id")
        }
        sqlite3_reset(idsAndScoresStatement)
        var rows: [(id: Int, score: Int)] = []
        while sqlite3_step(idsAndScoresStatement) == SQLITE_ROW {
            rows.append(
                (
                    Int(sqlite3_column_int64(idsAndScoresStatement, 0)),
                    Int(sqlite3_column_int64(idsAndScoresStatement, 1))
                )
            )
        }
        return rows
    }

    func idsByScore() -> [Int] {
        if idsByScoreStatement == nil {
            idsByScoreStatement = try? prepare("SELECT id FROM rows ORDER BY score, id")
        }
        sqlite3_reset(idsByScoreStatement)
        var ids: [Int] = []
        while sqlite3_step(idsByScoreStatement) == SQLITE_ROW {
            ids.append(Int(sqlite3_column_int64(idsByScoreStatement, 0)))
        }
        return ids
    }

    func scan() -> [Row] {
        sqlite3_reset(scanAll)
        var rows: [Row] = []
        while sqlite3_step(scanAll) == SQLITE_ROW { rows.append(row(scanAll)) }
        return rows
    }

    /// Every row's name, in primary-key order: one column, as `SELECT name` reads it.
    func names() throws -> [String] {
        if namesStatement == nil { namesStatement = try prepare("SELECT name FROM rows ORDER BY id") }
        sqlite3_reset(namesStatement)
        var names: [String] = []
        while sqlite3_step(namesStatement) == SQLITE_ROW {
            names.append(String(cString: sqlite3_column_text(namesStatement, 0)))
        }
        return names
    }

    /// The rows whose value is below `bound`, a column without an index: every row is read and the
    /// condition checked on its column.
    func rows(valueBelow bound: Double) throws -> [Row] {
        if valueBelowStatement == nil {
            valueBelowStatement = try prepare(
                "SELECT id, name, score, value FROM rows WHERE value < ? ORDER BY id")
        }
        sqlite3_reset(valueBelowStatement)
        sqlite3_bind_double(valueBelowStatement, 1, bound)
        var rows: [Row] = []
        while sqlite3_step(valueBelowStatement) == SQLITE_ROW { rows.append(row(valueBelowStatement)) }
        return rows
    }

    /// The `limit` rows of the largest value, a column without an index: every row is read and the
    /// top ones kept.
    func rows(topByValue limit: Int) throws -> [Row] {
        if topByValueStatement == nil {
            topByValueStatement = try prepare(
                "SELECT id, name, score, value FROM rows ORDER BY value DESC, id LIMIT ?")
        }
        sqlite3_reset(topByValueStatement)
        sqlite3_bind_int64(topByValueStatement, 1, Int64(limit))
        var rows: [Row] = []
        while sqlite3_step(topByValueStatement) == SQLITE_ROW { rows.append(row(topByValueStatement)) }
        return rows
    }

    func range(score lower: Int, _ upper: Int) -> [Row] {
        sqlite3_reset(selectByScore)
        sqlite3_bind_int64(selectByScore, 1, Int64(lower))
        sqlite3_bind_int64(selectByScore, 2, Int64(upper))
        var rows: [Row] = []
        while sqlite3_step(selectByScore) == SQLITE_ROW { rows.append(row(selectByScore)) }
        return rows
    }

    /// The `limit` rows after `id` in primary-key order (a keyset page, as a table view pages).
    func page(after id: Int, limit: Int) throws -> [Row] {
        if pageStatement == nil {
            pageStatement = try prepare(
                "SELECT id, name, score, value FROM rows WHERE id > ? ORDER BY id LIMIT ?")
        }
        sqlite3_reset(pageStatement)
        sqlite3_bind_int64(pageStatement, 1, Int64(id))
        sqlite3_bind_int64(pageStatement, 2, Int64(limit))
        var rows: [Row] = []
        while sqlite3_step(pageStatement) == SQLITE_ROW { rows.append(row(pageStatement)) }
        return rows
    }

    /// Reads the row, changes its score with `change` and writes it back (what an update through a
    /// model layer does): the read-modify-write Lode's `update(_:key:)` does too.
    func readModifyWrite(id: Int, _ change: (inout Row) -> Void) throws {
        sqlite3_reset(selectByID)
        sqlite3_bind_int64(selectByID, 1, Int64(id))
        guard sqlite3_step(selectByID) == SQLITE_ROW else { throw BenchError.sqlite("no row \(id)") }
        var current = row(selectByID)
        change(&current)
        sqlite3_reset(updateScore)
        sqlite3_bind_int64(updateScore, 1, Int64(current.score))
        sqlite3_bind_int64(updateScore, 2, Int64(id))
        guard sqlite3_step(updateScore) == SQLITE_DONE else { throw BenchError.sqlite("update") }
    }

    func update(id: Int, score: Int, ownTransaction: Bool) throws {
        sqlite3_reset(updateScore)
        sqlite3_bind_int64(updateScore, 1, Int64(score))
        sqlite3_bind_int64(updateScore, 2, Int64(id))
        guard sqlite3_step(updateScore) == SQLITE_DONE else { throw BenchError.sqlite("update") }
    }
}

enum BenchError: Error, CustomStringConvertible {
    case sqlite(String)
    case usage(String)
    case failed(String)
    var description: String {
        switch self {
        case .sqlite(let message): return "SQLite: \(message)"
        case .usage(let message), .failed(let message): return message
        }
    }
}
