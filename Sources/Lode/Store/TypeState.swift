import LMDB
import Synchronization

/// Something a write transaction changed provisionally and settles when it ends.
protocol PendingWriteState: AnyObject {
    func finishWrite(committed: Bool)
}

/// What a store keeps about one registered type: its databases and the indexes that exist on disk.
final class TypeState<T: Persistable>: @unchecked Sendable, PendingWriteState {
    struct LiveIndex {
        let definition: Index<T>
        let database: Database
    }

    let schema: Schema<T>
    /// The records database, or nil when the type has never been stored (read-only view).
    let records: Database?
    /// Indexes that exist on disk and match the schema.
    let indexes: [LiveIndex]
    var entry: CatalogEntry
    /// True when the registration is complete (every schema index built); read-only views of a
    /// store whose catalog lags the schema are not.
    let complete: Bool

    init(schema: Schema<T>, records: Database?, indexes: [LiveIndex], entry: CatalogEntry, complete: Bool) {
        self.schema = schema
        self.records = records
        self.indexes = indexes
        self.entry = entry
        self.complete = complete
    }

    /// A catalog entry written by the running write transaction, not yet committed.
    var pendingEntry: CatalogEntry?
    /// Hashes of top-level field-name sequences whose names are all in the committed catalog entry.
    private let shapes = Mutex<Set<UInt64>>([])

    func knowsShape(_ shape: UInt64) -> Bool { shapes.withLock { $0.contains(shape) } }
    func learnShape(_ shape: UInt64) { _ = shapes.withLock { $0.insert(shape) } }

    func finishWrite(committed: Bool) {
        if committed, let pendingEntry { entry = pendingEntry }
        pendingEntry = nil
    }

    var typeName: String { schema.typeName }

    func index(named name: String) -> LiveIndex? { indexes.first { $0.definition.name == name } }
}
