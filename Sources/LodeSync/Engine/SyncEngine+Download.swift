import Foundation
import LMDB
import LodeStore

/// Downloading: in one `REPEATABLE READ` transaction on the server, the horizon (`ServerSchema`)
/// gives the last version complete; the rows of every synced type after the download cursor up to it are read in version
/// order through one server-side cursor (fetched in binary, a page at a time, so the client's memory
/// stays flat), and applied in local commits that end at server version boundaries — one local
/// commit per server transaction unless one is bigger than the chunk size.
extension SyncEngine {
    /// What a download did, and what it saw.
    struct Downloaded {
        /// True when rows were read.
        var applied: Bool
        /// The highest version of a row of these types committed when the download began, read or
        /// not: rows above the horizon (a transaction that started before them is still running)
        /// are read by a later download.
        var visible: Int64
        /// The horizon: every version up to it that will ever be visible was.
        var horizon: Int64
    }

    /// Downloads what the server has after the cursor, up to the horizon.
    func download(on connection: PostgresConnection) throws -> Downloaded {
        let cursor = try store.read { try state.downloadCursor(in: $0.lmdb) }
        let schema = PostgresConnection.quoted(server.schema)
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        do {
            // The last version to read: the highest of a row of these types up to the horizon (every
            // transaction that could write a version up to it has ended). Not the horizon itself,
            // which moves with every transaction on the server: a cursor never passes the rows a
            // table holds (a server restored into a new cluster, whose ids start again, bases its
            // versions above them).
            let tables = types.map { "\(schema).\(PostgresConnection.quoted($0.name))" }
            let highest = try connection.execute(
                "WITH h AS (SELECT \(schema).lode_horizon() AS h) SELECT (SELECT h FROM h), greatest("
                    + tables.map { "(SELECT max(version) FROM \($0), h WHERE version <= h.h)" }.joined(
                        separator: ", ")
                    + "), greatest("
                    + tables.map { "(SELECT max(version) FROM \($0))" }.joined(separator: ", ")
                    + ")")
            let horizon = highest.integer(0, 0) ?? 0
            let visible = highest.integer(0, 2) ?? 0
            guard let last = highest.integer(0, 1), last > cursor else {
                try connection.execute("COMMIT")
                return Downloaded(applied: false, visible: visible, horizon: horizon)
            }
            // A type the store holds nothing of yet needs only the rows inside its filter: through
            // the filter's index, in time proportional to them.
            let fresh =
                cursor == 0
                ? try store.read { tx in try state.shadows.map { try tx.lmdb.count(in: $0) == 0 } }
                : [Bool](repeating: false, count: types.count)
            var total = 0
            if cursor == 0 {
                var parameters: [String?] = []
                let counted = try connection.execute(
                    types.indices.map { index in
                        "SELECT count(*) AS n FROM \(schema).\(PostgresConnection.quoted(types[index].name)) WHERE version > 0"
                            + (fresh[index] ? Self.insideOnly(types[index], &parameters) : "")
                    }.joined(separator: " UNION ALL "), parameters)
                total = (0..<counted.rowCount).reduce(0) { $0 + Int(counted.integer($1, 0) ?? 0) }
            }
            var applied = 0
            board.update { $0.download = .init(applied: 0, total: total) }
            var buffer: [ServerRow] = []
            let page = max(100, min(options.downloadChunkSize, 5000))
            let (query, parameters) = Self.downloadQuery(
                types: types, schema: server.schema, after: cursor, upTo: last, fresh: fresh)
            try connection.execute(Self.cursorPlanning)
            try connection.execute(Self.declareCursor(query), parameters)
            while true {
                let rows = try fetch(page, on: connection)
                buffer += rows
                let done = rows.count < page
                if done {
                    try apply(buffer, cursor: last)
                    applied += buffer.count
                    buffer = []
                } else if buffer.count >= options.downloadChunkSize {
                    // Apply up to the last server version boundary; a transaction bigger than four
                    // chunks is applied in parts.
                    let lastVersion = buffer[buffer.count - 1].version
                    if let cut = buffer.lastIndex(where: { $0.version != lastVersion }) {
                        let head = Array(buffer[...cut])
                        try apply(head, cursor: head[head.count - 1].version)
                        applied += head.count
                        buffer.removeFirst(cut + 1)
                    } else if buffer.count >= options.downloadChunkSize * 4 {
                        try apply(buffer, cursor: lastVersion - 1)
                        applied += buffer.count
                        buffer = []
                    }
                }
                board.update { $0.download = .init(applied: applied, total: total) }
                if done { break }
            }
            try connection.execute("COMMIT")
            board.update {
                $0.download = nil
                $0.lastServerVersion = last
            }
            return Downloaded(applied: true, visible: visible, horizon: horizon)
        } catch {
            if connection.isOpen { _ = try? connection.execute("ROLLBACK") }
            board.update { $0.download = nil }
            throw error
        }
    }

