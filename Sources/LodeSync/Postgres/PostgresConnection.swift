import CLibPQ
import Foundation

/// One connection to PostgreSQL through libpq, used by one thread at a time (the sync engine's).
///
/// Statements take their values as parameters (`$1`, `$2`…), sent apart from the SQL text, so a value
/// is never read as SQL; identifiers are quoted with ``PostgresConnection/quoted(_:)``. The connection
/// string is handed to libpq and kept nowhere else: no message of this type contains it.
package final class PostgresConnection {
    private var connection: OpaquePointer?

    /// Connects with `connectionString` (`key=value` pairs or a `postgresql://` URI, as libpq takes
    /// them: `passfile`, `sslmode`… included), adding each of `defaults` that it does not set.
    /// - Throws: ``SyncError/connectionFailed(_:)`` with libpq's message.
    package init(connectionString: String, defaults: [String: String] = [:]) throws {
        var parseError: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &parseError) else {
            let message = parseError.map { String(cString: $0) } ?? "it could not be read"
            if let parseError { PQfreemem(parseError) }
            throw SyncError.connectionFailed(
                "the connection string is malformed: \(message.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
        defer { PQconninfoFree(options) }
        var pairs: [(String, String)] = []
        var set = Set<String>()
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                let name = String(cString: keyword)
                pairs.append((name, String(cString: value)))
                set.insert(name)
            }
            option += 1
        }
        for (name, value) in defaults.sorted(by: { $0.key < $1.key }) where !set.contains(name) {
            pairs.append((name, value))
        }
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let keywordArray = keywords.map { UnsafePointer($0) } + [nil]
        let valueArray = values.map { UnsafePointer($0) } + [nil]
        let made = PQconnectdbParams(keywordArray, valueArray, 0)
        guard let made, PQstatus(made) == CONNECTION_OK else {
            let message = made.map { Self.message(of: $0) } ?? "libpq could not allocate a connection"
            if let made { PQfinish(made) }
            throw SyncError.connectionFailed(message)
        }
        // The server's notices (a setup's "already exists, skipping") are not errors: not printed.
        PQsetNoticeProcessor(made, { _, _ in }, nil)
        connection = made
    }

    deinit { close() }

    /// Closes the connection; later calls throw ``SyncError/connectionLost(_:)``.
    package func close() {
        if let connection { PQfinish(connection) }
        connection = nil
    }

    /// True while the connection is open and libpq has not seen it fail.
    package var isOpen: Bool { connection.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The connection's socket, to wait on for notifications.
    package var socket: Int32 { connection.map { PQsocket($0) } ?? -1 }

    /// The server's process id for this connection (what `pg_terminate_backend` takes).
    package var backendPID: Int32 { connection.map { PQbackendPID($0) } ?? 0 }

    /// Runs `sql` with `parameters` bound to `$1`, `$2`… as text (nil is SQL NULL) and returns its
    /// rows.
    /// - Throws: ``SyncError/server(state:message:)`` when PostgreSQL refuses the statement,
    ///   ``SyncError/connectionLost(_:)`` when the connection is gone.
    /// With `binary`, the rows come in PostgreSQL's binary forms (read them with
    /// ``PostgresResult/binaryInteger(_:_:)`` and ``PostgresResult/withBytes(_:_:_:)``).
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = [], binary: Bool = false) throws
        -> PostgresResult
    {
        guard let connection else { throw SyncError.connectionLost("the connection is closed") }
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0) } }
        defer { for copy in copies { free(copy) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        let result = pointers.withUnsafeBufferPointer { buffer in
            PQexecParams(
                connection, sql, Int32(buffer.count), nil, buffer.baseAddress, nil, nil, binary ? 1 : 0)
        }
        guard let result else {
            throw SyncError.connectionLost(Self.message(of: connection))
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(result)
        default:
            let error = Self.error(of: result, on: connection)
            PQclear(result)
            throw error
        }
    }

    /// The error a failed result reports: the server's (with its SQLSTATE), or a lost connection.
    private static func error(of result: OpaquePointer, on connection: OpaquePointer) -> SyncError {
        let state = PQresultErrorField(result, clibpq_diag_sqlstate).map { String(cString: $0) } ?? ""
        let primary =
            PQresultErrorField(result, clibpq_diag_message_primary).map { String(cString: $0) }
            ?? message(of: connection)
        let detail = PQresultErrorField(result, clibpq_diag_message_detail).map { String(cString: $0) }
        if PQstatus(connection) != CONNECTION_OK || state.isEmpty {
            return SyncError.connectionLost(primary)
        }
        return SyncError.server(state: state, message: detail.map { "\(primary) (\($0))" } ?? primary)
    }

    /// Runs `COPY … TO STDOUT` and hands each row's bytes to `body` as they arrive; returns how many
    /// rows there were.
    /// - Throws: as ``execute(_:_:)``.
    @discardableResult
    package func copyOut(_ sql: String, _ body: (UnsafeRawBufferPointer) -> Void) throws -> Int {
        guard let connection else { throw SyncError.connectionLost("the connection is closed") }
        guard let started = PQexec(connection, sql) else {
            throw SyncError.connectionLost(Self.message(of: connection))
        }
        guard PQresultStatus(started) == PGRES_COPY_OUT else {
            let error = Self.error(of: started, on: connection)
            PQclear(started)
            throw error
        }
        PQclear(started)
        var rows = 0
        var buffer: UnsafeMutablePointer<CChar>?
        while true {
            let length = PQgetCopyData(connection, &buffer, 0)
            if length < 0 { break }
            if let buffer {
                body(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                PQfreemem(buffer)
            }
            rows += 1
        }
        var failure: SyncError?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) != PGRES_COMMAND_OK {
                failure = failure ?? Self.error(of: result, on: connection)
            }
            PQclear(result)
        }
        if let failure { throw failure }
        return rows
    }

    /// Runs `COPY … FROM STDIN` with `rows` (each a row of COPY's text format, its newline included)
    /// as the data; returns how many rows the server took.
    /// - Throws: as ``execute(_:_:binary:)``.
    @discardableResult
    package func copyIn(_ sql: String, rows: some Sequence<[UInt8]>) throws -> Int {
        guard let connection else { throw SyncError.connectionLost("the connection is closed") }
        guard let started = PQexec(connection, sql) else {
            throw SyncError.connectionLost(Self.message(of: connection))
        }
        guard PQresultStatus(started) == PGRES_COPY_IN else {
            let error = Self.error(of: started, on: connection)
            PQclear(started)
            throw error
        }
        PQclear(started)
        for row in rows {
            let sent = row.withUnsafeBytes {
                PQputCopyData(
                    connection, $0.baseAddress?.assumingMemoryBound(to: CChar.self), Int32($0.count))
            }
            guard sent == 1 else { throw SyncError.connectionLost(Self.message(of: connection)) }
        }
        guard PQputCopyEnd(connection, nil) == 1 else {
            throw SyncError.connectionLost(Self.message(of: connection))
        }
        var taken = 0
        var failure: SyncError?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                taken = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else {
                failure = failure ?? Self.error(of: result, on: connection)
            }
            PQclear(result)
        }
        if let failure { throw failure }
        return taken
    }

    /// The channels and payloads of the notifications that have arrived, reading what the socket
    /// holds without waiting.
    /// - Throws: ``SyncError/connectionLost(_:)`` when the connection is gone.
    package func notifications() throws -> [(channel: String, payload: String)] {
        guard let connection else { throw SyncError.connectionLost("the connection is closed") }
        guard PQconsumeInput(connection) == 1 else {
            throw SyncError.connectionLost(Self.message(of: connection))
        }
        var found: [(String, String)] = []
        while let notify = PQnotifies(connection) {
            found.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return found
    }

    /// `name` as a quoted SQL identifier: in double quotes, each double quote doubled, so any text —
    /// a hostile type name included — names exactly that object.
    package static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private static func message(of connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
