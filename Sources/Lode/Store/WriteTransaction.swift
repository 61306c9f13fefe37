import Foundation
import LMDB

/// A write transaction of a ``Store``. Everything a ``Transaction`` reads, plus inserts, upserts,
/// updates and deletes; indexes change with the objects, in the same transaction. See
/// ``Store/write(_:)``.
///
/// Every operation is all-or-nothing on its own: one that throws (a duplicate key, a unique-index
/// violation) has changed nothing, so the closure may catch the error and carry on. An error that
/// leaves the closure rolls back the whole transaction.
public final class WriteTransaction: Transaction {
    /// Types registered by this transaction, published when it commits.
    var registeredTypes: [String: AnyObject] = [:]
    /// This transaction's version, set once its closure and change-log entry are done (the commit
    /// follows).
    var committingVersion: Int?
    /// The net object changes, written to `@changes` just before the commit.
    var pendingChanges = PendingChanges()
    var lmdbWrite: LMDB.WriteTransaction { lmdb as! LMDB.WriteTransaction }

    /// Type states this transaction already looked up, by Swift type.
    private var stateCache: [ObjectIdentifier: AnyObject] = [:]

    override func typeState<T: Persistable>(_ type: T.Type) throws -> TypeState<T> {
        // Keyed by the Swift type, so the cast cannot fail (a checked cast costs a metadata lookup).
        if let cached = stateCache[ObjectIdentifier(T.self)] {
            return unsafeDowncast(cached, to: TypeState<T>.self)
        }
        let state: TypeState<T>
        if let pending = registeredTypes[T.schema.typeName] as? TypeState<T> {
            state = pending
        } else if let published = store.publishedState(T.self) {
            state = published
        } else {
            state = try register(T.self)
        }
        stateCache[ObjectIdentifier(T.self)] = state
        return state
    }

    override func openDatabase(_ name: String, kind: Database.Kind) throws -> Database {
        try lmdbWrite.database(named: name, kind: kind, create: false)
    }

    func registerType(_ type: any Persistable.Type) throws {
        func open<T: Persistable>(_ type: T.Type) throws { _ = try typeState(T.self) }
        try open(type)
    }

    /// Creates or reconciles the type's databases and catalog entry: builds indexes the schema added
    /// (or changed), drops the ones it removed.
    @discardableResult
    func register<T: Persistable>(_ type: T.Type) throws -> TypeState<T> {
        let schema = T.schema
        let name = schema.typeName
        let existing = try catalogEntry(named: name)
        if let existing, existing.primaryKey != schema.primaryKeyField {
            throw LodeError.schemaMismatch(
                type: name,
                reason:
                    "the store's primary key is \"\(existing.primaryKey)\", the type's is \"\(schema.primaryKeyField)\""
            )
        }
        let records = try lmdbWrite.database(named: name, kind: .plain)
        var entry = existing ?? CatalogEntry(schema)
        var live: [TypeState<T>.LiveIndex] = []
        var toBuild: [TypeState<T>.LiveIndex] = []
        for index in schema.indexes {
            let databaseName = CatalogEntry.databaseName(type: name, index: index.name)
            let wanted = CatalogEntry.IndexEntry(
                name: index.name, fields: index.fields, unique: index.isUnique)
            let stored = existing?.indexes.first { $0.name == index.name }
            if let stored, stored != wanted {
                try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
            }
            let database = try lmdbWrite.database(
                named: databaseName, kind: index.isUnique ? .plain : .duplicates)
            let liveIndex = TypeState<T>.LiveIndex(definition: index, database: database)
            live.append(liveIndex)
            if stored != wanted { toBuild.append(liveIndex) }
        }
        for stored in existing?.indexes ?? []
        where !schema.indexes.contains(where: { $0.name == stored.name }) {
            let databaseName = CatalogEntry.databaseName(type: name, index: stored.name)
            try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
        }
        if !toBuild.isEmpty {
            // Build from the records; a unique index that the data violates fails the registration.
            for entry in try lmdb.entries(in: records) {
                let object = try entry.value.withUnsafeBytes { try decode(T.self, from: $0, key: entry.key) }
                for index in toBuild {
                    try putIndexEntry(
                        index, key: try indexKey(index, of: object), primaryKey: entry.key, object: object)
                }
            }
        }
        entry.indexes = schema.indexes.map { .init(name: $0.name, fields: $0.fields, unique: $0.isUnique) }
        entry.version = schema.version
        if entry != existing { try writeCatalog(entry) }
        let state = TypeState(schema: schema, records: records, indexes: live, entry: entry, complete: true)
        registeredTypes[name] = state
        return state
    }

