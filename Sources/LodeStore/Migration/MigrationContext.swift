import Foundation
import LMDB
import LodeCodec

/// What a ``Migration`` works with: the store's records by stored type name, without the Swift
/// types that wrote them, inside the migration's one write transaction.
///
/// Records are changed through ``DynamicRecord``s; the helpers cover the common changes. Indexes
/// of every type whose records changed are rebuilt from its records when the migration ends (a
/// unique index the new records violate fails the migration, naming both objects), its catalog
/// entry learns its new fields, and observers of the type receive a full change. A final typed pass
/// (``migrate(_:_:)``) reads the reshaped records with the new Swift type.
public final class MigrationContext {
    /// The migration's write transaction (typed reads and writes of types already in their new
    /// shape).
    public let transaction: WriteTransaction
    /// Types whose records changed: their indexes and fields are rebuilt at the end.
    private var changedTypes: Set<String> = []

    /// The migration's name and the schema version it brings the store to (for the field history).
    private let name: String
    private let schemaVersion: Int

    init(_ transaction: WriteTransaction, name: String = "", schemaVersion: Int = 0) {
        transaction.breaksHistory = "the migration \"\(name)\""
        self.transaction = transaction
        self.name = name
        self.schemaVersion = schemaVersion
    }

    /// What a record update does with the record.
    public enum RecordAction: Sendable {
        /// Keeps the record as the closure left it (stored under the key its primary key gives).
        case keep
        /// Deletes the record.
        case delete
    }

    // MARK: Reading

    /// The stored type names the catalog lists.
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails.
    public func typeNames() throws -> [String] {
        try transaction.lmdb.allEntries(in: transaction.store.catalog).map {
            String(decoding: $0.key, as: UTF8.self)
        }
    }

    /// Every record of the type stored as `type`, in primary-key order.
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the catalog does not list.
    public func records(of type: String) throws -> [DynamicRecord] {
        _ = try entry(type)
        return try rawRecords(of: type).map { key, bytes in try dynamicRecord(bytes, type: type, key: key) }
    }

    // MARK: Changing records

    /// Runs `body` on every record of `type`: the record is stored as the closure leaves it (under
    /// the key its primary-key field now gives) or deleted.
    /// - Throws: ``LodeError/duplicateKey(type:key:)`` naming both records when two end up with the
    ///   same primary key; what `body` throws.
    public func updateRecords(of type: String, _ body: (inout DynamicRecord) throws -> RecordAction) throws {
        let entry = try entry(type)
        let stored = entry.storedType
        let database = try recordsDatabase(type)
        var rewritten: [(oldKey: [UInt8], key: [UInt8], bytes: [UInt8])] = []
        for (key, bytes) in try rawRecords(of: type) {
            var record = try dynamicRecord(bytes, type: type, key: key)
            let before = record
            switch try body(&record) {
            case .delete:
                _ = try transaction.lmdbWrite.delete(key, in: database)
            case .keep:
                guard record != before else { continue }
                let newKey = try primaryKey(of: record, stored: stored, oldKey: key)
                _ = try transaction.lmdbWrite.delete(key, in: database)
                rewritten.append((key, newKey, record.bytes))
            }
        }
        // Written after every old key is gone, so a record may take a key another one left.
        var written: [[UInt8]: [UInt8]] = [:]
        for record in rewritten {
            do {
                try transaction.lmdbWrite.put(
                    record.bytes, forKey: record.key, in: database, flags: .noOverwrite)
            } catch let error as LMDBError where error.code == .keyExists {
                let other = written[record.key] ?? record.key
                throw LodeError.duplicateKey(
                    type: type,
                    key:
                        "\(KeyDescription.describe(record.key)) (records \(KeyDescription.describe(other)) and \(KeyDescription.describe(record.oldKey)) both map to it)"
                )
            }
            written[record.key] = record.oldKey
        }
        changedTypes.insert(type)
    }