    /// The setting a download's cursor is planned with: every row is fetched, so it is planned for
    /// all of them, not for the first tenth a cursor is planned for by default (which prefers the
    /// version index, already sorted, to a filter's index that reads a hundredth of the rows).
    static let cursorPlanning = "SET LOCAL cursor_tuple_fraction = 1.0"

    /// The statement that opens the download's cursor over `query`.
    static func declareCursor(_ query: String) -> String {
        "DECLARE lode_download NO SCROLL CURSOR FOR " + query
    }

    /// The download's query: the rows of every synced type after version `after` up to `last`, in
    /// `(version, type, key)` order — each type's from its `(version, key)` index, merged — with `gone`
    /// for tombstones and rows outside the type's filter (their data left out); for the types `fresh`
    /// marks (nothing of them stored yet), only rows inside the filter.
    static func downloadQuery(
        types: [SyncedType], schema serverSchema: String, after: Int64, upTo last: Int64, fresh: [Bool]
    ) -> (String, [String?]) {
        let schema = PostgresConnection.quoted(serverSchema)
        var parameters: [String?] = ["\(after)", "\(last)"]
        var branches: [String] = []
        for (index, type) in types.enumerated() {
            let inside = type.filter.map { "coalesce(\($0.sql(parameters: &parameters)), false)" } ?? "true"
            let restriction = fresh[index] ? Self.insideOnly(type, &parameters) : ""
            branches.append(
                """
                (SELECT \(index)::int4 AS t, key, version, (deleted OR NOT \(inside)) AS gone,
                        CASE WHEN deleted OR NOT \(inside) THEN NULL ELSE data END AS data
                 FROM \(schema).\(PostgresConnection.quoted(type.name))
                 WHERE version > $1::bigint AND version <= $2::bigint\(restriction))
                """)
        }
        return (
            "SELECT * FROM (" + branches.joined(separator: " UNION ALL ")
                + ") AS rows ORDER BY version, t, key",
            parameters
        )
    }

    /// The condition, for a type's first download, that keeps only live rows (a store that holds
    /// nothing of the type needs no tombstones) inside its filter (the filter's own expression, which
    /// an index on its fields serves).
    private static func insideOnly(_ type: SyncedType, _ parameters: inout [String?]) -> String {
        guard let filter = type.filter else { return " AND NOT deleted" }
        return " AND NOT deleted AND \(filter.sql(parameters: &parameters))"
    }

    /// The next `count` rows of the download's cursor, read from their binary forms (a `jsonb` is a
    /// version byte, 1, then its text).
    private func fetch(_ count: Int, on connection: PostgresConnection) throws -> [ServerRow] {
        let result = try connection.execute("FETCH FORWARD \(count) FROM lode_download", binary: true)
        return try (0..<result.rowCount).map { row in
            let data = try result.withBytes(row, 4) { bytes -> [UInt8] in
                guard bytes.first == 1 else {
                    throw SyncError.server(state: "", message: "a jsonb value of an unknown binary version")
                }
                return Array(bytes.dropFirst())
            }
            return ServerRow(
                type: Int(result.binaryInteger(row, 0) ?? 0),
                key: result.withBytes(row, 1) { String(decoding: $0, as: UTF8.self) } ?? "",
                version: result.binaryInteger(row, 2) ?? 0, gone: (result.binaryInteger(row, 3) ?? 1) != 0,
                data: data)
        }
    }

