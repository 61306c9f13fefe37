/// The steps a store runs while it opens, after its files are checked and before `init` returns,
/// that belong to the layer on top of the store's format: running migrations and checking the app's
/// types against their stored records. The store defines the step and calls it; `Migration/`
/// implements it, so the store never names a migration.
package protocol StoreOpening {
    /// Runs the migrations `store` has not run yet. Returns true when the last one's transaction also
    /// checked and registered `types` (then neither ``checkTypes(_:of:)`` nor registration runs).
    func runMigrations(on store: Store, types: [any Persistable.Type]) throws -> Bool

    /// Checks `types` against the records `store` keeps for them (when the configuration asks for
    /// it), before they are registered.
    func checkTypes(_ types: [any Persistable.Type], of store: Store) throws
}
