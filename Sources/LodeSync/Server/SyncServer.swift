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
    ///
    /// `filterIndexes` adds an index on each field that clients' filters (``SyncFilter``) compare, so a
    /// client that keeps a small part of a large table downloads it through the index, in time
    /// proportional to its part.
    public func setUp(for types: [any Persistable.Type], filterIndexes: [FilterIndex] = []) throws {
        try setUp(typeNames: types.map { $0.storeName }, filterIndexes: filterIndexes)
    }

    /// ``setUp(for:filterIndexes:)`` by the types' store names (what `lode-sync setup` uses).
    public func setUp(typeNames: [String], filterIndexes: [FilterIndex] = []) throws {
        let connection = try PostgresConnection(
            connectionString: connectionString, defaults: ConnectionDefaults.values)
        defer { connection.close() }
        try ServerSchema.setUp(connection, schema: schema, types: typeNames, filterIndexes: filterIndexes)
    }

    /// A field of a type's rows that partial-sync filters compare (``SyncFilter/equals(_:_:)``,
    /// ``SyncFilter/isIn(_:_:)``): the server keeps a B-tree index on it.
    public struct FilterIndex: Sendable, Equatable {
        /// The store name of the type (its table's name).
        public var type: String
        /// The field: a top-level field first, then nested ones.
        public var path: [String]

        /// The index on the field at `path` of `type`'s table.
        public init(type: String, path: [String]) {
            self.type = type
            self.path = path
        }

        /// The index on the top-level field `field` of `type`.
        public static func field(_ field: String, of type: any Persistable.Type) -> FilterIndex {
            FilterIndex(type: type.storeName, path: [field])
        }
    }
}
