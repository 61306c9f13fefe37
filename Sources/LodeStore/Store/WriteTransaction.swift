import Foundation
import LMDB
import LodeCodec

/// A write transaction of a ``Store``. Everything a ``Transaction`` reads, plus inserts, upserts,
/// updates and deletes; indexes change with the objects, in the same transaction. See
/// ``Store/write(_:)-86d6p``.
///
/// Every operation is all-or-nothing on its own: one that throws (a duplicate key, a unique-index
/// violation) has changed nothing, so the closure may catch the error and carry on. An error that
/// leaves the closure rolls back the whole transaction.
public final class WriteTransaction: Transaction {
    /// Who or what made this transaction's changes — a user, a device, "sync", "undo" — recorded with
    /// them in the store's history (``HistoryTransaction/author``). Nil: nothing recorded.
    public var author: String?
    /// Why this transaction's changes cannot be kept in the history (a migration rewrote records):
    /// the history then starts again after it.
    package var breaksHistory: String?
    /// Whether this transaction found that the store keeps no history (see `Store.historyOffThrough`).
    var sawNoHistory = false
    /// Whether this transaction looked whether the store keeps history, for its changes to keep
    /// their records (see `prepareHistoryCapture()`).
    var historyCaptureChecked = false
    /// The field of the last property a one-field update changed, with its type's state and key
    /// path (a key path literal is one object per site: updates in a loop find their field by
    /// identity, not by hashing and comparing the key path).
    var lastUpdatedField: (state: AnyObject, keyPath: AnyKeyPath, field: Int)?
    /// Types registered by this transaction, published when it commits.
    package var registeredTypes: [String: AnyObject] = [:]
    /// This transaction's version, set once its closure and change-log entry are done (the commit
    /// follows).
    var committingVersion: Int?
    // The state written per object is unchecked: a write transaction is not `Sendable` and is used by
    // one thread at a time (its closure, or a group commit's closures one after another), and a
    // dynamic exclusivity check per access cost more than the rest of a small insert's bookkeeping.
    /// The net object changes, written to `@changes` just before the commit.
    @exclusivity(unchecked) package var pendingChanges = PendingChanges()
    /// LMDB's write transaction (a store makes a write transaction only over one: no checked cast
    /// per write).
    package var lmdbWrite: LMDB.WriteTransaction { unsafeDowncast(lmdb, to: LMDB.WriteTransaction.self) }

    /// Changes of attached indexes gathered and not yet written, by the database they belong to (see
    /// ``DeferredIndexWrites``).
    @exclusivity(unchecked) package var deferredIndexWrites: [UInt32: any DeferredIndexWrites] = [:]

    override package func flushDeferredIndexWrites() throws {
        for writes in deferredIndexWrites.values { try writes.flush(in: self) }
    }

    /// Type states this transaction already looked up, by Swift type.
    @exclusivity(unchecked) var stateCache: [ObjectIdentifier: AnyObject] = [:]
    /// The links declared in the catalog, read once the transaction needs them and forgotten when it
    /// changes the catalog.
    var linkGraph: LinkGraph?

    override package func typeState<T: Persistable>(_ type: T.Type) throws -> TypeState<T> {
        // Keyed by the Swift type, so the cast cannot fail (a checked cast costs a metadata lookup).
        if let cached = stateCache[ObjectIdentifier(T.self)] {
            return unsafeDowncast(cached, to: TypeState<T>.self)
        }
        let state: TypeState<T>
        if let pending = registeredTypes[T.schema.typeName] as? TypeState<T> {
            state = pending
        } else if let published = store.publishedState(T.self) {
            try refuseUnknownMigrations()
            try verify(published, writing: true)
            state = published
        } else {
            state = try register(T.self)
        }
        stateCache[ObjectIdentifier(T.self)] = state
        return state
    }

    /// True once this transaction checked that no migration ran since the store was opened.
    private var migrationsChecked = false