    /// Adds a record to `type` (stored under the key its primary-key field gives).
    /// - Throws: ``LodeError/duplicateKey(type:key:)`` when a record has that key.
    public func insert(_ record: DynamicRecord, into type: String) throws {
        let stored = try entry(type).storedType
        let key = try primaryKey(of: record, stored: stored, oldKey: nil)
        do {
            try transaction.lmdbWrite.put(
                record.bytes, forKey: key, in: try recordsDatabase(type), flags: .noOverwrite)
        } catch let error as LMDBError where error.code == .keyExists {
            throw LodeError.duplicateKey(type: type, key: KeyDescription.describe(key))
        }
        changedTypes.insert(type)
    }

    // MARK: Helpers for the common changes

    /// Gives every record of `type` that lacks the field at `path` the value `value`.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold, and
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that is not a map.
    public func addField(_ path: String, to type: String, default value: CBORValue) throws {
        try updateRecords(of: type) { record in
            if record[path] == nil { record[path] = value }
            return .keep
        }
    }

    /// Renames the field at `path` in every record of `type` (nested fields keep their parent);
    /// indexes on the field follow it.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold, and
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record where a field of the new name
    ///   exists already or that is not a map.
    public func renameField(_ path: String, to newName: String, in type: String) throws {
        try updateRecords(of: type) { record in
            try record.rename(path, to: newName)
            return .keep
        }
        try renameInCatalog(path, to: newName, in: type)
    }

    /// A rename a type declares (`Schema`'s `originalNames`, `@Attribute(originalName:)`) for its
    /// top-level field `old`: each record holding `old` has it under `new`, unless it holds `new`
    /// already (a version that knew both names wrote it), which then wins and `old` is removed.
    func renameDeclaredField(_ old: String, to new: String, in type: String) throws {
        try updateRecords(of: type) { record in
            if record[new] != nil {
                record[old] = nil
            } else {
                try record.rename(old, to: new)
            }
            return .keep
        }
        try renameInCatalog(old, to: new, in: type)
    }

    private func renameInCatalog(_ path: String, to newName: String, in type: String) throws {
        var components = DynamicRecord.components(path)
        components[components.count - 1] = newName
        let renamed = components.joined(separator: ".")
        var entry = try entry(type)
        for position in entry.indexes.indices {
            entry.indexes[position].fields = entry.indexes[position].fields.map { $0 == path ? renamed : $0 }
        }
        if let position = entry.links?.firstIndex(where: { $0.field == path }) {
            // The link's inverse index is named after its field: the old one goes, the end of the
            // migration builds the new one.
            try dropLinkDatabase(type: type, field: path)
            entry.links?[position].field = renamed
            changedTypes.insert(type)
        }
        try transaction.writeCatalog(entry)
        try noteRemoved(path, of: type)
    }

    /// Removes the field at `path` from every record of `type`, and the indexes on it.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold, and
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that is not a map.
    public func removeField(_ path: String, from type: String) throws {
        try updateRecords(of: type) { record in
            record.remove(path)
            return .keep
        }
        for index in try entry(type).indexes where index.fields.contains(path) {
            try dropIndex(index.name, of: type)
        }
        if try entry(type).links?.contains(where: { $0.field == path }) == true {
            try dropLink(path, of: type)
        }
        try noteRemoved(path, of: type)
    }

    /// Records that the top-level field `path` of `type` was removed on purpose: a rewrite does not
    /// keep it as a field of another app version, and sync removes it from the rows this store
    /// uploads (docs/FORMAT.md, "Fields of other versions").
    private func noteRemoved(_ path: String, of type: String) throws {
        guard DynamicRecord.components(path).count == 1 else { return }
        var entry = try entry(type)
        guard entry.removedFields?.contains(path) != true else { return }
        entry.removedFields = ((entry.removedFields ?? []) + [path]).sorted()
        try transaction.writeCatalog(entry)
    }

