import LMDB

/// Something a write transaction changed provisionally and settles when it ends.
protocol PendingWriteState: AnyObject {
    /// The catalog entry the running write transaction wrote, if any.
    var pendingEntry: CatalogEntry? { get set }
    func finishWrite(committed: Bool)
}

/// What a store keeps about one registered type: its databases and the indexes that exist on disk.
///
/// Lock order: `catalog` and `shapes` are leaves.
final class TypeState<T: Persistable>: Sendable, PendingWriteState {
    struct LiveIndex {
        let definition: Index<T>
        let database: Database
    }

    let schema: Schema<T>
    /// The records database, or nil when the type has never been stored (read-only view).
    let records: Database?
    /// Indexes that exist on disk and match the schema.
    let indexes: [LiveIndex]
    /// The committed catalog entry and the one the running write transaction wrote, if any. A write
    /// settles them after its commit, outside the writer lock, while the next write may already read
    /// them: they change together, under the mutex.
    private let catalog: Locked<(entry: CatalogEntry, pending: CatalogEntry?)>
    /// The last version at which the stored catalog entry was found to match this state, and the
    /// entry's bytes then (another process may rewrite the entry: see `Transaction.verify(_:writing:)`).
    private let verified = Locked<(version: Int, bytes: [UInt8])>((-1, []))
    /// True when the registration is complete (every schema index built); read-only views of a
    /// store whose catalog lags the schema are not.
    let complete: Bool

    init(schema: Schema<T>, records: Database?, indexes: [LiveIndex], entry: CatalogEntry, complete: Bool) {
        self.schema = schema
        self.records = records
        self.indexes = indexes
        self.catalog = Locked((entry, nil))
        self.complete = complete
    }

    /// The committed catalog entry.
    var entry: CatalogEntry { catalog.withLock { $0.entry } }

    /// A catalog entry written by the running write transaction, not yet committed.
    var pendingEntry: CatalogEntry? {
        get { catalog.withLock { $0.pending } }
        set { catalog.withLock { $0.pending = newValue } }
    }

    /// The entry a write transaction builds on: its own pending one, or the committed one.
    var latestEntry: CatalogEntry { catalog.withLock { $0.pending ?? $0.entry } }
    /// Hashes of top-level field-name sequences and their values' kinds (the encoder's record shape)
    /// that the committed catalog entry holds.
    private let shapes = Locked<Set<UInt64>>([])

    func knowsShape(_ shape: UInt64) -> Bool { shapes.withLock { $0.contains(shape) } }
    func learnShape(_ shape: UInt64) { _ = shapes.withLock { $0.insert(shape) } }

    /// True when the entry was verified at `version`.
    func isVerified(at version: Int) -> Bool { verified.withLock { $0.version == version } }

    /// True when `bytes` are the bytes last verified (the entry did not change since).
    func isVerified(bytes: UnsafeRawBufferPointer) -> Bool {
        verified.withLock { $0.bytes.elementsEqual(bytes) }
    }

    /// Notes that the stored entry, `bytes`, matched at `version`.
    func noteVerified(version: Int, bytes: UnsafeRawBufferPointer) {
        verified.withLock { verified in
            if !verified.bytes.elementsEqual(bytes) { verified.bytes = Array(bytes) }
            verified.version = version
        }
    }

    /// Takes `stored`, written by another process (fields and shapes it learned), as the committed
    /// entry this process builds on — unless it is the one an earlier write of this process
    /// committed and has not settled yet.
    func adopt(_ stored: CatalogEntry) {
        catalog.withLock { catalog in
            if catalog.pending == stored || catalog.entry == stored { return }
            catalog.entry = stored
            catalog.pending = nil
        }
    }

    /// How the stored `entry` differs from this state in what reading (or, with `writing`, writing)
    /// relies on — the primary key, the indexes this state uses, and for writes no index it does not
    /// maintain — or nil when it does not.
    func difference(from entry: CatalogEntry, writing: Bool) -> String? {
        if entry.primaryKey != schema.primaryKeyField {
            return "its primary key is now \"\(entry.primaryKey)\", not \"\(schema.primaryKeyField)\""
        }
        for index in indexes {
            let wanted = CatalogEntry.IndexEntry(
                name: index.definition.name, fields: index.definition.fields,
                unique: index.definition.isUnique)
            guard let stored = entry.indexes.first(where: { $0.name == wanted.name }) else {
                return "index \"\(wanted.name)\" was dropped"
            }
            if stored != wanted { return "index \"\(wanted.name)\" was redefined" }
        }
        if writing, let added = entry.indexes.first(where: { index(named: $0.name) == nil }) {
            return "index \"\(added.name)\" was added, which this process does not maintain"
        }
        return nil
    }

    func finishWrite(committed: Bool) {
        catalog.withLock { catalog in
            if committed, let pending = catalog.pending { catalog.entry = pending }
            catalog.pending = nil
        }
    }

    var typeName: String { schema.typeName }

    func index(named name: String) -> LiveIndex? { indexes.first { $0.definition.name == name } }
}