    func writeCatalog(_ entry: CatalogEntry) throws {
        try lmdbWrite.put(try CBOREncoder().encode(entry), forKey: Array(entry.name.utf8), in: store.catalog)
    }

    // MARK: Keys and records

    func primaryKey<T: Persistable>(of object: T) throws -> [UInt8] {
        let key = try T.schema.primaryKeyBytes(object)
        guard key.count <= IndexKeyLimit.maximum else {
            throw LodeError.keyTooLong(type: T.schema.typeName, bytes: key.count)
        }
        return key
    }

    /// The record of `object` and the hash of its top-level field names.
    func encodeRecord<T: Persistable>(_ object: T) throws -> (bytes: [UInt8], shape: UInt64) {
        do {
            return try CBOREncoder().encodeRecord(object)
        } catch {
            throw LodeError.recordDoesNotEncode(type: T.schema.typeName, reason: "\(error)")
        }
    }

    func indexKey<T>(_ index: TypeState<T>.LiveIndex, of object: T) throws -> [UInt8] {
        IndexKeyLimit.stored(try index.definition.keyBytes(object))
    }

    /// The stored index keys of `object`, one per index of its type, in index order.
    func indexKeys<T>(of object: T, state: TypeState<T>) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        keys.reserveCapacity(state.indexes.count)
        for position in 0..<state.indexes.count {
            keys.append(try indexKey(state.indexes[position], of: object))
        }
        return keys
    }

    private func putIndexEntry<T>(
        _ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8], object: T
    ) throws {
        if index.definition.isUnique {
            do {
                try lmdbWrite.put(primaryKey, forKey: key, in: index.database, flags: .noOverwrite)
            } catch let error as LMDBError where error.code == .keyExists {
                throw LodeError.uniqueViolation(
                    type: T.schema.typeName, index: index.definition.name,
                    value: index.definition.valueDescription(object))
            }
        } else {
            try lmdbWrite.put(primaryKey, forKey: key, in: index.database)
        }
    }

    /// Throws if a unique index already maps `key` to another object.
    private func checkUnique<T>(_ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8], object: T)
        throws
    {
        guard index.definition.isUnique, let owner = try lmdb.get(key, in: index.database),
            owner != primaryKey
        else {
            return
        }
        throw LodeError.uniqueViolation(
            type: T.schema.typeName, index: index.definition.name,
            value: index.definition.valueDescription(object))
    }

    private func removeIndexEntry<T>(_ index: TypeState<T>.LiveIndex, key: [UInt8], primaryKey: [UInt8])
        throws
    {
        if index.definition.isUnique {
            if try lmdb.get(key, in: index.database) == primaryKey {
                try lmdbWrite.delete(key, in: index.database)
            }
        } else {
            try lmdbWrite.delete(key, value: primaryKey, in: index.database)
        }
    }

    /// Writes `object` under `key`, moving its index entries from `old` (the stored version, if any).
    private func store<T: Persistable>(
        _ object: T, key: [UInt8], replacing old: (keys: [[UInt8]], record: [UInt8])?, state: TypeState<T>
    ) throws {
        // Generic code runs unspecialized for the app's types: index loops, not iterators or
        // optionals of `T`, keep it from looking up generic metadata for every object.
        let (record, shape) = try encodeRecord(object)
        let newKeys = try indexKeys(of: object, state: state)
        let oldKeys = old?.keys
        let indexCount = state.indexes.count
        // Check every unique index before changing anything, so a violation changes nothing.
        for position in 0..<indexCount where oldKeys?[position] != newKeys[position] {
            try checkUnique(state.indexes[position], key: newKeys[position], primaryKey: key, object: object)
        }
        do {
            // An insert refuses an existing key here, before anything else is written.
            try lmdbWrite.put(record, forKey: key, in: state.records!, flags: old == nil ? .noOverwrite : [])
        } catch let error as LMDBError where error.code == .keyExists {
            throw LodeError.duplicateKey(type: T.schema.typeName, key: T.schema.primaryKeyDescription(object))
        }
        for position in 0..<indexCount {
            let index = state.indexes[position]
            if let oldKeys {
                guard oldKeys[position] != newKeys[position] else { continue }
                try removeIndexEntry(index, key: oldKeys[position], primaryKey: key)
            }
            try putIndexEntry(index, key: newKeys[position], primaryKey: key, object: object)
        }
        // The transaction's own notes first (no lock), then what the type has learned.
        let note = ShapeNote(state: ObjectIdentifier(state), shape: shape)
        if !shapesNoted.contains(note) && !state.knowsShape(shape) {
            try noteFields(of: record, state: state)
            // Known from now on in this transaction (the type learns it only if the catalog it wrote commits).
            shapesNoted.insert(note)
        }
        // The stored record, not a re-encoding of the decoded object, is what changed.
        let changed = old.flatMap { changedFields($0.record, record) }
        pendingChanges.record(
            type: state.typeName, key: key, existedBefore: old != nil, existsAfter: true, fields: changed)
    }

    /// The stored `T` under `key` with its record bytes, or nil.
    private func storedObject<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8], state: TypeState<T>)
        throws
        -> (object: T, record: [UInt8])?
    {
        guard let records = state.records, let record = try lmdb.get(key, in: records) else { return nil }
        let object = try record.withUnsafeBytes { try decode(T.self, from: $0, key: key) }
        return (object, record)
    }

    /// The top-level fields whose encoded values differ between two records (nil if either is not a map).
    private func changedFields(_ old: [UInt8], _ new: [UInt8]) -> Set<String>? {
        if let changed = changedFieldsInStep(old, new) { return changed }
        func fields(_ record: [UInt8]) -> [String: ArraySlice<UInt8>]? {
            record.withUnsafeBytes { bytes -> [String: ArraySlice<UInt8>]? in
                // Records written by the encoder are definite-length maps keyed by text.
                var reader = CBORReader(bytes)
                guard let head = try? reader.readHead(), head.major == 5, head.info != 31 else { return nil }
                var result: [String: ArraySlice<UInt8>] = [:]
                for _ in 0..<head.argument {
                    guard let name = try? reader.readStringBytes(major: 3) else { return nil }
                    let start = reader.offset
                    guard (try? reader.skipItem()) != nil else { return nil }
                    result[String(decoding: name, as: UTF8.self)] = record[start..<reader.offset]
                }
                return result
            }
        }
        guard let before = fields(old), let after = fields(new) else { return nil }
        var changed = Set<String>()
        for (name, value) in after where before[name] != value { changed.insert(name) }
        for name in before.keys where after[name] == nil { changed.insert(name) }
        return changed
    }

    /// The common case of ``changedFields(_:_:)`` without a dictionary: both records hold the same
    /// field names in the same order (one encoder wrote both), so entries are compared side by side
    /// and only the names of changed fields become strings. Nil when the names differ.
    private func changedFieldsInStep(_ old: [UInt8], _ new: [UInt8]) -> Set<String>? {
        old.withUnsafeBytes { oldBytes in
            new.withUnsafeBytes { newBytes -> Set<String>? in
                var before = CBORReader(oldBytes)
                var after = CBORReader(newBytes)
                guard let oldHead = try? before.readHead(), let newHead = try? after.readHead(),
                    oldHead.major == 5, newHead.major == 5, oldHead.info != 31, newHead.info != 31,
                    oldHead.argument == newHead.argument
                else { return nil }
                var changed = Set<String>()
                for _ in 0..<oldHead.argument {
                    guard let oldName = try? before.readStringBytes(major: 3),
                        let newName = try? after.readStringBytes(major: 3), oldName.elementsEqual(newName)
                    else { return nil }
                    let oldStart = before.offset
                    let newStart = after.offset
                    guard (try? before.skipItem()) != nil, (try? after.skipItem()) != nil else { return nil }
                    let oldValue = UnsafeRawBufferPointer(rebasing: oldBytes[oldStart..<before.offset])
                    let newValue = UnsafeRawBufferPointer(rebasing: newBytes[newStart..<after.offset])
                    if !oldValue.elementsEqual(newValue) {
                        changed.insert(String(decoding: newName, as: UTF8.self))
                    }
                }
                return changed
            }
        }
    }

    /// Writes this transaction's entry to the change log (called once, right before the commit).
    func writeChangeLog() throws {
        guard !pendingChanges.isEmpty, let log = store.changeLog,
            let entry = pendingChanges.encodedEntry(bulkThreshold: store.configuration.changeLogBulkThreshold)
        else { return }
        try lmdbWrite.put(entry, forKey: ChangeLogEntry.key(for: lmdb.id), in: log)
        pendingChanges = PendingChanges()
        if lmdb.id % ChangeLogPruning.interval == 0 { try pruneChangeLog(log) }
    }

    /// Deletes log entries older than the retention and older than every live result of this process,
    /// and records in `@meta` the first version the log still covers.
    func pruneChangeLog(_ log: Database) throws {
        let cutoff = Date().addingTimeInterval(
            -Double(store.configuration.changeLogRetention.components.seconds))
        let outcome = try ChangeLogPruning.prune(
            lmdbWrite, log: log, meta: store.meta, before: store.pins.oldest.map { $0 + 1 } ?? lmdb.id,
            writtenBefore: cutoff)
        store.changeLogStatistics.record(outcome)
    }

    /// Adds field names never seen before to the catalog entry.
    private func noteFields<T>(of record: [UInt8], state: TypeState<T>) throws {
        // Hash the sequence of top-level field names; only an unknown shape needs the names.
        let (shape, names) = try record.withUnsafeBytes { bytes -> (UInt64, [String]?) in
            var reader = CBORReader(bytes)
            let head = try reader.readHead()
            guard head.major == 5, head.info != 31 else { return (0, nil) }
            var hash = FieldShape.basis
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(Int(head.argument))
            for _ in 0..<Int(head.argument) {
                guard let raw = try reader.readStringBytes(major: 3) else { return (0, nil) }
                let start = raw.baseAddress! - bytes.baseAddress!
                ranges.append(start..<(start + raw.count))
                hash = FieldShape.adding(raw, to: hash)
                try reader.skipItem()
            }
            guard !state.knowsShape(hash) else { return (hash, nil) }
            return (
                hash,
                ranges.map { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
            )
        }
        guard let names else { return }
        let current = state.pendingEntry ?? state.currentEntry
        let missing = Set(names).subtracting(current.fields)
        if missing.isEmpty {
            if state.pendingEntry == nil { state.learnShape(shape) }
            return
        }
        var updated = current
        updated.fields = Array(Set(current.fields).union(missing)).sorted()
        try writeCatalog(updated)
        state.pendingEntry = updated
        pendingEntryStates.append(state)
    }

    /// A record shape this transaction has already added to a type's catalog entry.
    struct ShapeNote: Hashable {
        var state: ObjectIdentifier
        var shape: UInt64
    }

    /// Record shapes noted by this transaction.
    var shapesNoted: Set<ShapeNote> = []

    /// Types whose catalog entry this transaction rewrote, settled when it ends.
    var pendingEntryStates: [any PendingWriteState] = []

    func finishPending(committed: Bool) {
        for state in pendingEntryStates { state.finishWrite(committed: committed) }
        pendingEntryStates.removeAll()
    }

    // MARK: Writing objects

    /// Stores a new object.
    /// - Throws: ``LodeError/duplicateKey(type:key:)`` when an object with the same primary key exists,
    ///   ``LodeError/uniqueViolation(type:index:value:)`` when a unique index already has the value.
    public func insert<T: Persistable>(_ object: T) throws {
        let state = try typeState(T.self)
        let key = try primaryKey(of: object)
        try store(object, key: key, replacing: nil, state: state)
    }

    /// Stores several new objects.
    public func insert<S: Sequence>(contentsOf objects: S) throws where S.Element: Persistable {
        for object in objects { try insert(object) }
    }

    /// Stores `object`, replacing the one with the same primary key if there is one.
    public func upsert<T: Persistable>(_ object: T) throws {
        let state = try typeState(T.self)
        let key = try primaryKey(of: object)
        let old = try storedObject(T.self, keyBytes: key, state: state)
        try store(
            object, key: key,
            replacing: try old.map { (try indexKeys(of: $0.object, state: state), $0.record) },
            state: state)
    }

    /// Changes the object with primary key `key` in place and returns the new version.
    /// - Throws: ``LodeError/objectNotFound(type:key:)`` when there is none,
    ///   ``LodeError/primaryKeyChanged(type:from:to:)`` when `body` changes the primary key.
    @discardableResult
    public func update<T: Persistable, Key: Encodable>(
        _ type: T.Type, key: Key, _ body: (inout T) throws -> Void
    ) throws -> T {
        let state = try typeState(T.self)
        let keyBytes = try KeyEncoder().encode(key)
        guard let old = try storedObject(T.self, keyBytes: keyBytes, state: state) else {
            throw LodeError.objectNotFound(type: T.schema.typeName, key: "\(key)")
        }
        var updated = old.object
        try body(&updated)
        let newKey = try primaryKey(of: updated)
        guard newKey == keyBytes else {
            throw LodeError.primaryKeyChanged(
                type: T.schema.typeName, from: "\(key)", to: T.schema.primaryKeyDescription(updated))
        }
        try store(
            updated, key: keyBytes, replacing: (try indexKeys(of: old.object, state: state), old.record),
            state: state)
        return updated
    }

    /// Deletes the object with primary key `key`; returns false when there was none.
    @discardableResult
    public func delete<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key) throws -> Bool {
        try delete(T.self, keyBytes: try KeyEncoder().encode(key))
    }

    /// Deletes the stored version of `object` (found by its primary key).
    @discardableResult
    public func delete<T: Persistable>(_ object: T) throws -> Bool {
        try delete(T.self, keyBytes: try T.schema.primaryKeyBytes(object))
    }

    /// Deletes every object of `results` (evaluated in this transaction); returns how many.
    @discardableResult
    public func delete<T: Persistable>(_ results: Results<T>) throws -> Int {
        let keys = try results.bound(to: self).evaluation().keys
        var deleted = 0
        for index in 0..<keys.count where try delete(T.self, keyBytes: Array(keys[index])) { deleted += 1 }
        return deleted
    }

    /// Deletes every `T`; returns how many there were.
    @discardableResult
    public func deleteAll<T: Persistable>(_ type: T.Type) throws -> Int {
        let state = try typeState(T.self)
        let count = try lmdb.count(in: state.records!)
        try lmdbWrite.empty(state.records!)
        for index in state.indexes { try lmdbWrite.empty(index.database) }
        pendingChanges.recordClear(type: state.typeName)
        return count
    }

    func delete<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8]) throws -> Bool {
        let state = try typeState(T.self)
        guard key.count <= IndexKeyLimit.maximum, let records = state.records,
            let record = try lmdb.get(key, in: records)
        else { return false }
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
                try lmdbWrite.withCursor(in: index.database) { cursor in
                    var entry = try cursor.first()
                    while let current = entry {
                        if current.value == key {
                            entry = try (cursor as! WriteCursor).deleteCurrent()
                        } else {
                            entry = try cursor.next()
                        }
                    }
                }
            }
        }
        try lmdbWrite.delete(key, in: records)
        pendingChanges.record(type: state.typeName, key: key, existedBefore: true, existsAfter: false)
        return true
    }
}

extension TypeState {
    /// The committed catalog entry.
    var currentEntry: CatalogEntry { entry }
}
