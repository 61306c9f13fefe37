import Foundation
import LMDB
import LodeCodec

/// One `@catalog` entry: what the store knows about a stored type, readable without the Swift type
/// (it is CBOR like every record). See `docs/FORMAT.md`.
package struct CatalogEntry: Codable, Equatable {
    package struct IndexEntry: Codable, Equatable {
        /// The index name; its database is `<type>.<name>`.
        package var name: String
        /// The indexed fields, in key order.
        package var fields: [String]
        /// True for unique indexes (a plain database), false for dup-sort ones.
        package var unique: Bool

        /// The index `name` over `fields`, unique or not.
        package init(name: String, fields: [String], unique: Bool) {
            self.name = name
            self.fields = fields
            self.unique = unique
        }
    }

    /// One link of the type: its field, the type it points at, whether it is to-many, the delete rule
    /// (a ``DeleteRule`` raw value). Its inverse index is the database ``linkDatabaseName(type:field:)``.
    package struct LinkEntry: Codable, Equatable {
        /// The link's field (a dotted path for a nested one).
        package var field: String
        /// The store name of the target type.
        package var target: String
        /// True for a to-many link (an array of keys), false for a to-one (a key or nothing).
        package var toMany: Bool
        /// The delete rule's name.
        package var rule: String

        /// The link on `field` to `target`.
        package init(field: String, target: String, toMany: Bool, rule: String) {
            self.field = field
            self.target = target
            self.toMany = toMany
            self.rule = rule
        }

        /// The link `relationship` declares.
        init<T>(_ relationship: Relationship<T>) {
            self.init(
                field: relationship.field, target: relationship.targetTypeName,
                toMany: relationship.isToMany, rule: relationship.deleteRule.rawValue)
        }

        /// The rule; one this version does not know is applied as ``DeleteRule/deny`` (refusing a
        /// delete is the one choice that loses nothing).
        package var deleteRule: DeleteRule { DeleteRule(rawValue: rule) ?? .deny }

        /// True when the two describe the same inverse index (the rule may differ).
        package func sameIndex(as other: LinkEntry) -> Bool {
            field == other.field && target == other.target && toMany == other.toMany
        }
    }

    /// One attached index of the type (an index of a kind the write path keeps through
    /// ``AttachedIndex``: a full-text index, the one such kind the format has), stored under
    /// `textIndexes`. Its databases are ``attachedIndexDatabaseNames(type:index:)``.
    package struct AttachedIndexEntry: Codable, Equatable {
        /// The index name.
        package var name: String
        /// The indexed fields.
        package var fields: [String]
        /// The identifier of what split the fields into the index's entries (a full-text index's
        /// tokenizer): an index built by another is built again.
        package var tokenizer: String

        /// The index `name` over `fields`, built by `tokenizer`.
        package init(name: String, fields: [String], tokenizer: String) {
            self.name = name
            self.fields = fields
            self.tokenizer = tokenizer
        }
    }

    /// The type's store name; its records live in the database of that name.
    var name: String
    /// The field holding the primary key.
    package var primaryKey: String
    package var indexes: [IndexEntry]
    /// Every top-level field name seen in a record written by this store, sorted.
    package var fields: [String]
    /// The schema version the app declared.
    package var version: Int
    /// The type's fields over time: an event when the type was first stored and after each
    /// migration that changed it (absent in entries written before it existed).
    package var history: [FieldsEvent]?
    /// The schema's defaults for top-level fields older records lack: field name → the value's CBOR
    /// bytes (absent when there are none), so tools derive index keys as the library does.
    package var defaults: [String: Data]?
    /// Top-level fields a migration removed on purpose (`removeField`, the old name of
    /// `renameField`): a rewrite does not keep them as fields of another app version.
    package var removedFields: [String]?
    /// One example per distinct sequence of top-level field names the type's records have had: the
    /// sequence's hash and the key of a record written with it. Nil when unknown (entries written
    /// before it existed, or more than ``maxShapes`` shapes): the check at open then reads every record.
    package var shapes: [ShapeExample]?
    /// The kinds of value each top-level field has held in the type's records (field name → kind
    /// names, sorted; see ``FieldKind``). Nil when unknown (entries written before it existed):
    /// `check` then cannot tell a value of a kind no version wrote.
    package var kinds: [String: [String]]?
    /// The type's links (absent when it has none, and in entries written before links existed).
    package var links: [LinkEntry]?
    /// The type's attached indexes: its full-text indexes (absent when it has none; stored as
    /// `textIndexes`).
    package var attachedIndexes: [AttachedIndexEntry]?

    /// The stored names of the properties: the Swift names, but for ``attachedIndexes``.
    enum CodingKeys: String, CodingKey {
        case name, primaryKey, indexes, fields, version, history, defaults, removedFields, shapes, kinds,
            links
        case attachedIndexes = "textIndexes"
    }

    /// A record shape and a record that had it when it was listed.
    package struct ShapeExample: Codable, Equatable {
        /// The FNV-1a hash of the record's top-level field names, in record order.
        var shape: UInt64
        /// The record's key (it may have changed or gone since).
        var key: Data
    }

    /// How many shapes an entry lists before it gives up listing them.
    static let maxShapes = 64

    /// Adds `shape` with the example `key` unless listed; gives up the list past ``maxShapes``.
    /// Returns true when the entry changed.
    mutating func noteShape(_ shape: UInt64, key: [UInt8]) -> Bool {
        let before = shapes
        Self.note(shape, key: key, in: &shapes)
        return shapes != before
    }

    /// Adds `shape` with the example `key` to `list` unless listed; gives the list up (nil) past
    /// ``maxShapes``; a nil list stays nil.
    static func note(_ shape: UInt64, key: some Collection<UInt8>, in list: inout [ShapeExample]?) {
        guard let current = list, !current.contains(where: { $0.shape == shape }) else { return }
        list = current.count >= maxShapes ? nil : current + [ShapeExample(shape: shape, key: Data(key))]
    }

    /// Adds the shape of `record` (see ``noteShape(_:key:)``), when it has one.
    static func note(
        record: some ContiguousBytes, key: some Collection<UInt8>, in list: inout [ShapeExample]?
    ) {
        if let shape = record.withUnsafeBytes({ RecordNames.shape(of: $0) }) {
            note(shape, key: key, in: &list)
        }
    }

    /// Adds the shape of `record` and the kinds of its fields' values, when it is a map of fields.
    package static func note(
        record: some ContiguousBytes, key: some Collection<UInt8>, shapes: inout [ShapeExample]?,
        kinds: inout [String: [String]]?
    ) {
        guard let fields = record.withUnsafeBytes({ try? RecordNames.fields($0) }) else { return }
        note(fields.shape, key: key, in: &shapes)
        note(fields, in: &kinds)
    }

    /// Adds the kinds of value of `fields` to `list` (a nil list, unknown, stays nil).
    static func note(_ fields: RecordNames.Fields, in list: inout [String: [String]]?) {
        guard list != nil else { return }
        for (name, kind) in zip(fields.names, fields.kinds) where list?[name]?.contains(kind.name) != true {
            list?[name, default: []].append(kind.name)
            list?[name]?.sort()
        }
    }

    /// The type's fields from one schema version of the store on.
    package struct FieldsEvent: Codable, Equatable {
        /// The store's schema version (migrations run) from which this holds.
        var schemaVersion: Int
        /// The type's version then.
        var typeVersion: Int
        /// The fields its records had then.
        var fields: [String]
        /// What happened (`"stored"`, `"migrated by …"`, `"renamed from …"`).
        var event: String

        /// The fields `fields` of the type at `typeVersion`, from `schemaVersion` on, after `event`.
        package init(schemaVersion: Int, typeVersion: Int, fields: [String], event: String) {
            self.schemaVersion = schemaVersion
            self.typeVersion = typeVersion
            self.fields = fields
            self.event = event
        }
    }

    /// Records the type's fields after `event` at `schemaVersion`: a new event, or the last one
    /// updated when it is of the same schema version and event.
    mutating func note(fields: [String], schemaVersion: Int, event: String) {
        var events = history ?? []
        if let last = events.last, last.schemaVersion == schemaVersion, last.event == event {
            events[events.count - 1].fields = fields
            events[events.count - 1].typeVersion = version
        } else {
            events.append(
                FieldsEvent(schemaVersion: schemaVersion, typeVersion: version, fields: fields, event: event))
        }
        history = events
    }

    init<T: Persistable>(_ schema: Schema<T>) {
        name = schema.typeName
        primaryKey = schema.primaryKeyField
        indexes = schema.indexes.map { IndexEntry(name: $0.name, fields: $0.fields, unique: $0.isUnique) }
        fields = []
        version = schema.version
        history = nil
        defaults = Self.defaults(schema)
        shapes = []
        kinds = [:]
        links = Self.links(schema)
        attachedIndexes = Self.attachedIndexes(schema)
    }

    static func attachedIndexes<T: Persistable>(_ schema: Schema<T>) -> [AttachedIndexEntry]? {
        schema.attachedIndexes.isEmpty ? nil : schema.attachedIndexes.map(\.catalogEntry)
    }

    static func links<T: Persistable>(_ schema: Schema<T>) -> [LinkEntry]? {
        schema.links.isEmpty ? nil : schema.links.map(LinkEntry.init)
    }

    static func defaults<T: Persistable>(_ schema: Schema<T>) -> [String: Data]? {
        guard !schema.defaults.isEmpty else { return nil }
        return Dictionary(
            schema.defaults.compactMap { fieldDefault in
                fieldDefault.value.map { (fieldDefault.field, Data($0.encoded)) }
            }
        ) { _, last in last }
    }

    package init(name: String, primaryKey: String, indexes: [IndexEntry], fields: [String], version: Int) {
        self.name = name
        self.primaryKey = primaryKey
        self.indexes = indexes
        self.fields = fields
        self.version = version
        self.history = nil
        self.defaults = nil
        self.shapes = []
        self.kinds = [:]
    }

    package static func databaseName(type: String, index: String) -> String { type + "." + index }

    /// The first database of the attached index `index` of `type` (a full-text index's postings).
    package static func textPostingsDatabaseName(type: String, index: String) -> String {
        type + ".@text:" + index
    }

    /// The second database of the attached index `index` of `type` (a full-text index's primary key
    /// → document numbers).
    package static func textKeysDatabaseName(type: String, index: String) -> String {
        type + ".@textkeys:" + index
    }

    /// The databases of the attached index `index` of `type`, both plain.
    package static func attachedIndexDatabaseNames(type: String, index: String) -> [String] {
        [textPostingsDatabaseName(type: type, index: index), textKeysDatabaseName(type: type, index: index)]
    }

    /// Every database the type this entry describes keeps, by name, with its kind: its records, its
    /// indexes, the inverse indexes of its links, and the two databases of each attached index.
    package var databases: [(name: String, kind: Database.Kind)] {
        var databases: [(name: String, kind: Database.Kind)] = [(name, .plain)]
        for index in indexes {
            databases.append(
                (Self.databaseName(type: name, index: index.name), index.unique ? .plain : .duplicates))
        }
        for link in links ?? [] {
            databases.append((Self.linkDatabaseName(type: name, field: link.field), .duplicates))
        }
        for index in attachedIndexes ?? [] {
            for database in Self.attachedIndexDatabaseNames(type: name, index: index.name) {
                databases.append((database, .plain))
            }
        }
        return databases
    }

    /// The inverse index of the link on `field`: target primary key → the keys of the objects of
    /// `type` that link to it (index names never start with `@`, so it cannot collide with one).
    package static func linkDatabaseName(type: String, field: String) -> String {
        StoredLink.indexName(type: type, field: field)
    }

    /// The entry stored as `name` in `@catalog`, decoded.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@catalog` and
    ///   `name` when the bytes are not an entry.
    static func decoded(from bytes: some ContiguousBytes, named name: String) throws -> CatalogEntry {
        do {
            return try bytes.withUnsafeBytes { try CBORDecoder().decode(CatalogEntry.self, from: Array($0)) }
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: StoreLayout.catalog, key: name, field: (error as? DecodingError)?.fieldPath ?? "",
                reason: "\(error)")
        }
    }

    /// The entry as tools see it, without counts (``Transaction/storedType(named:)`` adds them).
    var storedType: StoredType {
        var stored = StoredType(
            name: name, primaryKey: primaryKey,
            indexes: indexes.map { StoredIndex(name: $0.name, fields: $0.fields, isUnique: $0.unique) },
            fields: fields, version: version)
        stored.defaults = (defaults ?? [:]).compactMapValues { try? CBORValue(decoding: Array($0)) }
        stored.links = (links ?? []).map {
            StoredLink(field: $0.field, targetTypeName: $0.target, isToMany: $0.toMany, rule: $0.rule)
        }
        stored.history = (history ?? []).map {
            FieldHistoryEntry(
                schemaVersion: $0.schemaVersion, typeVersion: $0.typeVersion, fields: $0.fields,
                event: $0.event)
        }
        return stored
    }
}

extension AttachedIndexDeclaration {
    /// What the catalog records of the index.
    package var catalogEntry: CatalogEntry.AttachedIndexEntry {
        CatalogEntry.AttachedIndexEntry(name: name, fields: fields, tokenizer: builderIdentifier)
    }
}
