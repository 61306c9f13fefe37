import Foundation
import LMDB
import LodeCodec

/// LMDB's transaction, as the layers above the store name it (their own `Transaction` is Lode's).
package typealias LMDBTransaction = LMDB.Transaction

/// A read transaction of a ``Store``: every read inside it sees one committed version. See
/// ``Store/read(_:)-2vg9z``.
public class Transaction {
    /// The store.
    public let store: Store
    package let lmdb: LMDB.Transaction

    package init(store: Store, lmdb: LMDB.Transaction) {
        self.store = store
        self.lmdb = lmdb
    }

    /// The version (LMDB transaction id) this transaction reads.
    public var version: Int { lmdb.id }

    /// Writes the changes of attached indexes a write transaction gathered (nothing in a read
    /// transaction): called before anything reads an attached index (a search reads a full-text one).
    package func flushDeferredIndexWrites() throws {}

    // MARK: Types

    /// The state of `T` as this transaction sees it: registered, or read from the catalog.
    package func typeState<T: Persistable>(_ type: T.Type) throws -> TypeState<T> {
        // Keyed by the Swift type, so the downcast cannot fail; a read sees one version, so what was
        // verified once holds for the whole transaction. The type read last first: no hashing.
        if let lastRead, lastRead.type == ObjectIdentifier(T.self) {
            return unsafeDowncast(lastRead.state, to: TypeState<T>.self)
        }
        if let cached = readStates[ObjectIdentifier(T.self)] {
            lastRead = (ObjectIdentifier(T.self), cached)
            return unsafeDowncast(cached, to: TypeState<T>.self)
        }
        let state: TypeState<T>
        if let published = store.publishedState(T.self) {
            try verify(published, writing: false)
            state = published
        } else {
            state = try catalogState(T.self)
        }
        readStates[ObjectIdentifier(T.self)] = state
        lastRead = (ObjectIdentifier(T.self), state)
        return state
    }

    /// The type state ``typeState(_:)`` returned last, and its type.
    @exclusivity(unchecked) private var lastRead: (type: ObjectIdentifier, state: AnyObject)?

    /// The type states this read transaction looked up, by Swift type (a write transaction keeps its
    /// own: what it registers and changes).
    // Unchecked: a transaction is not `Sendable`, so one thread uses it at a time (a dynamic
    // exclusivity check per read otherwise).
    @exclusivity(unchecked) private var readStates: [ObjectIdentifier: AnyObject] = [:]
    /// The readers ``decode(_:from:key:)`` used, by type: made once per transaction, not per record.
    @exclusivity(unchecked) private var readers: [ObjectIdentifier: AnyObject] = [:]

    /// A reader of `T`'s records, made once in this transaction.
    private func reader<T: Persistable>(_ type: T.Type) -> ObjectReader<T> {
        if let made = readers[ObjectIdentifier(T.self)] {
            return unsafeDowncast(made, to: ObjectReader<T>.self)
        }
        let reader = ObjectReader<T>()
        readers[ObjectIdentifier(T.self)] = reader
        return reader
    }

    /// Checks that the catalog entry of a type this process registered still says what the state
    /// relies on at this transaction's version: another process — another version of the app — may
    /// have dropped an index, deleted the type or changed its primary key since, and a handle of a
    /// database that no longer exists must never be used (LMDB would read nothing, or crash in a
    /// write). Once per version for reads; for writes in every transaction, and then what the other
    /// process learned (fields, shapes) becomes the entry this one builds on. An entry whose bytes are
    /// the ones checked last is not decoded again.
    /// - Throws: ``LodeError/typeChangedByAnotherProcess(type:change:)``.
    func verify<T: Persistable>(_ state: TypeState<T>, writing: Bool) throws {
        let version = lmdb.id
        if !writing, state.isVerified(at: version) { return }
        let name = state.typeName
        let found = try lmdb.withValue(forKey: state.catalogKey, in: store.catalog) { bytes -> Bool in
            if state.isVerified(bytes: bytes, writing: writing) {
                if !writing { state.noteVerified(version: version, bytes: bytes, writing: false) }
                return true
            }
            let stored = try CatalogEntry.decoded(from: bytes, named: name)
            if let change = state.difference(from: stored, writing: writing) {
                throw LodeError.typeChangedByAnotherProcess(type: name, change: change)
            }
            if writing { state.adopt(stored) }
            state.noteVerified(version: version, bytes: bytes, writing: writing)
            return true
        }
        if found == nil {
            throw LodeError.typeChangedByAnotherProcess(type: name, change: "the type was deleted or renamed")
        }
    }

    package func catalogEntry(named name: String) throws -> CatalogEntry? {
        guard let bytes = try lmdb.get(Array(name.utf8), in: store.catalog) else { return nil }
        return try CatalogEntry.decoded(from: bytes, named: name)
    }