    /// Drops the link on `field` of `type` and its inverse index (the records keep the field's
    /// values; the new schema may declare the link again, which builds the index again).
    /// - Throws: ``LodeError/schemaMismatch(type:reason:)`` when the type has no such link.
    public func dropLink(_ field: String, of type: String) throws {
        var entry = try entry(type)
        guard let position = entry.links?.firstIndex(where: { $0.field == field }) else {
            throw LodeError.schemaMismatch(type: type, reason: "no link is declared on field \"\(field)\"")
        }
        try dropLinkDatabase(type: type, field: field)
        entry.links?.remove(at: position)
        if entry.links?.isEmpty == true { entry.links = nil }
        try transaction.writeCatalog(entry)
    }

    /// Points the link on `field` of `type` at the stored type `target` (whose primary keys its
    /// values already are), with `rule` (the rule it had when nil).
    /// - Throws: ``LodeError/schemaMismatch(type:reason:)`` when the type has no such link,
    ///   ``LodeError/typeNotFound(_:)`` when `target` is not stored.
    public func retargetLink(_ field: String, of type: String, to target: String, rule: DeleteRule? = nil)
        throws
    {
        var entry = try entry(type)
        guard let position = entry.links?.firstIndex(where: { $0.field == field }) else {
            throw LodeError.schemaMismatch(type: type, reason: "no link is declared on field \"\(field)\"")
        }
        _ = try self.entry(target)
        entry.links?[position].target = target
        if let rule { entry.links?[position].rule = rule.rawValue }
        try transaction.writeCatalog(entry)
    }

    private func dropLinkDatabase(type: String, field: String) throws {
        let write = transaction.lmdbWrite
        try write.drop(
            try write.database(
                named: CatalogEntry.linkDatabaseName(type: type, field: field), kind: .duplicates))
    }

    /// Drops the index `name` of `type` (the new schema may build it again when the type is
    /// registered after the migrations).
    /// - Throws: ``LodeError/indexNotFound(type:index:)`` when the type has no such index.
    public func dropIndex(_ name: String, of type: String) throws {
        var entry = try entry(type)
        guard let position = entry.indexes.firstIndex(where: { $0.name == name }) else {
            throw LodeError.indexNotFound(type: type, index: name)
        }
        let write = transaction.lmdbWrite
        try write.drop(
            try write.database(
                named: CatalogEntry.databaseName(type: type, index: name),
                kind: entry.indexes[position].unique ? .plain : .duplicates))
        entry.indexes.remove(at: position)
        try transaction.writeCatalog(entry)
    }

    /// Replaces the value of the field at `path` in every record of `type` that has it by what
    /// `convert` returns (nil removes the field): a change of the field's type.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold, and whatever `convert`
    ///   throws (the migration then fails).
    public func convertField(
        _ path: String, in type: String, _ convert: (CBORValue) throws -> CBORValue?
    ) throws {
        try updateRecords(of: type) { record in
            if let value = record[path] { record[path] = try convert(value) }
            return .keep
        }
    }

    /// Renames the stored type `old` to `new`: its records, indexes and catalog entry move.
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a missing `old`;
    ///   ``LodeError/invalidTypeDescription(type:reason:)`` when `new` exists already.
    public func renameType(_ old: String, to new: String) throws {
        var entry = try entry(old)
        guard try transaction.catalogEntry(named: new) == nil else {
            throw LodeError.invalidTypeDescription(type: new, reason: "a type of that name is stored already")
        }
        let write = transaction.lmdbWrite
        let from = try recordsDatabase(old)
        let to = try write.database(named: new, kind: .plain)
        try write.forEachEntry(in: from) { entry in
            try write.put(entry.value, forKey: entry.key, in: to)
            return true
        }
        try write.drop(from)
        for index in entry.indexes {
            try write.drop(
                try write.database(
                    named: CatalogEntry.databaseName(type: old, index: index.name), create: false))
        }
        for link in entry.links ?? [] { try dropLinkDatabase(type: old, field: link.field) }
        _ = try dropAttachedIndexes(of: old, entry: &entry)
        try write.delete(Array(old.utf8), in: transaction.store.catalog)
        transaction.catalogDidChange()
        // Links into the type follow it (their values are its keys, which do not change).
        for name in try typeNames() {
            var other = try self.entry(name)
            guard other.links?.contains(where: { $0.target == old }) == true else { continue }
            for position in other.links!.indices where other.links![position].target == old {
                other.links![position].target = new
            }
            try transaction.writeCatalog(other)
        }
        entry.links = entry.links.map { links in
            links.map { link in
                var link = link
                if link.target == old { link.target = new }
                return link
            }
        }
        entry.name = new
        entry.note(fields: entry.fields, schemaVersion: schemaVersion, event: "renamed from \(old)")
        try transaction.writeCatalog(entry)
        transaction.pendingChanges.recordClear(type: old)
        changedTypes.remove(old)
        changedTypes.insert(new)
    }

