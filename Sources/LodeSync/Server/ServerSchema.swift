import LodeCodec

/// The SQL that makes a PostgreSQL schema a sync server, and checks that it is one. Nothing runs on
/// the server but these tables, functions and triggers.
///
/// - Versions come from the transaction ids PostgreSQL already hands out: a row written by a
///   transaction gets twice its id plus the schema's `version_base`. No row is shared by writers.
///   An older transaction that overwrites a row a newer one wrote gives it a lower version than the
///   newer one's: a client reading up to the horizon never saw the newer one's (it was above the
///   horizon while the older ran), and one that wrote it knows it by its exact version.
/// - `lode_horizon()`: the highest version a reader may take as complete: one below the oldest
///   transaction id still running when its snapshot was taken. Every transaction with a smaller id
///   has ended, so a reader that reads every row up to the horizon has seen all of them, and a
///   transaction still running writes only versions above it.
/// - `lode_server`: the format, and the `version_base` added to transaction ids — raised by the
///   setup when a table holds versions above the transaction ids (a server restored from a dump into
///   a new cluster, or one set up by the clock-row format before it).
/// - `lode_clients`: per client, the last upload batch applied and the version it got, so
///   that a batch sent again (after a crash or a lost answer) is not applied twice.
/// - one table per synced type: `key text primary key, data jsonb, version bigint, deleted boolean,
///   modified timestamptz`. Triggers stamp every insert and update with its version, turn a
///   `DELETE` into a tombstone (`deleted = true`, a new version), refuse `TRUNCATE`, and `NOTIFY` the
///   channel `<schema>.lode` once per transaction.
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

    /// The server format this code writes and reads: 2, versions from transaction ids (1 was a clock
    /// row, `lode_clock`, that every writing transaction held until it committed).
    static let format = 2

    /// The comment the stamp function of this format carries, which the check looks for.
    static let formatMarker = "Lode sync server format \(format)"

    /// The statements that create the schema and the server's own tables (idempotent).
    static func serverTableStatements(schema: String) -> [String] {
        let s = PostgresConnection.quoted(schema)
        return [
            "CREATE SCHEMA IF NOT EXISTS \(s)",
            """
            CREATE TABLE IF NOT EXISTS \(s).lode_server (
                id integer PRIMARY KEY CHECK (id = 1), format integer NOT NULL, version_base bigint NOT NULL)
            """,
            "INSERT INTO \(s).lode_server VALUES (1, \(format), 0) ON CONFLICT DO NOTHING",
            """
            CREATE TABLE IF NOT EXISTS \(s).lode_clients (
                client_id text PRIMARY KEY, batch bigint NOT NULL, version bigint NOT NULL,
                seen timestamptz NOT NULL DEFAULT now())
            """,
        ]
    }

    /// The transaction-local setting that says a transaction has notified the schema's channel: named
    /// after a hash of the schema, so that a transaction writing to two sync schemas notifies both.
    static func notifiedSetting(_ schema: String) -> String {
        "lode.n" + hashed(schema)
    }

    /// A name's FNV-1a hash as 16 hex digits: a stand-in for a name that may be too long, or not an
    /// identifier, where PostgreSQL needs one.
    static func hashed(_ name: String) -> String {
        let hex = String(IndexKeyLimit.fnv1a64(Array(name.utf8)), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The statements that create (or bring up to date) the functions and the tables of `types`, with
    /// versions from transaction ids plus `base` (see ``versionBase(_:schema:)``). Idempotent: running
    /// them again with the same base changes nothing.
    ///
    /// A transaction's rows get `2 × its id + base`: a number no other transaction's rows have, so a
    /// row's two versions written by different transactions always differ, and a running
    /// transaction's versions are above `2 × oldest running id + base − 1`, the horizon readers take.
    /// (Twice the id leaves the odd numbers free, should a later format need versions between.)
    static func setUpStatements(schema: String, types: [String], base: Int64) -> [String] {
        let s = PostgresConnection.quoted(schema)
        var statements = [
            """
            CREATE OR REPLACE FUNCTION \(s).lode_stamp() RETURNS trigger LANGUAGE plpgsql AS $lode$
            -- \(formatMarker): versions from transaction ids.
            DECLARE
                stamped bigint := 2 * pg_current_xact_id()::text::bigint + \(base);
                setting text := '\(notifiedSetting(schema))';
            BEGIN
                IF current_setting(setting, true) IS DISTINCT FROM stamped::text THEN
                    PERFORM set_config(setting, stamped::text, true);
                    PERFORM pg_notify(TG_TABLE_SCHEMA || '.lode', '');
                END IF;
                NEW.version := stamped;
                NEW.modified := now();
                RETURN NEW;
            END
            $lode$
            """,
            """
            CREATE OR REPLACE FUNCTION \(s).lode_horizon() RETURNS bigint LANGUAGE sql STABLE AS $lode$
                SELECT 2 * pg_snapshot_xmin(pg_current_snapshot())::text::bigint + \(base) - 1
            $lode$
            """,
            "UPDATE \(s).lode_server SET format = \(format), version_base = \(base) WHERE id = 1",
            // The clock row of format 1: a client of that format finds it gone and says so.
            "DROP TABLE IF EXISTS \(s).lode_clock",
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
        let name = "lode_filter_" + hashed(index.type + "\u{1F}" + index.path.joined(separator: "\u{1F}"))
        return "CREATE INDEX IF NOT EXISTS \(PostgresConnection.quoted(name)) ON "
            + "\(PostgresConnection.quoted(schema)).\(PostgresConnection.quoted(index.type)) "
            + "(\(FilterSQL.fieldExpression(index.path)))"
    }

    /// The name of a type's version index: `lode_version_` and a hash of the type's name (the
    /// type's name itself could make it longer than an identifier may be).
    static func versionIndexName(_ type: String) -> String {
        "lode_version_" + hashed(type)
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
            for statement in serverTableStatements(schema: schema) {
                try connection.execute(statement)
            }
            let found = try connection.execute(
                "SELECT format FROM \(PostgresConnection.quoted(schema)).lode_server WHERE id = 1")
            if let format = found.integer(0, 0), format > Self.format {
                throw SyncError.serverNotSetUp(
                    "schema \"\(schema)\" has sync server format \(format), newer than this client's "
                        + "(\(Self.format)): update the app before setting it up")
            }
            let base = try versionBase(connection, schema: schema)
            for statement in setUpStatements(schema: schema, types: types, base: base) {
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

    /// The base added to twice the transaction ids: the one in use, raised when a table of the schema
    /// holds a version the next transaction's would not be above (a schema of the clock-row format,
    /// or one restored from a dump into a new cluster, whose transaction ids start again).
    static func versionBase(_ connection: PostgresConnection, schema: String) throws -> Int64 {
        let s = PostgresConnection.quoted(schema)
        let tables = try connection.execute(
            """
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'version' AND NOT a.attisdropped
            WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'lode_server'
            """, [schema])
        var highest: Int64 = 0
        for row in 0..<tables.rowCount {
            let table = PostgresConnection.quoted(tables.text(row, 0) ?? "")
            let found = try connection.execute("SELECT coalesce(max(version), 0) FROM \(s).\(table)")
            highest = max(highest, found.integer(0, 0) ?? 0)
        }
        let current = try connection.execute(
            "SELECT version_base, pg_current_xact_id()::text::bigint FROM \(s).lode_server WHERE id = 1")
        let base = current.integer(0, 0) ?? 0
        let transaction = current.integer(0, 1) ?? 0
        // Every later transaction's id is above this one's: its versions are above 2 × id + base.
        return max(base, highest - 2 * transaction)
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
        guard tables["lode_server"] != nil, tables["lode_clients"] != nil else {
            throw SyncError.serverNotSetUp(
                tables["lode_clock"] != nil
                    ? "schema \"\(schema)\" has the sync server format 1 (a clock row): run the setup to bring it to "
                        + "format \(format)"
                    : "schema \"\(schema)\" has no lode_server and lode_clients tables (run the setup)")
        }
        let format =
            try connection.execute(
                "SELECT format FROM \(PostgresConnection.quoted(schema)).lode_server WHERE id = 1"
            ).integer(0, 0) ?? 0
        guard format == Self.format else {
            throw SyncError.serverNotSetUp(
                format > Self.format
                    ? "schema \"\(schema)\" has sync server format \(format), newer than this client's (\(Self.format)): "
                        + "update the app"
                    : "schema \"\(schema)\" has sync server format \(format): run the setup to bring it to "
                        + "format \(Self.format)")
        }
        // The functions must be this format's too: the setup of an older Lode (a client of an older
        // app that sets the server up) puts back a clock row and its stamp.
        let functions = try connection.execute(
            """
            SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = $1 AND p.proname IN ('lode_stamp', 'lode_horizon')
            """, [schema])
        let sources = Dictionary(
            (0..<functions.rowCount).map { (functions.text($0, 0) ?? "", functions.text($0, 1) ?? "") },
            uniquingKeysWith: { first, _ in first })
        guard sources["lode_horizon"] != nil, sources["lode_stamp"]?.contains(formatMarker) == true,
            tables["lode_clock"] == nil
        else {
            throw SyncError.serverNotSetUp(
                "schema \"\(schema)\" says format \(Self.format) but its triggers are of an older one (the setup of "
                    + "an older Lode ran since): run this version's setup, and update every client")
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