    /// A view of `T` built from the catalog, without writing: only indexes that exist on disk and
    /// match the schema are used.
    func catalogState<T: Persistable>(_ type: T.Type) throws -> TypeState<T> {
        let schema = T.schema
        guard let entry = try catalogEntry(named: schema.typeName) else {
            return TypeState(
                schema: schema, records: nil, indexes: [], links: [], entry: CatalogEntry(schema),
                complete: false)
        }
        guard entry.primaryKey == schema.primaryKeyField else {
            throw LodeError.schemaMismatch(
                type: schema.typeName,
                reason:
                    "the store's primary key is \"\(entry.primaryKey)\", the type's is \"\(schema.primaryKeyField)\""
            )
        }
        let records = try openDatabase(schema.typeName, kind: .plain)
        var indexes: [TypeState<T>.LiveIndex] = []
        for index in schema.indexes {
            let wanted = CatalogEntry.IndexEntry(
                name: index.name, fields: index.fields, unique: index.isUnique)
            guard entry.indexes.contains(wanted) else { continue }
            let database = try openDatabase(
                CatalogEntry.databaseName(type: schema.typeName, index: index.name),
                kind: index.isUnique ? .plain : .duplicates)
            indexes.append(.init(definition: index, database: database))
        }
        var links: [TypeState<T>.LiveLink] = []
        for link in schema.links {
            let wanted = CatalogEntry.LinkEntry(link)
            guard (entry.links ?? []).contains(where: { $0.sameIndex(as: wanted) }) else { continue }
            let database = try openDatabase(
                CatalogEntry.linkDatabaseName(type: schema.typeName, field: link.field), kind: .duplicates)
            links.append(.init(definition: link, database: database))
        }
        var attached: [any AttachedIndex<T>] = []
        for definition in schema.attachedIndexDefinitions {
            guard (entry.attachedIndexes ?? []).contains(definition.catalogEntry) else { continue }
            attached.append(try definition.open(type: schema.typeName, in: self))
        }
        let complete =
            indexes.count == schema.indexes.count && entry.indexes.count == schema.indexes.count
            && links.count == schema.links.count && (entry.links ?? []).count == schema.links.count
            && attached.count == schema.attachedIndexes.count
            && (entry.attachedIndexes ?? []).count == schema.attachedIndexes.count
        let state = TypeState(
            schema: schema, records: records, indexes: indexes, links: links, attachedIndexes: attached,
            entry: entry, complete: complete)
        if complete { store.publish([schema.typeName: state]) }
        return state
    }

    /// The database `name`, which exists.
    package func openDatabase(_ name: String, kind: Database.Kind) throws -> Database {
        try lmdb.environment.database(named: name, kind: kind, create: false)
    }

    // MARK: Records

    /// The `T` a record stored under `key` holds.
    ///
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the record does not
    ///   decode as a `T` — a map with a field twice included — or when its primary-key field does not
    ///   give the key it is stored under (a damaged or hand-edited store: one result would otherwise
    ///   hold two objects with the same primary key).
    package func decode<T: Persistable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, key: some Collection<UInt8>
    ) throws -> T {
        let reader = reader(T.self)
        return try key.withContiguousStorageIfAvailable {
            try reader.read(bytes, key: UnsafeRawBufferPointer($0))
        }
            ?? Array(key).withUnsafeBytes { try reader.read(bytes, key: $0) }
    }

    /// The stored `T` under encoded key `key`.
    package func object<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8], state: TypeState<T>) throws
        -> T?
    {
        guard let records = state.records,
            let bytes = try key.withUnsafeBytes({ try lmdb.transientValue(forKey: $0, in: records) })
        else { return nil }
        // Decoded at once (an encrypted record lies in memory the next read reuses). No closure returns
        // an optional object: unspecialized code would look up the optional's metadata per read.
        let reader = state.reader
        return try key.withUnsafeBytes { try reader.read(bytes, key: $0) }
    }

    /// The `T` whose primary key is `key`, or nil.
    ///
    /// - Complexity: one O(log *n*) B-tree lookup and one decode.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes, and `EncodingError` when `key` does not encode.
    public func object<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key) throws -> T? {
        if Key.self == Int.self {  // The most common key, encoded on the stack: no array per read.
            let (state, value) = (try typeState(T.self), Int64(unsafeBitCast(key, to: Int.self)))
            guard let records = state.records,
                let bytes = try KeyEncoder.withIntegerKey(
                    value, { try lmdb.transientValue(forKey: $0, in: records) })
            else { return nil }
            return try KeyEncoder.withIntegerKey(value) { try state.reader.read(bytes, key: $0) }
        }
        let bytes = try KeyEncoder().encode(key)
        guard bytes.count <= IndexKeyLimit.maximum else { return nil }
        return try object(T.self, keyBytes: bytes, state: try typeState(T.self))
    }

    /// The `T` an ``ObjectID`` names, or nil when it was deleted.
    ///
    /// - Complexity: O(log *N*) among the *N* objects of the type, and one decode.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes.
    public func object<T: Persistable>(_ type: T.Type, for id: ObjectID) throws -> T? {
        guard id.typeName == T.schema.typeName else {
            throw LodeError.typeNotFound("\(id.typeName) (asked for as \(T.schema.typeName))")
        }
        return try object(T.self, keyBytes: id.primaryKey, state: try typeState(T.self))
    }

    /// The object an ``ObjectID`` names, as whatever registered Swift type has its type name, or nil
    /// when it was deleted.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` when no Swift type with that name was used with this
    ///   store in this process.
    public func object(for id: ObjectID) throws -> (any Persistable)? {
        guard let type = store.swiftType(named: id.typeName) else {
            throw LodeError.typeNotFound(id.typeName)
        }
        func open<T: Persistable>(_ type: T.Type) throws -> (any Persistable)? {
            try object(T.self, for: id)
        }
        return try open(type)
    }

    /// How many `T` are stored.
    ///
    /// - Complexity: O(1): LMDB keeps the count.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails.
    public func count<T: Persistable>(_ type: T.Type) throws -> Int {
        guard let records = try typeState(T.self).records else { return 0 }
        return try lmdb.count(in: records)
    }
}

extension Transaction {
    /// The stored record of the `T` under encoded key `key`, or nil.
    package func record<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8]) throws -> [UInt8]? {
        guard let records = try typeState(T.self).records else { return nil }
        return try lmdb.get(key, in: records)
    }
}