    /// Deletes the stored type `name`: its records, indexes, links and catalog entry. No delete rule
    /// runs: links of other types into it dangle until the migration removes or retargets them
    /// (`check` lists them).
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold.
    public func deleteType(_ name: String) throws {
        let entry = try entry(name)
        let write = transaction.lmdbWrite
        try write.drop(try recordsDatabase(name))
        for index in entry.indexes {
            try write.drop(
                try write.database(
                    named: CatalogEntry.databaseName(type: name, index: index.name), create: false))
        }
        for link in entry.links ?? [] { try dropLinkDatabase(type: name, field: link.field) }
        for index in entry.attachedIndexes ?? [] {
            try transaction.dropAttachedIndex(type: name, index: index.name)
        }
        try write.delete(Array(name.utf8), in: transaction.store.catalog)
        transaction.catalogDidChange()
        transaction.pendingChanges.recordClear(type: name)
        changedTypes.remove(name)
    }

    /// Makes the field `field` the primary key of `type`: every record is stored again under the key
    /// its value gives.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record without the
    ///   field; ``LodeError/duplicateKey(type:key:)`` naming both records when two have the same value.
    public func changePrimaryKey(of type: String, to field: String) throws {
        var entry = try entry(type)
        guard entry.primaryKey != field else { return }
        entry.primaryKey = field
        try transaction.writeCatalog(entry)
        // Every record moves: a change that keeps the record as it is still re-keys it.
        let stored = entry.storedType
        let database = try recordsDatabase(type)
        var moved: [(oldKey: [UInt8], key: [UInt8], bytes: [UInt8])] = []
        for (key, bytes) in try rawRecords(of: type) {
            let record = try dynamicRecord(bytes, type: type, key: key)
            moved.append((key, try primaryKey(of: record, stored: stored, oldKey: key), bytes))
        }
        try transaction.lmdbWrite.empty(database)
        var written: [[UInt8]: [UInt8]] = [:]
        for record in moved {
            if let other = written[record.key] {
                throw LodeError.duplicateKey(
                    type: type,
                    key:
                        "\(KeyDescription.describe(record.key)) (records \(KeyDescription.describe(other)) and \(KeyDescription.describe(record.oldKey)) both have this \(field))"
                )
            }
            try transaction.lmdbWrite.put(record.bytes, forKey: record.key, in: database)
            written[record.key] = record.oldKey
        }
        changedTypes.insert(type)
    }