    /// Applies `rows` in one local commit and moves the download cursor to `cursor` (nil: it stays).
    /// A row the type cannot read is skipped, reported and noted, to be read again when the client
    /// next starts (`retryRejected(on:)`); the rest apply.
    private func apply(_ rows: [ServerRow], cursor: Int64?) throws {
        let rejected = rejectedRows
        let (problems, nowRejected) = try store.write { tx -> ([SyncError], Set<RejectedRow>) in
            var problems: [SyncError] = []
            var nowRejected = rejected
            var keepsLocalChange = false
            func skipped(_ row: ServerRow, _ problem: SyncError) throws {
                problems.append(problem)
                let name = types[row.type].name
                try state.noteRejected(type: name, keyText: row.key, version: row.version, in: tx)
                nowRejected.insert(RejectedRow(type: name, keyText: row.key))
            }
            for row in rows {
                let operations = types[row.type].operations
                let key: [UInt8]
                do {
                    key = try operations.keyBytes(fromText: row.key)
                } catch let error as SyncError {
                    try skipped(row, error)
                    continue
                }
                let shadow = try state.shadow(type: row.type, key: key, in: tx.lmdb)
                // Seen already: the version this client wrote or read (no two transactions write a
                // row at one version) — except for a filtered type, whose filter has not been asked
                // about this client's own write yet. A lower version than the one known is a later
                // write all the same: an older transaction overwrote the row after a newer one did.
                if let shadow, shadow.version == row.version, types[row.type].filter == nil {
                    continue
                }
                if let problem = try operations.apply(
                    row, key: key, shadow: shadow, state: state, in: tx, keepsLocalChange: &keepsLocalChange)
                {
                    try skipped(row, problem)
                } else if !nowRejected.isEmpty,
                    nowRejected.remove(RejectedRow(type: types[row.type].name, keyText: row.key)) != nil
                {
                    try state.clearRejected(type: types[row.type].name, keyText: row.key, in: tx)
                }
            }
            if let cursor, cursor > (try state.downloadCursor(in: tx.lmdb)) {
                try state.setInteger(cursor, SyncState.downloadKey, in: tx)
            }
            // This commit brings only what the server has: when every commit before it is uploaded
            // (the upload cursor is just before it), the cursor moves past it, so the next upload does
            // not read a large download back as candidates.
            if !keepsLocalChange, let upload = try state.uploadCursor(in: tx.lmdb), upload == tx.version - 1 {
                try state.setUploadCursor(tx.version, in: tx)
            }
            return (problems, nowRejected)
        }
        rejectedRows = nowRejected
        noteProblems(problems)
        if let cursor { board.update { $0.lastServerVersion = max($0.lastServerVersion, cursor) } }
    }

    /// Reads again the rows a download skipped (``SyncState/noteRejected(type:keyText:version:in:)``),
    /// as the server has them now: once at each start, so that a row an app could not read arrives
    /// when an update of the app can. A row it still cannot read stays noted and reported.
    func retryRejected(on connection: PostgresConnection) throws {
        let noted = try store.read { try state.rejected(in: $0.lmdb) }
        rejectedRows = Set(noted.map { RejectedRow(type: $0.type, keyText: $0.keyText) })
        guard !noted.isEmpty else { return }
        let schema = PostgresConnection.quoted(server.schema)
        var rows: [ServerRow] = []
        for (index, type) in types.enumerated() {
            let keys = noted.filter { $0.type == type.name }.map(\.keyText)
            guard !keys.isEmpty else { continue }
            var parameters: [String?] = [SyncValue.arrayLiteral(keys)]
            let inside = type.filter.map { "coalesce(\($0.sql(parameters: &parameters)), false)" } ?? "true"
            let result = try connection.execute(
                """
                SELECT key, version, (deleted OR NOT \(inside)) AS gone,
                       CASE WHEN deleted OR NOT \(inside) THEN NULL ELSE data::text END
                FROM \(schema).\(PostgresConnection.quoted(type.name)) WHERE key = ANY ($1::text[]) ORDER BY key
                """, parameters)
            rows += (0..<result.rowCount).map { row in
                ServerRow(
                    type: index, key: result.text(row, 0) ?? "", version: result.integer(row, 1) ?? 0,
                    gone: result.bool(row, 2) ?? true, data: result.text(row, 3).map { Array($0.utf8) })
            }
        }
        // The notes of rows the server no longer has, or of types no longer synced, go.
        let found = Set(rows.map { RejectedRow(type: types[$0.type].name, keyText: $0.key) })
        let gone = rejectedRows.subtracting(found)
        if !gone.isEmpty {
            try store.write { tx in
                for row in gone { try state.clearRejected(type: row.type, keyText: row.keyText, in: tx) }
            }
            rejectedRows.subtract(gone)
        }
        if !rows.isEmpty { try apply(rows, cursor: nil) } else { noteProblems([]) }
    }
}
