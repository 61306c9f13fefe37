import LodeCodec
import LodeStore

extension Transaction {
    /// Writes `history` as the migrations this store has run — for tools that restore a store from an
    /// export of another (`lode-dump load`); apps let `Store/init(at:configuration:types:migrations:)`
    /// keep it.
    /// - Throws: `LodeError/migrationsDiffer(path:position:stored:given:)` when the store ran other
    ///   migrations than the start of `history`.
    public func restoreSchemaHistory(_ history: SchemaHistory) throws {
        guard let write = self as? WriteTransaction else { throw LodeError.readOnly(path: store.path) }
        let current = try schemaHistory().migrations
        for (position, name) in current.enumerated()
        where position >= history.migrations.count || history.migrations[position] != name {
            throw LodeError.migrationsDiffer(
                path: store.path, position: position, stored: name,
                given: position < history.migrations.count ? history.migrations[position] : "(none)")
        }
        try write.lmdbWrite.put(
            try CBOREncoder().encode(history.migrations), forKey: Array(StoreLayout.migrationsKey.utf8),
            in: store.meta)
        try write.lmdbWrite.put(
            try CBOREncoder().encode(history.version), forKey: Array(StoreLayout.schemaVersionKey.utf8),
            in: store.meta)
    }
}