    /// The final typed pass: every record of `T`'s stored type is read as a `T` (a record that does
    /// not decode fails the migration, naming it), changed by `body`, and written again through the
    /// library, with `T`'s schema: its indexes are reconciled (added, dropped, rebuilt) and checked.
    ///
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that does not decode
    ///   as `T`, ``LodeError/duplicateKey(type:key:)`` when `body` gives two objects one primary key,
    ///   ``LodeError/uniqueViolation(type:index:value:)`` for a unique index, and whatever `body` throws.
    public func migrate<T: Persistable>(_ type: T.Type, _ body: (inout T) throws -> Void) throws {
        let name = T.schema.typeName
        let entry = try entry(name)
        if entry.primaryKey != T.schema.primaryKeyField {
            try changePrimaryKey(of: name, to: T.schema.primaryKeyField)
        }
        var objects: [(key: [UInt8], object: T)] = []
        for (key, bytes) in try rawRecords(of: name) {
            var object = try bytes.withUnsafeBytes { try transaction.decode(T.self, from: $0, key: key) }
            try body(&object)
            objects.append((key, object))
        }
        // Start the type again from its records: the typed inserts rebuild every index of `T`.
        try clear(name, entry: try self.entry(name))
        var inserted: [[UInt8]: [UInt8]] = [:]
        for (oldKey, object) in objects {
            let key = try transaction.primaryKey(of: object)
            do {
                try transaction.insert(object)
            } catch LodeError.duplicateKey {
                throw LodeError.duplicateKey(
                    type: name,
                    key:
                        "\(KeyDescription.describe(key)) (records \(KeyDescription.describe(inserted[key] ?? key)) and \(KeyDescription.describe(oldKey)) both have it)"
                )
            }
            inserted[key] = oldKey
        }
        // The typed state registered for the pass saw the fields of before: registration after the
        // migration starts from the catalog again. The end of the migration rebuilds the fields.
        transaction.registeredTypes[name] = nil
        changedTypes.insert(name)
    }

    // MARK: Ending

    /// Rebuilds the indexes and fields of every type whose records changed.
    func finish() throws {
        for type in changedTypes.sorted() {
            try rebuild(type, entry: try entry(type))
        }
        changedTypes.removeAll()
    }

