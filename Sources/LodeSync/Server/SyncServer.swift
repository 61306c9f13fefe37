import LodeStore

/// Where a store syncs: a PostgreSQL database (a connection string, as libpq takes it) and the schema
/// that holds the sync tables.
///
/// The connection string may name a password file (`passfile=…`), TLS settings (`sslmode=verify-full
/// sslrootcert=…`) and anything else libpq reads; it is passed to libpq and never printed or logged —
/// this type's description leaves it out.
public struct SyncServer: Sendable, CustomStringConvertible {
    /// The libpq connection string (`host=… dbname=…` or `postgresql://…`).
    public var connectionString: String
    /// The PostgreSQL schema of the sync tables (`lode` unless set).
    public var schema: String

    /// Makes a server description.
    public init(connectionString: String, schema: String = "lode") {
        self.connectionString = connectionString
        self.schema = schema
    }

    /// The schema, without the connection string.
    public var description: String { "SyncServer(schema: \(schema))" }

    /// Creates (or brings up to date) the schema, the server's own tables and a table for each of
    /// `types`, in one transaction. Idempotent: running it again, from any number of clients at once,
    /// changes nothing. Needs the rights to create a schema, tables, functions and triggers.
    /// - Throws: ``SyncError``.
    public func setUp(for types: [any Persistable.Type]) throws {
        try setUp(typeNames: types.map { $0.storeName })
    }

    /// ``setUp(for:)`` by the types' store names (what `lode-sync setup` uses).
    public func setUp(typeNames: [String]) throws {
        let connection = try PostgresConnection(
            connectionString: connectionString, defaults: ConnectionDefaults.values)
        defer { connection.close() }
        try ServerSchema.setUp(connection, schema: schema, types: typeNames)
    }
}
