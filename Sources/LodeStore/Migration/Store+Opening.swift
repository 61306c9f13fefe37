import Foundation

// The store's public initializers: they take migrations, so they live in the migration layer, which
// implements the store's open step (`StoreOpening`).

extension Store {
    /// Opens (or creates) the store in the directory at `url`, registering `types` at once: their
    /// catalog entries are written and indexes added to or removed from their schemas are built or
    /// dropped, all in one transaction.
    ///
    /// With `migrations` (see ``Migration``), the ones the store has not run yet run first, in order,
    /// each in its own write transaction; then every type in `types` is checked against its stored
    /// records (see ``StoreConfiguration/checksTypesAtOpen``) before anything reads them. Without it (nil) the store's
    /// schema history is left alone (tools open stores so).
    ///
    /// - Throws: ``LodeError/notAStore(path:reason:)`` for a directory that holds another kind of
    ///   LMDB environment or no store (read-only), ``LodeError/storage(_:)`` for LMDB failures (a file
    ///   that is not LMDB, a missing directory in read-only mode); ``LodeError/storeNewerThanCode(path:unknownMigrations:)``,
    ///   ``LodeError/migrationsDiffer(path:position:stored:given:)``,
    ///   ``LodeError/migrationFailed(name:reason:)`` and
    ///   ``LodeError/typeChangedWithoutMigration(type:key:field:reason:)`` as their names say.
    public convenience init(
        at url: URL, configuration: StoreConfiguration = StoreConfiguration(),
        types: [any Persistable.Type] = [], migrations: [Migration]? = nil
    ) throws {
        try self.init(
            at: url, configuration: configuration, types: types,
            opening: MigrationsAtOpen(migrations: migrations), isTemporary: false)
    }

    /// Opens (or creates) the store in the directory at `path`.
    ///
    /// - Throws: as ``init(at:configuration:types:migrations:)``.
    public convenience init(
        atPath path: String, configuration: StoreConfiguration = StoreConfiguration(),
        types: [any Persistable.Type] = [], migrations: [Migration]? = nil
    ) throws {
        try self.init(
            at: URL(fileURLWithPath: path), configuration: configuration, types: types, migrations: migrations
        )
    }

    /// A store in a fresh directory of its own that disappears when the store closes — for tests and
    /// scratch work, with the same API as any store.
    ///
    /// The directory is made in `LODE_TEMPORARY_DIRECTORY` when that environment variable is set,
    /// otherwise on the memory-backed file system at `/dev/shm` when one is mounted there and
    /// writable (nothing touches a disk), otherwise in the system's temporary directory. It is
    /// removed when the store is closed, when the `Store` is released, or when the process exits
    /// normally. A process that crashes (or is killed) leaves its directories behind; the next
    /// `temporary()` of the same user removes those whose process is gone.
    ///
    /// The configuration defaults to ``Durability/noSync``: a temporary store need not survive a
    /// system crash, and its commits cost no flush.
    ///
    /// - Throws: ``LodeError/storage(_:)`` when no temporary directory can be made, and what
    ///   ``init(at:configuration:types:migrations:)`` throws.
    public static func temporary(
        configuration: StoreConfiguration = StoreConfiguration(durability: .noSync),
        types: [any Persistable.Type] = [], migrations: [Migration]? = nil
    ) throws -> Store {
        let directory = try TemporaryStores.shared.makeDirectory()
        do {
            return try Store(
                at: directory, configuration: configuration, types: types,
                opening: MigrationsAtOpen(migrations: migrations), isTemporary: true)
        } catch {
            TemporaryStores.shared.remove(directory.path)
            throw error
        }
    }
}

/// The open step of every store opened through the public initializers: the migrations given (nil:
/// the schema history is left alone, as tools open stores), then the check of the app's types.
struct MigrationsAtOpen: StoreOpening {
    /// The app's migrations, in order.
    let migrations: [Migration]?

    func runMigrations(on store: Store, types: [any Persistable.Type]) throws -> Bool {
        if let migrations, try store.migrate(migrations, types: types) { return true }
        // Fields the types declare renamed, in records that still hold the earlier names.
        try store.applyDeclaredRenames(types)
        return false
    }

    func checkTypes(_ types: [any Persistable.Type], of store: Store) throws {
        if store.configuration.checksTypesAtOpen { try store.checkTypesAtOpen(types) }
    }
}
