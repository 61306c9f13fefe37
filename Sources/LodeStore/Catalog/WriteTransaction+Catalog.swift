import Foundation
import LMDB
import LodeCodec

/// Registering types: catalog entries, index databases built or dropped, field names learned.
extension WriteTransaction {
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
        if let failure = schema.defaultsFailure { throw failure }
        let existing = try catalogEntry(named: name)
        if let existing, existing.primaryKey != schema.primaryKeyField {
            throw LodeError.schemaMismatch(
                type: name,
                reason:
                    "the store's primary key is \"\(existing.primaryKey)\", the type's is \"\(schema.primaryKeyField)\""
            )
        }
        try validateLinks(of: schema)
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
        // An older version of the type (a lower schema version than the store's) keeps the indexes
        // a newer one declared, and keeps them up to date: the newer app finds them as it left them.
        let older = existing.map { $0.version > schema.version } ?? false
        var kept: [TypeState<T>.KeptIndex] = []
        for stored in existing?.indexes ?? []
        where !schema.indexes.contains(where: { $0.name == stored.name }) {
            let databaseName = CatalogEntry.databaseName(type: name, index: stored.name)
            if older {
                let database = try lmdbWrite.database(
                    named: databaseName, kind: stored.unique ? .plain : .duplicates)
                kept.append(
                    .init(
                        stored: StoredIndex(
                            name: stored.name, fields: stored.fields, isUnique: stored.unique),
                        database: database))
            } else {
                try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
            }
        }
        var liveLinks: [TypeState<T>.LiveLink] = []
        var linksToBuild: [TypeState<T>.LiveLink] = []
        let storedLinks = existing?.links ?? []
        for link in schema.links {
            let databaseName = CatalogEntry.linkDatabaseName(type: name, field: link.field)
            let wanted = CatalogEntry.LinkEntry(link)
            let stored = storedLinks.first { $0.field == link.field }
            if let stored, !stored.sameIndex(as: wanted) {
                try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
            }
            let database = try lmdbWrite.database(named: databaseName, kind: .duplicates)
            let liveLink = TypeState<T>.LiveLink(definition: link, database: database)
            liveLinks.append(liveLink)
            if stored.map({ !$0.sameIndex(as: wanted) }) ?? true { linksToBuild.append(liveLink) }
        }
        for stored in storedLinks where schema.link(named: stored.field) == nil {
            let databaseName = CatalogEntry.linkDatabaseName(type: name, field: stored.field)
            try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
        }
        // Attached indexes (full-text): one stored another way (other fields, another tokenizer) is
        // dropped and built again, one no longer declared is dropped.
        let storedAttached = existing?.attachedIndexes ?? []
        var liveAttached: [any AttachedIndex<T>] = []
        var attachedToBuild: [any AttachedIndex<T>] = []
        for definition in schema.attachedIndexDefinitions {
            let wanted = definition.catalogEntry
            let found = storedAttached.first { $0.name == wanted.name }
            if let found, found != wanted { try dropAttachedIndex(type: name, index: found.name) }
            let index = try definition.create(type: name, in: self)
            liveAttached.append(index)
            if found != wanted { attachedToBuild.append(index) }
        }
        for found in storedAttached where !schema.attachedIndexes.contains(where: { $0.name == found.name }) {
            try dropAttachedIndex(type: name, index: found.name)
        }
        if !toBuild.isEmpty || !linksToBuild.isEmpty || !attachedToBuild.isEmpty {
            // Build from the records; a unique index that the data violates fails the registration.
            try lmdb.forEachEntry(in: records) { entry in
                let object = try entry.value.withUnsafeBytes { try decode(T.self, from: $0, key: entry.key) }
                for index in toBuild {
                    try putIndexEntry(
                        index, key: try indexKey(index, of: object), primaryKey: entry.key, object: object)
                }
                for link in linksToBuild {
                    try putLinkEntries(
                        link.database, targets: link.definition.targetKeys(object), primaryKey: entry.key)
                }
                for index in attachedToBuild {
                    try index.objectChanged(key: entry.key, old: nil, new: object, in: self)
                }
                return true
            }
            // Written now: a store registers its types in a transaction of its own at open.
            try flushDeferredIndexWrites()
        }
        entry.indexes =
            schema.indexes.map { .init(name: $0.name, fields: $0.fields, unique: $0.isUnique) }
            + kept.map { .init(name: $0.stored.name, fields: $0.stored.fields, unique: $0.stored.isUnique) }
        entry.links = CatalogEntry.links(schema)
        entry.attachedIndexes = CatalogEntry.attachedIndexes(schema)
        if older {
            // The newer version stays the one recorded, with the defaults of the fields it added.
            var defaults = existing?.defaults ?? [:]
            for (field, value) in CatalogEntry.defaults(schema) ?? [:] { defaults[field] = value }
            entry.defaults = defaults.isEmpty ? nil : defaults
        } else {
            entry.version = schema.version
            entry.defaults = CatalogEntry.defaults(schema)
        }
        if existing == nil {
            entry.note(fields: entry.fields, schemaVersion: try schemaHistory().version, event: "stored")
        }
        if entry != existing { try writeCatalog(entry) }
        let state = TypeState(
            schema: schema, records: records, indexes: live, links: liveLinks, attachedIndexes: liveAttached,
            keptIndexes: kept, entry: entry, complete: true)
        registeredTypes[name] = state
        return state
    }

    /// Raises the store's format to the one with links, in this transaction, unless it is there: a
    /// Lode that predates links refuses the store from then on instead of writing objects without
    /// their link entries.
    private func noteLinksFormat() throws {
        try noteFormat(StoreLayout.linksFormatVersion, known: store.hasLinksFormat)
    }

    /// Raises the store's format to `version` in this transaction unless it is there (`known`
    /// remembers that it is).
    private func noteFormat(_ version: Int, known: Locked<Bool>) throws {
        if known.withLock({ $0 }) { return }
        let key = Array(StoreLayout.formatVersionKey.utf8)
        let stored = try lmdb.get(key, in: store.meta).flatMap {
            try? CBORDecoder().decode(Int.self, from: $0)
        }
        if (stored ?? 0) < version {
            try lmdbWrite.put(try CBOREncoder().encode(version), forKey: key, in: store.meta)
        } else {
            // Committed already (by this process or another): remembered for every later write.
            known.withLock { $0 = true }
        }
    }

    /// Refuses a schema whose links or index names the store could not keep apart.
    private func validateLinks<T: Persistable>(of schema: Schema<T>) throws {
        func refuse(_ reason: String) -> LodeError { .schemaMismatch(type: schema.typeName, reason: reason) }
        if let index = schema.indexes.first(where: { $0.name.hasPrefix("@") }) {
            throw refuse("index name \"\(index.name)\" starts with @, which link indexes use")
        }
        var attachedNames = Set<String>()
        for index in schema.attachedIndexes {
            guard !index.name.isEmpty, attachedNames.insert(index.name).inserted else {
                throw refuse("the full-text index \"\(index.name)\" is declared twice or has no name")
            }
            guard !index.fields.isEmpty else {
                throw refuse("the full-text index \"\(index.name)\" has no fields")
            }
            if let problem = index.declarationProblem { throw refuse(problem) }
        }
        var fields = Set<String>()
        for link in schema.links {
            guard fields.insert(link.field).inserted else {
                throw refuse("the link on \"\(link.field)\" is declared twice")
            }
            guard !link.targetTypeName.isEmpty, !link.targetTypeName.hasPrefix("@") else {
                throw refuse("the link on \"\(link.field)\" points at an invalid type name")
            }
        }
    }

    package func writeCatalog(_ entry: CatalogEntry) throws {
        if entry.links?.isEmpty == false { try noteLinksFormat() }
        // A Lode that predates full-text indexes refuses the store from then on, instead of writing
        // objects without their postings.
        if entry.attachedIndexes?.isEmpty == false {
            try noteFormat(StoreLayout.textIndexesFormatVersion, known: store.hasTextIndexesFormat)
        }
        try lmdbWrite.put(try CBOREncoder().encode(entry), forKey: Array(entry.name.utf8), in: store.catalog)
        catalogDidChange()
    }

    /// Adds field names never seen before, a record shape not listed yet (with `key` as its
    /// example) and kinds of value a field never held, to the catalog entry; `known` is the
    /// encoder's hash of the record's names and kinds, learned once the entry holds them.
    func noteFields<T>(of record: UnsafeRawBufferPointer, key: [UInt8], state: TypeState<T>, known: UInt64?)
        throws
    {
        guard let fields = try RecordNames.fields(record) else { return }
        let (shape, names) = (fields.shape, fields.names)
        let current = state.latestEntry
        var updated = current
        CatalogEntry.note(fields, in: &updated.kinds)
        let missing = Set(names).subtracting(current.fields)
        if !missing.isEmpty {
            updated.fields = Array(Set(current.fields).union(missing)).sorted()
            if let last = updated.history?.last {
                updated.note(fields: updated.fields, schemaVersion: last.schemaVersion, event: last.event)
            }
        }
        _ = updated.noteShape(shape, key: key)
        if updated == current {
            if state.pendingEntry == nil, let known { state.learnShape(known) }
            return
        }
        try writeCatalog(updated)
        if pendingEntriesBefore[ObjectIdentifier(state)] == nil {
            pendingEntriesBefore[ObjectIdentifier(state)] = (state, state.pendingEntry)
        }
        state.pendingEntry = updated
    }

    /// A record shape this transaction has already added to a type's catalog entry.
    struct ShapeNote: Hashable {
        var state: ObjectIdentifier
        var shape: UInt64
    }

    func finishPending(committed: Bool) {
        for (_, pending) in pendingEntriesBefore { pending.state.finishWrite(committed: committed) }
        pendingEntriesBefore.removeAll()
    }
}