    /// Throws when another process ran migrations this store's code may not know since it opened the
    /// store: objects written now could have the shape the migration changed.
    /// - Throws: ``LodeError/storeNewerThanCode(path:unknownMigrations:)``.
    func refuseUnknownMigrations() throws {
        guard !migrationsChecked, let known = store.knownSchemaVersion else { return }
        // The count alone (a small integer beside the names), compared as stored; the names are read
        // only when it changed.
        let unchanged =
            try lmdb.withValue(forKey: StoreLayout.schemaVersionKeyBytes, in: store.meta) { stored in
                known.bytes.map { same($0, stored) } ?? false
            } ?? (known.bytes == nil)
        if !unchanged {
            let history = try schemaHistory()
            if history.version > known.count {
                throw LodeError.storeNewerThanCode(
                    path: store.path, unknownMigrations: Array(history.migrations.dropFirst(known.count)))
            }
        }
        migrationsChecked = true
    }

    override package func openDatabase(_ name: String, kind: Database.Kind) throws -> Database {
        try lmdbWrite.database(named: name, kind: kind, create: false)
    }

    /// Record shapes noted by this transaction.
    @exclusivity(unchecked) var shapesNoted: Set<ShapeNote> = []

    /// Each type whose catalog entry this transaction rewrote — settled when it ends — with the
    /// pending entry it had before (what a savepoint that rolls back puts back).
    var pendingEntriesBefore: [ObjectIdentifier: (state: any PendingWriteState, entry: CatalogEntry?)] = [:]

    // MARK: Keys and records

    func primaryKey<T: Persistable>(of object: T) throws -> [UInt8] {
        try checkedPrimaryKey(try T.schema.primaryKeyBytes(object), of: T.self)
    }

    /// `primaryKey(of:)` through the type's state, without a generic metadata lookup per object.
    func primaryKey<T: Persistable>(of object: T, state: TypeState<T>) throws -> [UInt8] {
        try checkedPrimaryKey(
            try withUnsafePointer(to: object) { try state.primaryKeyBytes.bytes($0) }, of: T.self)
    }

    private func checkedPrimaryKey<T: Persistable>(_ key: [UInt8], of type: T.Type) throws -> [UInt8] {
        guard key.count <= IndexKeyLimit.maximum else {
            throw LodeError.keyTooLong(type: T.schema.typeName, bytes: key.count)
        }
        return key
    }

    /// The buffer generated record codecs write into, record after record (a field update makes its
    /// new record there too).
    let recordBuffer = RecordBuffer()
    /// The buffer a field update copies the stored record into.
    let fieldBuffer = RecordBuffer()

    /// The record of `object` and the hash of its top-level field names.
    package func encodeRecord<T: Persistable>(_ object: T) throws -> (bytes: [UInt8], shape: UInt64) {
        try withEncodedRecord(object) { (Array($0), $1) }
    }

    /// Hands `body` the record of `object` (in the thread's reused buffer, valid during `body`) and the
    /// hash of its top-level field names.
    func withEncodedRecord<T: Persistable, R>(
        _ object: T, _ body: (UnsafeRawBufferPointer, UInt64) throws -> R
    )
        throws -> R
    {
        // The codec's parts apart: an optional of the generic codec type would have its metadata
        // looked up per object here.
        let storage = T.schema.storage
        if let encode = storage.generatedEncode, let fields = storage.recordFields {
            var writer = RecordWriter(names: fields, into: recordBuffer)
            do {
                try encode(object, &writer)
            } catch {
                throw LodeError.recordDoesNotEncode(type: T.schema.typeName, reason: "\(error)")
            }
            let (bytes, shape) = writer.finish()
            return try body(bytes, shape)
        }
        LockWatch.check(entering: "the Encodable conformance of \(T.self)")
        // What the encoding throws (the encoder's errors, or the type's own) is the record's fault; what
        // `body` throws passes through.
        var encoded = false
        do {
            return try CBOREncoder().withEncodedRecord(object, nullFields: storage.defaultFields) {
                record, shape in
                encoded = true
                return try body(record, shape)
            }
        } catch  where !encoded {
            throw LodeError.recordDoesNotEncode(type: T.schema.typeName, reason: "\(error)")
        }
    }

    /// The stored version of an object a write replaces: where the decoded object is (a `T`) and its
    /// record. Not generic: an optional of a tuple holding `T` would have its metadata looked up per
    /// write in this unspecialized code.
    struct StoredVersion {
        /// The decoded object, a `T` (valid while the write runs).
        let object: UnsafeRawPointer
        let record: [UInt8]

        /// The object, as the `T` it is.
        func object<T>(as type: T.Type) -> T { object.assumingMemoryBound(to: T.self).pointee }
    }