    /// Empties the type's index databases, fills them again from its records (the untyped
    /// derivation `restore` and `check` use), and records the fields its records now have.
    private func rebuild(_ type: String, entry: CatalogEntry) throws {
        let write = transaction.lmdbWrite
        // Full-text indexes need the tokenizer that built them, which only the app's schema has:
        // they are dropped here and built again when the type is registered after the migrations.
        var entry = entry
        if try dropAttachedIndexes(of: type, entry: &entry) { try transaction.writeCatalog(entry) }
        let stored = entry.storedType
        let indexes = try entry.indexes.map { index in
            let database = try write.database(
                named: CatalogEntry.databaseName(type: type, index: index.name),
                kind: index.unique ? .plain : .duplicates)
            try write.empty(database)
            return database
        }
        let links = try stored.links.map { link in
            let database = try write.database(named: link.databaseName(of: type), kind: .duplicates)
            try write.empty(database)
            return database
        }
        var fields: Set<String> = []
        var shapes: [CatalogEntry.ShapeExample]? = []
        var kinds: [String: [String]]? = [:]
        var holders: [[[UInt8]: [UInt8]]] = Array(repeating: [:], count: entry.indexes.count)
        for (key, bytes) in try rawRecords(of: type) {
            CatalogEntry.note(record: bytes, key: key, shapes: &shapes, kinds: &kinds)
            let record: UntypedRecord
            do {
                record = try UntypedRecord(bytes: bytes, type: stored)
            } catch {
                throw LodeError.recordDoesNotDecode(
                    type: type, key: KeyDescription.describe(key), field: error.field, reason: error.reason)
            }
            fields.formUnion(record.fieldNames)
            for (position, index) in stored.indexes.enumerated() {
                let indexKey: [UInt8]
                do {
                    indexKey = try record.indexKey(index)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: type, key: KeyDescription.describe(key), field: error.field,
                        reason: error.reason)
                }
                if index.isUnique, let other = holders[position][indexKey] {
                    throw LodeError.uniqueViolation(
                        type: type, index: index.name,
                        value:
                            "\(KeyDescription.describe(indexKey)) (records \(KeyDescription.describe(other)) and \(KeyDescription.describe(key)))"
                    )
                }
                if index.isUnique { holders[position][indexKey] = key }
                try write.put(key, forKey: indexKey, in: indexes[position])
            }
            for (link, database) in zip(stored.links, links) {
                let targets: [[UInt8]]
                do {
                    targets = try record.linkTargets(link)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: type, key: KeyDescription.describe(key), field: error.field,
                        reason: error.reason)
                }
                for target in targets { try write.put(key, forKey: target, in: database) }
            }
        }
        var updated = entry
        updated.fields = fields.sorted()
        updated.shapes = shapes
        updated.kinds = kinds
        updated.note(fields: updated.fields, schemaVersion: schemaVersion, event: "migrated by \(name)")
        if updated != entry { try transaction.writeCatalog(updated) }
        transaction.pendingChanges.recordClear(type: type)
    }

    /// Deletes every record of `type` and its index entries (the type stays, empty); returns how many
    /// records there were.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold.
    @discardableResult
    public func deleteAllRecords(of type: String) throws -> Int {
        let entry = try entry(type)
        let count = try transaction.lmdb.count(in: try recordsDatabase(type))
        try clear(type, entry: entry)
        changedTypes.remove(type)
        return count
    }

    /// Deletes every record and index entry of the type (the catalog entry stays).
    private func clear(_ type: String, entry: CatalogEntry) throws {
        let write = transaction.lmdbWrite
        try write.empty(try recordsDatabase(type))
        for index in entry.indexes {
            try write.empty(
                try write.database(
                    named: CatalogEntry.databaseName(type: type, index: index.name),
                    kind: index.unique ? .plain : .duplicates))
        }
        for link in entry.links ?? [] {
            try write.empty(
                try write.database(
                    named: CatalogEntry.linkDatabaseName(type: type, field: link.field), kind: .duplicates))
        }
        for index in entry.attachedIndexes ?? [] {
            try transaction.emptyAttachedIndex(type: type, index: index.name)
        }
        transaction.pendingChanges.recordClear(type: type)
    }

    /// Drops the full-text indexes of `type` and takes them out of `entry`; returns whether it had any.
    private func dropAttachedIndexes(of type: String, entry: inout CatalogEntry) throws -> Bool {
        guard let indexes = entry.attachedIndexes else { return false }
        for index in indexes { try transaction.dropAttachedIndex(type: type, index: index.name) }
        entry.attachedIndexes = nil
        return true
    }

    /// Drops the full-text index `name` of `type` (the new schema may build it again when the type is
    /// registered after the migrations).
    /// - Throws: ``LodeError/indexNotFound(type:index:)`` when the type has no such index.
    public func dropTextIndex(_ name: String, of type: String) throws {
        var entry = try entry(type)
        guard let position = entry.attachedIndexes?.firstIndex(where: { $0.name == name }) else {
            throw LodeError.indexNotFound(type: type, index: name)
        }
        try transaction.dropAttachedIndex(type: type, index: name)
        entry.attachedIndexes?.remove(at: position)
        if entry.attachedIndexes?.isEmpty == true { entry.attachedIndexes = nil }
        try transaction.writeCatalog(entry)
    }

    // MARK: Plumbing

    private func entry(_ type: String) throws -> CatalogEntry {
        guard let entry = try transaction.catalogEntry(named: type) else {
            throw LodeError.typeNotFound(type)
        }
        return entry
    }

    private func recordsDatabase(_ type: String) throws -> Database {
        try transaction.lmdbWrite.database(named: type, kind: .plain)
    }

    private func rawRecords(of type: String) throws -> [(key: [UInt8], value: [UInt8])] {
        try transaction.lmdbWrite.allEntries(in: try recordsDatabase(type)).map { ($0.key, $0.value) }
    }

    private func dynamicRecord(_ bytes: [UInt8], type: String, key: [UInt8]) throws -> DynamicRecord {
        let value: CBORValue
        do {
            value = try CBORValue(decoding: bytes)
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: type, key: KeyDescription.describe(key), field: "",
                reason: "the record is not CBOR: \(error.reason)")
        }
        do {
            return try DynamicRecord(value)
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: type, key: KeyDescription.describe(key), field: "",
                reason: "the record is not a map of fields")
        }
    }

    private func primaryKey(of record: DynamicRecord, stored: StoredType, oldKey: [UInt8]?) throws -> [UInt8]
    {
        do {
            return try UntypedRecord(bytes: record.bytes, type: stored).primaryKey
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: stored.name, key: oldKey.map { KeyDescription.describe($0) } ?? record.description,
                field: error.field, reason: error.reason)
        }
    }
}
