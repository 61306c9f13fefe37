import LodeCodec

/// The SQL that makes a PostgreSQL schema a sync server, and checks that it is one. Nothing runs on
/// the server but these tables, functions and triggers.
///
/// - `lode_clock`: one row, the server's version. The first write of a transaction to a synced table
///   takes the next version and keeps the row locked until the transaction ends, so versions are given
///   out in commit order: a reader that sees version *v* sees every transaction up to *v*.
/// - `lode_clients`: per client, the last upload batch applied and the version it got, so that a
///   batch sent again (after a crash or a lost answer) is not applied twice.
/// - one table per synced type: `key text primary key, data jsonb, version bigint, deleted boolean,
///   modified timestamptz`. Triggers stamp every insert and update with the transaction's version,
///   turn a `DELETE` into a tombstone (`deleted = true`, a new version), refuse `TRUNCATE`, and
///   `NOTIFY` the channel `<schema>.lode` once per transaction.
package enum ServerSchema {
    /// The prefix of the server's own tables; a synced type may not start with it.
    static let reservedPrefix = "lode_"
    /// PostgreSQL's longest identifier (`NAMEDATALEN - 1` bytes): a longer one is cut silently.
    static let maximumNameLength = 63

    /// The channel a schema's writes notify.
    static func channel(_ schema: String) -> String { schema + ".lode" }

    /// Checks that `name` can name a table in `schema`: not empty, at most 63 bytes, not reserved.
    static func validate(typeName name: String) throws {
        guard !name.isEmpty, name.utf8.count <= maximumNameLength else {
            throw SyncError.invalidConfiguration(
                "the type name \"\(name)\" cannot name a PostgreSQL table (1 to \(maximumNameLength) bytes)")
        }
        guard !name.hasPrefix(reservedPrefix) else {
            throw SyncError.invalidConfiguration(
                "the type name \"\(name)\" starts with \"\(reservedPrefix)\", which the sync server's own tables use"
            )
        }
    }

    /// Checks that `schema` can name a PostgreSQL schema.
    static func validate(schema: String) throws {
        guard !schema.isEmpty, schema.utf8.count <= maximumNameLength - 5 else {
            throw SyncError.invalidConfiguration(
                "the schema name \"\(schema)\" must be 1 to \(maximumNameLength - 5) bytes")
        }
    }

    /// The statements that create (or bring up to date) the schema and the tables of `types`.
    /// Idempotent: running them again changes nothing.
    static func setUpStatements(schema: String, types: [String]) -> [String] {
        let s = PostgresConnection.quoted(schema)
        var statements = [
            "CREATE SCHEMA IF NOT EXISTS \(s)",
            """
            CREATE TABLE IF NOT EXISTS \(s).lode_clock (
                id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL)
            """,
            "INSERT INTO \(s).lode_clock VALUES (1, 0) ON CONFLICT DO NOTHING",
            """
            CREATE TABLE IF NOT EXISTS \(s).lode_clients (
                client_id text PRIMARY KEY, batch bigint NOT NULL, version bigint NOT NULL,
                seen timestamptz NOT NULL DEFAULT now())
            """,
            // The setting that remembers the transaction's version is named after the schema's hash,
            // so a transaction writing to two sync schemas stamps each with its own clock.
            """
            CREATE OR REPLACE FUNCTION \(s).lode_stamp() RETURNS trigger LANGUAGE plpgsql AS $lode$
            DECLARE
                setting text := 'lode.v' || md5(TG_TABLE_SCHEMA);
                marker text := pg_current_xact_id()::text;
                stamped bigint;
            BEGIN
                IF current_setting(setting || 'x', true) IS DISTINCT FROM marker THEN
                    EXECUTE format('UPDATE %I.lode_clock SET version = version + 1 WHERE id = 1 RETURNING version',
                        TG_TABLE_SCHEMA) INTO stamped;
                    PERFORM set_config(setting || 'x', marker, true);
                    PERFORM set_config(setting, stamped::text, true);
                    PERFORM pg_notify(TG_TABLE_SCHEMA || '.lode', stamped::text);
                END IF;
                NEW.version := current_setting(setting)::bigint;
                NEW.modified := now();
                RETURN NEW;
            END
            $lode$
            """,
            """
            CREATE OR REPLACE FUNCTION \(s).lode_tombstone() RETURNS trigger LANGUAGE plpgsql AS $lode$
            BEGIN
                EXECUTE format('UPDATE %I.%I SET deleted = true WHERE key = $1 AND NOT deleted',
                    TG_TABLE_SCHEMA, TG_TABLE_NAME) USING OLD.key;
                RETURN NULL;
            END
            $lode$
            """,
            """
            CREATE OR REPLACE FUNCTION \(s).lode_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $lode$
            BEGIN
                RAISE EXCEPTION 'a Lode sync table keeps tombstones for its clients: delete rows with DELETE, not TRUNCATE';
            END
            $lode$
            """,
        ]
        for type in types {
            let t = "\(s).\(PostgresConnection.quoted(type))"
            statements += [
                """
                CREATE TABLE IF NOT EXISTS \(t) (
                    key text PRIMARY KEY, data jsonb, version bigint NOT NULL DEFAULT 0,
                    deleted boolean NOT NULL DEFAULT false, modified timestamptz NOT NULL DEFAULT now())
                """,
                "CREATE INDEX IF NOT EXISTS \(PostgresConnection.quoted(versionIndexName(type))) ON \(t) (version, key)",
                "CREATE OR REPLACE TRIGGER lode_stamp BEFORE INSERT OR UPDATE ON \(t) "
                    + "FOR EACH ROW EXECUTE FUNCTION \(s).lode_stamp()",
                "CREATE OR REPLACE TRIGGER lode_tombstone BEFORE DELETE ON \(t) "
                    + "FOR EACH ROW EXECUTE FUNCTION \(s).lode_tombstone()",
                "CREATE OR REPLACE TRIGGER lode_refuse_truncate BEFORE TRUNCATE ON \(t) "
                    + "FOR EACH STATEMENT EXECUTE FUNCTION \(s).lode_refuse_truncate()",
            ]
        }
        return statements
    }

    /// The statement that makes the index of `index` (idempotent).
    static func filterIndexStatement(schema: String, _ index: SyncServer.FilterIndex) -> String {
        let hash = IndexKeyLimit.fnv1a64(
            Array((index.type + "\u{1F}" + index.path.joined(separator: "\u{1F}")).utf8))
        let hex = String(hash, radix: 16)
        let name = "lode_filter_" + String(repeating: "0", count: 16 - hex.count) + hex
        return "CREATE INDEX IF NOT EXISTS \(PostgresConnection.quoted(name)) ON "
            + "\(PostgresConnection.quoted(schema)).\(PostgresConnection.quoted(index.type)) "
            + "(\(FilterSQL.fieldExpression(index.path)))"
    }

    /// The name of a type's version index: `lode_version_` and a hash of the type's name (the
    /// type's name itself could make it longer than an identifier may be).
    static func versionIndexName(_ type: String) -> String {
        let hash = IndexKeyLimit.fnv1a64(Array(type.utf8))
        let hex = String(hash, radix: 16)
        return "lode_version_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Runs the setup in one transaction, serialized with any other setup of the schema.
    static func setUp(
        _ connection: PostgresConnection, schema: String, types: [String],
        filterIndexes: [SyncServer.FilterIndex] = []
    ) throws {
        try validate(schema: schema)
        for type in types { try validate(typeName: type) }
        for index in filterIndexes {
            guard types.contains(index.type) else {
                throw SyncError.invalidConfiguration(
                    "the filter index on \(index.path.joined(separator: ".")) is of \(index.type), which is not set up"
                )
            }
            guard !index.path.isEmpty, !index.path.contains(where: { $0.isEmpty || $0.contains("\u{0}") })
            else {
                throw SyncError.invalidConfiguration(
                    "a filter index of \(index.type) has an empty or invalid field path")
            }
        }
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", ["lode setup " + schema])
            for statement in setUpStatements(schema: schema, types: types) {
                try connection.execute(statement)
            }
            for index in filterIndexes {
                try connection.execute(filterIndexStatement(schema: schema, index))
            }
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Throws ``SyncError/serverNotSetUp(_:)`` unless `schema` has the server's tables and one for
    /// each of `types`, with the columns and triggers sync relies on.
    static func check(_ connection: PostgresConnection, schema: String, types: [String]) throws {
        let found = try connection.execute(
            """
            SELECT c.relname,
                   (SELECT count(*) FROM pg_attribute a WHERE a.attrelid = c.oid AND NOT a.attisdropped
                      AND a.attname IN ('key', 'data', 'version', 'deleted')),
                   (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = c.oid
                      AND g.tgname IN ('lode_stamp', 'lode_tombstone'))
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind = 'r'
            """, [schema])
        var tables: [String: (columns: Int64, triggers: Int64)] = [:]
        for row in 0..<found.rowCount {
            tables[found.text(row, 0) ?? ""] = (found.integer(row, 1) ?? 0, found.integer(row, 2) ?? 0)
        }
        guard tables["lode_clock"] != nil, tables["lode_clients"] != nil else {
            throw SyncError.serverNotSetUp(
                "schema \"\(schema)\" has no lode_clock and lode_clients tables (run the setup)")
        }
        for type in types {
            guard let table = tables[type] else {
                throw SyncError.serverNotSetUp(
                    "schema \"\(schema)\" has no table \"\(type)\" (run the setup)")
            }
            guard table.columns == 4, table.triggers == 2 else {
                throw SyncError.serverNotSetUp(
                    "table \"\(schema)\".\"\(type)\" is not a sync table: it needs the columns key, data, version "
                        + "and deleted and the lode_stamp and lode_tombstone triggers (run the setup)")
            }
        }
    }
}