    /// Writes `object` under `key`, moving its index and link entries from `old` (the stored version,
    /// if any).
    func store<T: Persistable>(
        _ object: T, key: [UInt8], replacing old: StoredVersion?, state: TypeState<T>
    ) throws {
        // Generic code runs unspecialized for the app's types: index loops, not iterators or
        // optionals of `T`, keep it from looking up generic metadata for every object.
        try withEncodedRecord(object) { record, shape in
            if let old {
                let kept = try old.record.withUnsafeBytes {
                    try unknownFields(of: $0, missingFrom: record, key: key, state: state)
                }
                if !kept.isEmpty {
                    let (merged, mergedShape) = old.record.withUnsafeBytes {
                        (
                            CarriedFields.record(record, keeping: kept, of: $0),
                            CarriedFields.shape(shape, keeping: kept, of: $0)
                        )
                    }
                    return try merged.withUnsafeBytes {
                        try store(
                            object, record: $0, shape: mergedShape, key: key, replacing: old, state: state)
                    }
                }
            }
            try store(object, record: record, shape: shape, key: key, replacing: old, state: state)
        }
    }

    /// The fields of the stored record `old` that the new record lacks and `T` does not know: a
    /// version of the app that knows them wrote them, and this rewrite keeps them (docs/FORMAT.md,
    /// "Fields of other versions").
    func unknownFields<T: Persistable>(
        of old: UnsafeRawBufferPointer, missingFrom new: UnsafeRawBufferPointer, key: [UInt8],
        state: TypeState<T>
    ) throws -> [CarriedFields.Entry] {
        let missing = CarriedFields.missing(from: new, in: old)
        guard !missing.isEmpty else { return [] }
        var unknown = missing.filter { !state.knowsField($0.name) }
        // Fields a synthesized conformance was seen to skip need no second look.
        guard !unknown.isEmpty, T.schema.storage.recordFields == nil,
            !unknown.allSatisfy({ state.ignoresField($0.name) })
        else { return unknown }
        // Which fields the type's `init(from:)` asks for, learned from this record (a type's own
        // code decides: learned once for a synthesized conformance).
        let read: Set<String>
        do {
            read = try state.probeFieldsRead(old, present: missing.map(\.name))
        } catch let error as DecodingError {
            // Named as a read names it.
            throw LodeError.recordDoesNotDecode(
                type: T.schema.typeName, key: KeyDescription.describe(key), field: error.fieldPath,
                reason: error.reason)
        } catch let error as LodeError {
            throw error
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: T.schema.typeName, key: KeyDescription.describe(key), field: "", reason: "\(error)")
        }
        unknown.removeAll { read.contains($0.name) }
        return unknown
    }

    /// `store(_:key:replacing:state:)` with the object's record encoded; `shape` is the encoder's
    /// (for a record with fields carried over, `CarriedFields.shape(_:keeping:of:)`).
    func store<T: Persistable>(
        _ object: T, record: UnsafeRawBufferPointer, shape: UInt64, key: [UInt8],
        replacing old: StoredVersion?, state: TypeState<T>
    ) throws {
        let newKeys = try indexKeys(of: object, state: state)
        let oldKeys = try old.map { try indexKeys(of: $0.object(as: T.self), state: state) }
        let slots = state.indexSlots
        let linkCount = state.hasLinks ? state.links.count : 0
        var linkChanges: [(position: Int, removed: [[UInt8]], added: [[UInt8]])] = []
        for position in 0..<linkCount {
            let definition = state.links[position].definition
            let new = definition.targetKeys(object)
            let before = old.map { definition.targetKeys($0.object(as: T.self)) } ?? []
            guard new != before else { continue }
            for target in new where target.count > IndexKeyLimit.maximum {
                throw LodeError.keyTooLong(type: definition.targetTypeName, bytes: target.count)
            }
            let removed = before.filter { !new.contains($0) }
            let added = new.filter { !before.contains($0) }
            if !removed.isEmpty || !added.isEmpty { linkChanges.append((position, removed, added)) }
        }
        // Check every unique index before changing anything, so a violation changes nothing.
        for position in slots.indices
        where slots[position].isUnique && oldKeys?[position] != newKeys[position] {
            try checkUnique(state.indexes[position], key: newKeys[position], primaryKey: key, object: object)
        }
        let keptMoves =
            !state.hasKeptIndexes
            ? [] : try keptIndexMoves(state, key: key, old: old?.record, new: record)
        do {
            // An insert refuses an existing key here, before anything else is written.
            if old == nil {
                try putNew(record, key: key, in: state.records!)
            } else {
                try lmdbWrite.put(record, forKey: key, in: state.records!)
            }
        } catch let error as LMDBError where error.code == .keyExists {
            throw LodeError.duplicateKey(type: T.schema.typeName, key: T.schema.primaryKeyDescription(object))
        }
        for position in slots.indices {
            let slot = slots[position]
            if let oldKeys {
                guard oldKeys[position] != newKeys[position] else { continue }
                try removeIndexEntry(
                    in: slot.database, unique: slot.isUnique, key: oldKeys[position], primaryKey: key)
            }
            if slot.isUnique {
                try putIndexEntry(
                    state.indexes[position], key: newKeys[position], primaryKey: key, object: object)
            } else {
                try lmdbWrite.put(key, forKey: newKeys[position], in: slot.database)
            }
        }
        try apply(keptMoves, key: key)
        for change in linkChanges {
            let link = state.links[change.position]
            try removeLinkEntries(link.database, targets: change.removed, primaryKey: key)
            try putLinkEntries(link.database, targets: change.added, primaryKey: key)
        }
        if state.hasAttachedIndexes {
            for index in state.attachedIndexes {
                try index.objectChanged(
                    key: key, old: old.map { $0.object(as: T.self) }, new: object, in: self)
            }
        }
        // The transaction's own notes first (no lock), then what the type has learned.
        let note = ShapeNote(state: ObjectIdentifier(state), shape: shape)
        if !shapesNoted.contains(note) && !state.knowsShape(shape) {
            try noteFields(of: record, key: key, state: state, known: shape)
            // Known from now on in this transaction (the type learns it only if the catalog it wrote commits).
            shapesNoted.insert(note)
        }
        // The stored record, not a re-encoding of the decoded object, is what changed.
        let changed = old.flatMap { old in old.record.withUnsafeBytes { RecordDiff.changedFields($0, record) }
        }
        if !historyCaptureChecked { try prepareHistoryCapture() }
        pendingChanges.record(
            type: state.typeName, key: key, existedBefore: old != nil, existsAfter: true, fields: changed,
            before: old?.record, after: record)
    }

    /// Per records database (by handle number), the key this transaction inserted last, while its
    /// inserts come in ascending key order (see ``putNew(_:key:in:)``); and the databases where an
    /// append was refused (the database holds larger keys), which take ordinary puts from then on.
    // Unchecked: one thread at a time (see `pendingChanges`).
    @exclusivity(unchecked) private var lastInsertedKeys: [UInt32: [UInt8]] = [:]
    @exclusivity(unchecked) private var appendRefused: Set<UInt32> = []

    /// Writes a record under a key that must be new (`LMDBError.keyExists` if not). Once a transaction
    /// inserts keys in ascending order — a load in key order — each next one is appended at the end of
    /// the database (LMDB's append path: no search, full pages); the first insert, one out of order,
    /// and every insert after LMDB refused an append (the database held larger keys) are ordinary puts
    /// that refuse an existing key. A one-object commit costs nothing more.
    private func putNew(_ record: UnsafeRawBufferPointer, key: [UInt8], in records: Database) throws {
        let number = records.number
        if let last = lastInsertedKeys[number], !appendRefused.contains(number),
            last.lexicographicallyPrecedes(key)
        {
            do {
                try lmdbWrite.put(record, forKey: key, in: records, flags: .append)
                lastInsertedKeys[number] = key
                return
            } catch let error as LMDBError where error.code == .keyExists {
                // The key does not sort after every key of the database: not a load at its end.
                appendRefused.insert(number)
            }
        }
        try lmdbWrite.put(record, forKey: key, in: records, flags: .noOverwrite)
        lastInsertedKeys[number] = key
    }

    /// Calls `body` with the stored version of the `T` under `key` (its object decoded), or nil when
    /// there is none.
    func withStoredVersion<T: Persistable, R>(
        _ type: T.Type, keyBytes key: [UInt8], state: TypeState<T>, _ body: (StoredVersion?) throws -> R
    ) throws -> R {
        guard let records = state.records, let record = try lmdb.get(key, in: records) else {
            return try body(nil)
        }
        var object = try record.withUnsafeBytes { try decode(T.self, from: $0, key: key) }
        return try withUnsafePointer(to: &object) {
            try body(StoredVersion(object: UnsafeRawPointer($0), record: record))
        }
    }

    // MARK: Writing objects

    /// Stores a new object.
    ///
    /// - Complexity: O(log *n*) B-tree puts: the record and one entry per index.
    /// - Throws: ``LodeError/duplicateKey(type:key:)`` when an object with the same primary key exists,
    ///   ``LodeError/uniqueViolation(type:index:value:)`` when a unique index already has the value.
    public func insert<T: Persistable>(_ object: T) throws {
        let state = try typeState(T.self)
        let key = try primaryKey(of: object, state: state)
        try store(object, key: key, replacing: nil, state: state)
    }

    /// Stores several new objects.
    ///
    /// - Complexity: O(*n* (1 + *i*) log *N*) for *n* objects, as ``insert(_:)`` each.
    /// - Throws: as ``insert(_:)`` for the first object that fails; the transaction keeps the ones before it
    ///   unless the error leaves the write closure.
    public func insert<S: Sequence>(contentsOf objects: S) throws where S.Element: Persistable {
        for object in objects { try insert(object) }
    }

    /// Stores `object`, replacing the one with the same primary key if there is one.
    ///
    /// - Complexity: O((1 + *i*) log *N*) for a type with *i* indexes and *N* objects, with one decode of the
    ///   stored object when there is one.
    /// - Throws: ``LodeError/uniqueViolation(type:index:value:)`` when a unique index already holds the value
    ///   for another object, ``LodeError/recordDoesNotEncode(type:reason:)``,
    ///   ``LodeError/keyTooLong(type:bytes:)`` for a primary key over 511 bytes, and
    ///   ``LodeError/storage(_:)``; nothing of the object is written then.
    public func upsert<T: Persistable>(_ object: T) throws {
        let state = try typeState(T.self)
        let key = try primaryKey(of: object, state: state)
        try withStoredVersion(T.self, keyBytes: key, state: state) { old in
            try store(object, key: key, replacing: old, state: state)
        }
    }

    /// Changes the object with primary key `key` in place and returns the new version.
    ///
    /// - Complexity: O((1 + *i*) log *N*) for a type with *i* indexes and *N* objects: a read and decode,
    ///   `body`, an encode, and puts for the record and the indexes whose value changed.
    /// - Throws: ``LodeError/objectNotFound(type:key:)`` when there is none,
    ///   ``LodeError/primaryKeyChanged(type:from:to:)`` when `body` changes the primary key.
    @discardableResult
    public func update<T: Persistable, Key: Encodable>(
        _ type: T.Type, key: Key, _ body: (inout T) throws -> Void
    ) throws -> T {
        let state = try typeState(T.self)
        let keyBytes = try KeyEncoder().encode(key)
        return try withStoredVersion(T.self, keyBytes: keyBytes, state: state) { old in
            guard let old else { throw LodeError.objectNotFound(type: T.schema.typeName, key: "\(key)") }
            var updated = old.object(as: T.self)
            try body(&updated)
            let newKey = try primaryKey(of: updated, state: state)
            guard newKey == keyBytes else {
                throw LodeError.primaryKeyChanged(
                    type: T.schema.typeName, from: "\(key)", to: T.schema.primaryKeyDescription(updated))
            }
            try store(updated, key: keyBytes, replacing: old, state: state)
            return updated
        }
    }

    /// Deletes the object with primary key `key`; returns false when there was none.
    ///
    /// - Complexity: O((1 + *i*) log *N*) for a type with *i* indexes and *N* objects, with one decode of the
    ///   stored record (to find its index entries).
    /// - Throws: `EncodingError` when `key` does not encode,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the stored record does not decode
    ///   (its index entries cannot be found), and ``LodeError/storage(_:)``.
    @discardableResult
    public func delete<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key) throws -> Bool {
        try delete(T.self, keyBytes: try KeyEncoder().encode(key))
    }

    /// Deletes the stored version of `object` (found by its primary key).
    ///
    /// - Complexity: as ``delete(_:key:)``.
    /// - Throws: as ``delete(_:key:)``.
    @discardableResult
    public func delete<T: Persistable>(_ object: T) throws -> Bool {
        try delete(T.self, keyBytes: try T.schema.primaryKeyBytes(object))
    }

    /// Deletes every `T`; returns how many there were.
    ///
    /// - Complexity: O(*P*) for the *P* pages of the type's records and indexes, which LMDB frees; no
    ///   record is read, and the change log notes one clear rather than a deletion per object.
    /// - Throws: ``LodeError/storage(_:)`` when LMDB fails.
    @discardableResult
    public func deleteAll<T: Persistable>(_ type: T.Type) throws -> Int {
        let state = try typeState(T.self)
        let graph = try inboundLinks()
        if !graph.links(into: state.typeName).isEmpty {
            // The rules of links into the type first: denied, nothing changes; otherwise the objects
            // linking in are changed or deleted one by one, and the type is emptied wholesale.
            let plan = try planDeletion(of: [], wholeType: state.typeName, graph: graph)
            try apply(plan, skipping: { $0.type == state.typeName })
        }
        let count = try lmdb.count(in: state.records!)
        try lmdbWrite.empty(state.records!)
        for index in state.indexes { try lmdbWrite.empty(index.database) }
        for index in state.keptIndexes { try lmdbWrite.empty(index.database) }
        for link in state.links { try lmdbWrite.empty(link.database) }
        for index in state.attachedIndexes { try index.typeEmptied(in: self) }
        pendingChanges.recordClear(type: state.typeName)
        return count
    }

    package func delete<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8]) throws -> Bool {
        let state = try typeState(T.self)
        guard key.count <= IndexKeyLimit.maximum, let records = state.records,
            let record = try lmdb.get(key, in: records)
        else { return false }
        // The delete rules of links into the type, planned (and a denial thrown) before any change.
        let root = ObjectRef(type: state.typeName, key: key)
        var plan: DeletionPlan?
        let graph = try inboundLinks()
        if !graph.links(into: state.typeName).isEmpty {
            let planned = try planDeletion(of: [root], graph: graph)
            if planned.deletions.count > 1 || !planned.nullifications.isEmpty { plan = planned }
        }
        try removeObject(T.self, key: key, record: record, state: state)
        if let plan { try apply(plan, skipping: { $0 == root }) }
        return true
    }

    /// Removes the stored `T` under `key` (whose record is `record`) with its index, link and attached
    /// index entries — without the delete rules of links into it, which the caller applies.
    func removeObject<T: Persistable>(_ type: T.Type, key: [UInt8], record: [UInt8], state: TypeState<T>)
        throws
    {
        guard let records = state.records else { return }
        let old: T?
        do {
            old = try record.withUnsafeBytes { try decode(T.self, from: $0, key: key) }
        } catch LodeError.recordDoesNotDecode {
            old = nil
        }
        for index in state.indexes {
            if let old {
                try removeIndexEntry(index, key: try indexKey(index, of: old), primaryKey: key)
            } else {
                // The record no longer decodes: find its entries by walking the index.
                try removeEntries(pointingAt: key, in: index.database)
            }
        }
        for link in state.links {
            if let old {
                try removeLinkEntries(
                    link.database, targets: link.definition.targetKeys(old), primaryKey: key)
            } else {
                try removeEntries(pointingAt: key, in: link.database)
            }
        }
        if state.hasAttachedIndexes {
            for index in state.attachedIndexes {
                if let old {
                    try index.objectChanged(key: key, old: old, new: nil, in: self)
                } else {
                    try index.undecodableObjectDeleted(key: key, in: self)
                }
            }
        }
        if state.hasKeptIndexes {
            do {
                try apply(try keptIndexMoves(state, key: key, old: record, new: nil), key: key)
            } catch LodeError.recordDoesNotDecode {
                for index in state.keptIndexes { try removeEntries(pointingAt: key, in: index.database) }
            }
        }
        try lmdbWrite.delete(key, in: records)
        if !historyCaptureChecked { try prepareHistoryCapture() }
        pendingChanges.record(
            type: state.typeName, key: key, existedBefore: true, existsAfter: false, before: record)
    }
}
