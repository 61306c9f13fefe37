import Foundation
import LMDB
import LodeCodec

/// Something a write transaction changed provisionally and settles when it ends.
protocol PendingWriteState: AnyObject {
    /// The catalog entry the running write transaction wrote, if any.
    var pendingEntry: CatalogEntry? { get set }
    func finishWrite(committed: Bool)
}

/// What a store keeps about one registered type: its databases and the indexes that exist on disk.
///
/// Lock order: `catalog` and `shapes` are leaves.
package final class TypeState<T: Persistable>: Sendable, PendingWriteState {
    package struct LiveIndex {
        package let definition: Index<T>
        package let database: Database
    }

    /// A declared link and its inverse index (target key → keys of the objects that link to it).
    package struct LiveLink {
        package let definition: Relationship<T>
        package let database: Database
    }

    /// An index a newer version of the type declared and this (older) schema does not: the store
    /// keeps it, and this process keeps it up to date from the records (see
    /// `WriteTransaction.register(_:)`).
    package struct KeptIndex {
        package let stored: StoredIndex
        package let database: Database
    }

    /// The indexes of `indexes`, in the same order, as slots.
    let indexSlots: [IndexSlot]
    /// Whether the type declares links with inverse indexes (`links` is not empty).
    let hasLinks: Bool
    /// The primary key bytes of the `T` the pointer points at.
    let primaryKeyBytes: KeyFunction
    /// For a type with a generated codec: its field names, the field of each stored property, and
    /// per field what changing it alone touches (see `WriteTransaction.update(_:key:_:_:)`).
    let fieldPlans: FieldPlans?

    package let schema: Schema<T>
    /// Reads the type's records (made once: a point read does not make its own).
    package let reader: ObjectReader<T>
    /// The records database, or nil when the type has never been stored (read-only view).
    package let records: Database?
    /// Indexes that exist on disk and match the schema.
    package let indexes: [LiveIndex]
    /// Links whose inverse index exists on disk and matches the schema.
    package let links: [LiveLink]
    /// Indexes of other kinds, kept by the write path through ``AttachedIndex`` (the full-text
    /// indexes), that exist on disk and match the schema.
    package let attachedIndexes: [any AttachedIndex<T>]
    /// Whether `attachedIndexes` is not empty: read per write, where even an empty loop over the
    /// array, in code unspecialized for `T`, looks up the metadata of `any AttachedIndex<T>`.
    let hasAttachedIndexes: Bool
    /// Indexes of a newer version of the type, kept from its records; `keptType` describes the type
    /// for reading them untyped (its primary key and the newer version's defaults).
    let keptIndexes: [KeptIndex]
    /// Whether `keptIndexes` is not empty, read per write without the array's metadata (see
    /// `hasAttachedIndexes`).
    let hasKeptIndexes: Bool
    let keptType: StoredType?
    /// The committed catalog entry and the one the running write transaction wrote, if any. A write
    /// settles them after its commit, outside the writer lock, while the next write may already read
    /// them: they change together, under the mutex.
    private let catalog: Locked<(entry: CatalogEntry, pending: CatalogEntry?)>
    /// The last version at which the stored catalog entry was found to match this state for reading,
    /// the entry's bytes then, and the bytes last checked for writing and adopted (another process
    /// may rewrite the entry: see `Transaction.verify(_:writing:)`).
    private let verified = Locked<(version: Int, bytes: [UInt8], written: [UInt8])>((-1, [], []))
    /// True when the registration is complete (every schema index built); read-only views of a
    /// store whose catalog lags the schema are not.
    let complete: Bool

    init(
        schema: Schema<T>, records: Database?, indexes: [LiveIndex], links: [LiveLink],
        attachedIndexes: [any AttachedIndex<T>] = [], keptIndexes: [KeptIndex] = [], entry: CatalogEntry,
        complete: Bool
    ) {
        self.attachedIndexes = attachedIndexes
        self.hasAttachedIndexes = !attachedIndexes.isEmpty
        self.keptIndexes = keptIndexes
        self.hasKeptIndexes = !keptIndexes.isEmpty
        self.keptType = keptIndexes.isEmpty ? nil : entry.storedType
        self.schema = schema
        self.reader = ObjectReader<T>()
        self.catalogKey = Array(schema.typeName.utf8)
        self.records = records
        self.indexes = indexes
        self.links = links
        self.indexSlots = indexes.map { index in
            IndexSlot(
                database: index.database, isUnique: index.definition.isUnique,
                key: KeyFunction(bytes: index.definition.pointerKeyBytes))
        }
        self.hasLinks = !links.isEmpty
        self.primaryKeyBytes = KeyFunction(bytes: schema.pointerPrimaryKeyBytes)
        self.fieldPlans = schema.recordCodec.map { codec in
            FieldPlans(
                fields: codec.fields, fieldsByKeyPath: codec.fieldsByKeyPath,
                primaryKeyField: codec.field(of: schema.primaryKeyPath),
                indexes: indexes.map { ($0.definition.fields, $0.definition.isUnique) },
                linkFields: links.map(\.definition.field) + attachedIndexes.flatMap(\.fields))
        }
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

    /// For a type without a generated codec: the top-level field names its `init(from:)` was seen to
    /// ask for (see ``WriteTransaction``'s carried fields), learned as records need it.
    private let fieldsRead = Locked<(read: Set<String>, notRead: Set<String>)>(([], []))

    /// True when `name` is a field of the type: one its generated codec writes, or one its
    /// `Decodable` conformance was seen to read.
    func knowsField(_ name: String) -> Bool {
        // Read in place: a copy of the whole entry per field would cost more than the answer.
        let removed = catalog.withLock { state in
            (state.pending.map { $0.removedFields } ?? state.entry.removedFields)?.contains(name) == true
        }
        if removed { return true }
        if let fields = schema.storage.recordFields { return fields.names.contains(name) }
        return fieldsRead.withLock { $0.read.contains(name) }
    }

    /// True when the type's `Decodable` conformance was seen not to read `name` from a record that
    /// held it (and never seen to read it).
    func ignoresField(_ name: String) -> Bool {
        fieldsRead.withLock { !$0.read.contains(name) && $0.notRead.contains(name) }
    }

    /// The top-level fields the type's `Decodable` conformance asks for while it reads `record` (app
    /// code, run outside the lock), remembered with the fields of `present` it did not ask for.
    ///
    /// The record is read as reads read it: a field it lacks that the schema has a default for reads
    /// as the default (a record of an older version, which a newer one may rewrite).
    ///
    /// - Throws: what decoding `record` throws.
    func probeFieldsRead(_ record: UnsafeRawBufferPointer, present: [String]) throws -> Set<String> {
        LockWatch.check(entering: "the Decodable conformance of \(T.self)")
        let read: Set<String>
        do {
            read = try CBORDecoder().fieldsRead(by: T.self, from: record)
        } catch let error as DecodingError {
            guard case .keyNotFound(_, let context) = error, context.codingPath.isEmpty,
                let patched = try schema.applyingDefaults(to: record)
            else { throw error }
            read = try patched.withUnsafeBytes { try CBORDecoder().fieldsRead(by: T.self, from: $0) }
        }
        fieldsRead.withLock {
            $0.read.formUnion(read)
            $0.notRead.formUnion(present.filter { !read.contains($0) })
        }
        return read
    }

    /// The type's field names: its generated codec's, or those its `Decodable` conformance asks for
    /// reading `sample` (one of its records) and any record before; with the fields a migration
    /// removed on purpose.
    ///
    /// - Throws: what decoding `sample` throws.
    package func fieldNames(readingSample sample: UnsafeRawBufferPointer) throws -> Set<String> {
        let removed = Set(latestEntry.removedFields ?? [])
        if let fields = schema.storage.recordFields { return Set(fields.names).union(removed) }
        _ = try probeFieldsRead(sample, present: [])
        return fieldsRead.withLock { $0.read }.union(removed)
    }

    func learnShape(_ shape: UInt64) { _ = shapes.withLock { $0.insert(shape) } }

    /// True when the entry was verified at `version`.
    func isVerified(at version: Int) -> Bool { verified.withLock { $0.version == version } }

    /// True when `bytes` are the bytes last verified for reading (or, with `writing`, checked for
    /// writing and adopted): the entry did not change since.
    func isVerified(bytes: UnsafeRawBufferPointer, writing: Bool) -> Bool {
        verified.withLock { same(writing ? $0.written : $0.bytes, bytes) }
    }

    /// Notes that the stored entry, `bytes`, matched at `version` (with `writing`: for writing too,
    /// and was adopted).
    func noteVerified(version: Int, bytes: UnsafeRawBufferPointer, writing: Bool) {
        verified.withLock { verified in
            if !same(verified.bytes, bytes) { verified.bytes = Array(bytes) }
            if writing, !same(verified.written, bytes) { verified.written = Array(bytes) }
            verified.version = version
        }
    }

    /// The type's key in `@catalog`.
    let catalogKey: [UInt8]

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
        if writing,
            let added = entry.indexes.first(where: { stored in
                index(named: stored.name) == nil && !keptIndexes.contains { $0.stored.name == stored.name }
            })
        {
            return "index \"\(added.name)\" was added, which this process does not maintain"
        }
        let stored = entry.links ?? []
        for link in links {
            let wanted = CatalogEntry.LinkEntry(link.definition)
            guard let found = stored.first(where: { $0.field == wanted.field }) else {
                return "link \"\(wanted.field)\" was dropped"
            }
            if !found.sameIndex(as: wanted) { return "link \"\(wanted.field)\" was redefined" }
        }
        if writing, let added = stored.first(where: { link(named: $0.field) == nil }) {
            return "link \"\(added.field)\" was added, which this process does not maintain"
        }
        let storedAttached = entry.attachedIndexes ?? []
        let attachedNames = Set(attachedIndexes.map(\.name))
        for definition in schema.attachedIndexes where attachedNames.contains(definition.name) {
            let wanted = definition.catalogEntry
            guard let found = storedAttached.first(where: { $0.name == wanted.name }) else {
                return "full-text index \"\(wanted.name)\" was dropped"
            }
            if found != wanted { return "full-text index \"\(wanted.name)\" was redefined" }
        }
        if writing, let added = storedAttached.first(where: { !attachedNames.contains($0.name) }) {
            return "full-text index \"\(added.name)\" was added, which this process does not maintain"
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

    package func index(named name: String) -> LiveIndex? { indexes.first { $0.definition.name == name } }

    /// The live link on `field`.
    package func link(named field: String) -> LiveLink? { links.first { $0.definition.field == field } }
}

/// True when `stored` holds exactly `bytes` (one `memcmp`: catalog entries are compared on every
/// write).
func same(_ stored: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard stored.count == bytes.count else { return false }
    guard let base = bytes.baseAddress, !stored.isEmpty else { return true }
    return stored.withUnsafeBytes { memcmp($0.baseAddress!, base, stored.count) == 0 }
}

/// An index as the write path uses it per object: no type parameter (not even an enclosing one), so
/// unspecialized generic code reaches it without a generic metadata lookup per access.
/// What changing one field of a generated model alone touches, per field: computed once per type
/// state, in non-generic form (generic code looks up its types' metadata per call).
struct FieldPlans: @unchecked Sendable {
    // @unchecked: immutable; `AnyKeyPath` is not marked Sendable.
    /// The type's field names.
    let fields: RecordFieldNames
    /// The field of each stored property.
    let fieldsByKeyPath: [AnyKeyPath: Int]
    /// Per field: nil when the whole object must decide (the primary key, a link, a field of a
    /// compound index or of a full-text index), else the slots of the indexes on that field alone.
    let slots: [[Int]?]

    init(
        fields: RecordFieldNames, fieldsByKeyPath: [AnyKeyPath: Int], primaryKeyField: Int?,
        indexes: [(fields: [String], unique: Bool)], linkFields: [String]
    ) {
        self.fields = fields
        self.fieldsByKeyPath = fieldsByKeyPath
        slots = fields.names.enumerated().map { field, name -> [Int]? in
            if field == primaryKeyField || linkFields.contains(name) { return nil }
            if indexes.contains(where: { $0.fields.count > 1 && $0.fields.contains(name) }) { return nil }
            return indexes.indices.filter { indexes[$0].fields == [name] }
        }
    }
}

struct IndexSlot: Sendable {
    let database: Database
    let isUnique: Bool
    /// The key bytes of the object a pointer points at (not yet through `IndexKeyLimit.stored`).
    let key: KeyFunction
}

/// A key function of the object a pointer points at, without a type parameter.
struct KeyFunction: @unchecked Sendable {  // immutable; the closure reads only the object it is given
    let bytes: (UnsafeRawPointer) throws -> [UInt8]
}
