import Foundation
import LMDB
import LodeCodec

/// Link entries and delete rules.
///
/// The rules come from the catalog, not from the Swift types this process uses: deleting a project
/// applies `Task.project`'s rule whether or not this process knows `Task`. Objects reached that way
/// are read, changed and deleted without their Swift type, deriving index keys from the record as
/// `UntypedRecord` does (the same bytes the typed path derives).
extension WriteTransaction {
    func putLinkEntries(_ database: Database, targets: [[UInt8]], primaryKey: [UInt8]) throws {
        for target in targets { try lmdbWrite.put(primaryKey, forKey: target, in: database) }
    }

    func removeLinkEntries(_ database: Database, targets: [[UInt8]], primaryKey: [UInt8]) throws {
        for target in targets { try lmdbWrite.delete(target, value: primaryKey, in: database) }
    }

    /// The links into each type, from the catalog as this transaction sees it.
    func inboundLinks() throws -> LinkGraph {
        if let graph = linkGraph { return graph }
        let graph = try store.linkGraph(in: lmdb)
        linkGraph = graph
        return graph
    }

    /// Forgets the link graph read in this transaction (the catalog changed).
    package func catalogDidChange() { linkGraph = nil }

    // MARK: Planning

    /// An object named by its type's store name and its primary key.
    struct ObjectRef: Hashable {
        var type: String
        var key: [UInt8]
    }

    /// What deleting some objects does under the delete rules: every object to delete (the roots
    /// first) and the links to remove from objects that stay.
    struct DeletionPlan {
        var deletions: [ObjectRef] = []
        var deleting: Set<ObjectRef> = []
        /// Per object that stays, the links to remove: field → target keys.
        var nullifications: [ObjectRef: [String: Set<[UInt8]>]] = [:]
        var nullifiedOrder: [ObjectRef] = []
        /// Objects that deny a deletion, with the object they point at.
        var denials: [(source: ObjectRef, target: ObjectRef)] = []

        mutating func delete(_ object: ObjectRef) {
            if deleting.insert(object).inserted { deletions.append(object) }
        }
    }

    /// Plans deleting `roots` (and, with `wholeType`, every object of that type) under the rules of
    /// every link into them, transitively; cycles end where an object is already being deleted.
    /// - Throws: ``LodeError/deleteDenied(type:key:linkedFrom:)`` when a link with rule deny points
    ///   at an object the plan deletes from an object it keeps.
    func planDeletion(of roots: [ObjectRef], wholeType: String? = nil, graph: LinkGraph) throws
        -> DeletionPlan
    {
        var plan = DeletionPlan()
        for root in roots { plan.delete(root) }
        func consider(_ link: LinkGraph.Inbound, source: [UInt8], target: [UInt8]) {
            let ref = ObjectRef(type: link.source, key: source)
            switch link.rule {
            case .cascade:
                plan.delete(ref)
            case .nullify:
                if plan.nullifications[ref] == nil { plan.nullifiedOrder.append(ref) }
                plan.nullifications[ref, default: [:]][link.field, default: []].insert(target)
            case .deny:
                plan.denials.append((ref, ObjectRef(type: link.target, key: target)))
            }
        }
        if let wholeType {
            // Every entry of every link into the type points at an object being deleted (or at none).
            let records = try lmdbWrite.database(named: wholeType, create: false)
            for link in graph.links(into: wholeType) {
                let database = try linkDatabase(link)
                if database.isOrdered {
                    try lmdb.forEachEntry(in: database) { entry in
                        if try lmdb.contains(entry.key, in: records) {
                            consider(link, source: entry.value, target: entry.key)
                        }
                        return true
                    }
                } else {
                    // Targets stored hashed (an encrypted store): a walk of the link index gives no
                    // target keys, so each object being deleted is looked up.
                    var targets: [[UInt8]] = []
                    try lmdb.forEachEntry(in: records) { entry in
                        targets.append(entry.key)
                        return true
                    }
                    for target in targets {
                        for source in try lmdb.values(forKey: target, in: database) {
                            consider(link, source: source, target: target)
                        }
                    }
                }
            }
        }
        var next = 0
        while next < plan.deletions.count {
            let victim = plan.deletions[next]
            next += 1
            for link in graph.links(into: victim.type) {
                for source in try lmdb.values(forKey: victim.key, in: try linkDatabase(link)) {
                    consider(link, source: source, target: victim.key)
                }
            }
        }
        let blockers = plan.denials.filter { denial in
            !plan.deleting.contains(denial.source) && denial.source.type != wholeType
        }
        if let first = blockers.first {
            var seen = Set<ObjectRef>()
            let sources = blockers.map(\.source).filter { seen.insert($0).inserted }
            let root = roots.first ?? first.target
            throw LodeError.deleteDenied(
                type: wholeType ?? root.type,
                key: roots.isEmpty ? "(every object)" : KeyDescription.describe(root.key),
                linkedFrom: sources.map { ObjectID(typeName: $0.type, primaryKey: $0.key) })
        }
        return plan
    }

    /// The inverse index of `link`.
    private func linkDatabase(_ link: LinkGraph.Inbound) throws -> Database {
        try lmdbWrite.database(
            named: CatalogEntry.linkDatabaseName(type: link.source, field: link.field), create: false)
    }

    // MARK: Applying

    /// Applies `plan` except the deletion of the objects `skip` names (the caller deletes those itself,
    /// with their Swift type): removes nullified links from the objects that stay, then deletes the
    /// others, each reported to observers as what it is.
    func apply(_ plan: DeletionPlan, skipping skip: (ObjectRef) -> Bool) throws {
        var types: [String: UntypedType] = [:]
        func type(_ name: String) throws -> UntypedType {
            if let known = types[name] { return known }
            let loaded = try UntypedType(name: name, in: self)
            types[name] = loaded
            return loaded
        }
        for ref in plan.nullifiedOrder where !plan.deleting.contains(ref) && !skip(ref) {
            try removeLinks(plan.nullifications[ref]!, from: ref, type: try type(ref.type))
        }
        for ref in plan.deletions where !skip(ref) {
            try deleteUntyped(ref, type: try type(ref.type))
        }
    }

    /// A type's catalog description and databases, for changing its records without its Swift type.
    struct UntypedType {
        var stored: StoredType
        var records: Database
        var indexes: [(index: StoredIndex, database: Database)]
        var links: [(link: StoredLink, database: Database)]
        /// The type's full-text (attached) indexes.
        var attached: [CatalogEntry.AttachedIndexEntry]

        init(name: String, in transaction: WriteTransaction) throws {
            guard let entry = try transaction.catalogEntry(named: name) else {
                throw LodeError.typeNotFound(name)
            }
            attached = entry.attachedIndexes ?? []
            let write = transaction.lmdbWrite
            stored = entry.storedType
            records = try write.database(named: name, create: false)
            indexes = try stored.indexes.map { index in
                (
                    index,
                    try write.database(
                        named: CatalogEntry.databaseName(type: name, index: index.name), create: false)
                )
            }
            links = try stored.links.map { link in
                (link, try write.database(named: link.databaseName(of: name), create: false))
            }
        }
    }

    /// Deletes an object without its Swift type: its record, its index entries and its link entries.
    private func deleteUntyped(_ ref: ObjectRef, type: UntypedType) throws {
        guard let bytes = try lmdb.get(ref.key, in: type.records) else { return }
        if !type.attached.isEmpty {
            // Full-text entries are the type's own code's: through its Swift type when this process
            // has used it, otherwise through the registered kind of index; never left behind.
            if let swiftType = store.swiftType(named: ref.type) {
                func remove<T: Persistable>(_: T.Type) throws {
                    try removeObject(T.self, key: ref.key, record: bytes, state: try typeState(T.self))
                }
                return try remove(swiftType)
            }
            guard let inspector = AttachedIndexInspection.inspector else {
                throw LodeError.textIndexUnavailable(
                    type: ref.type, index: type.attached[0].name,
                    reason:
                        "a delete rule deletes \(ref.type) \(KeyDescription.describe(ref.key)), and this process cannot change its full-text index: use \(ref.type) in it"
                )
            }
            for index in type.attached {
                try inspector.objectDeleted(key: ref.key, from: index, of: ref.type, in: self)
            }
        }
        if let record = try? UntypedRecord(bytes: bytes, type: type.stored) {
            for (index, database) in type.indexes {
                if let key = try? record.indexKey(index) {
                    try removeIndexEntry(in: database, unique: index.isUnique, key: key, primaryKey: ref.key)
                } else {
                    try removeEntries(pointingAt: ref.key, in: database)
                }
            }
            for (link, database) in type.links {
                if let targets = try? record.linkTargets(link) {
                    try removeLinkEntries(database, targets: targets, primaryKey: ref.key)
                } else {
                    try removeEntries(pointingAt: ref.key, in: database)
                }
            }
        } else {
            // Not a record the untyped reading accepts: find its entries by walking each index.
            for (_, database) in type.indexes { try removeEntries(pointingAt: ref.key, in: database) }
            for (_, database) in type.links { try removeEntries(pointingAt: ref.key, in: database) }
        }
        try lmdbWrite.delete(ref.key, in: type.records)
        pendingChanges.record(type: ref.type, key: ref.key, existedBefore: true, existsAfter: false)
    }

    /// Writes `record` as the object `ref` (nil: removes it, without delete rules) without its Swift
    /// type: its record, index and link entries, from the catalog's description of the type.
    /// - Throws: ``LodeError/textIndexUnavailable(type:index:reason:)`` for a type with a full-text
    ///   index (its entries are made by the type's own code), and
    ///   ``LodeError/uniqueViolation(type:index:value:)``.
    func writeUntyped(_ ref: ObjectRef, record: [UInt8]?) throws {
        guard let entry = try catalogEntry(named: ref.type) else { throw LodeError.typeNotFound(ref.type) }
        if let index = entry.attachedIndexes?.first {
            throw LodeError.textIndexUnavailable(
                type: ref.type, index: index.name,
                reason:
                    "\(ref.type) \(KeyDescription.describe(ref.key)) would be written without its Swift type, which makes its full-text entries: use \(ref.type) in this process"
            )
        }
        let type = try UntypedType(name: ref.type, in: self)
        let stored = try lmdb.get(ref.key, in: type.records)
        guard let record else {
            if stored != nil { try deleteUntyped(ref, type: type) }
            return
        }
        func readable<R>(_ body: () throws(UntypedRecord.Problem) -> R) throws -> R {
            do throws(UntypedRecord.Problem) {
                return try body()
            } catch {
                throw LodeError.recordDoesNotDecode(
                    type: ref.type, key: KeyDescription.describe(ref.key), field: error.field,
                    reason: error.reason)
            }
        }
        let before = try stored.map { stored in
            try readable { () throws(UntypedRecord.Problem) in
                try UntypedRecord(bytes: stored, type: type.stored)
            }
        }
        let after = try readable { () throws(UntypedRecord.Problem) in
            try UntypedRecord(bytes: record, type: type.stored)
        }
        for (index, database) in type.indexes {
            let old = try before.map { before in
                try readable { () throws(UntypedRecord.Problem) in try before.indexKey(index) }
            }
            let new = try readable { () throws(UntypedRecord.Problem) in try after.indexKey(index) }
            try moveIndexEntry(index, in: database, of: ref, from: old, to: new, value: after)
        }
        for (link, database) in type.links {
            let old = Set(
                try before.map { before in
                    try readable { () throws(UntypedRecord.Problem) in try before.linkTargets(link) }
                } ?? [])
            let new = Set(try readable { () throws(UntypedRecord.Problem) in try after.linkTargets(link) })
            try removeLinkEntries(database, targets: Array(old.subtracting(new)), primaryKey: ref.key)
            try putLinkEntries(database, targets: Array(new.subtracting(old)), primaryKey: ref.key)
        }
        try lmdbWrite.put(record, forKey: ref.key, in: type.records)
        try noteUntypedRecord(record, key: ref.key, type: ref.type)
        if !historyCaptureChecked { try prepareHistoryCapture() }
        let changed = stored.flatMap { old in
            old.withUnsafeBytes { old in record.withUnsafeBytes { RecordDiff.changedFields(old, $0) } }
        }
        pendingChanges.record(
            type: ref.type, key: ref.key, existedBefore: stored != nil, existsAfter: true, fields: changed,
            before: stored)
    }

    /// Moves the entry of `index` for the object `ref` from the index key `old` to `new` (either may be
    /// nil: none), written without the object's Swift type; `value` (the record after) names a unique
    /// value another object holds.
    /// - Throws: ``LodeError/uniqueViolation(type:index:value:)``, before anything changes.
    private func moveIndexEntry(
        _ index: StoredIndex, in database: Database, of ref: ObjectRef, from old: [UInt8]?, to new: [UInt8]?,
        value: UntypedRecord?
    ) throws {
        guard old != new else { return }
        if let new, index.isUnique, let owner = try lmdb.get(new, in: database), owner != ref.key {
            throw LodeError.uniqueViolation(
                type: ref.type, index: index.name,
                value: index.fields.map { value?.value.value(atPath: $0)?.json ?? "null" }.joined(
                    separator: ", "))
        }
        if let old {
            try removeIndexEntry(in: database, unique: index.isUnique, key: old, primaryKey: ref.key)
        }
        if let new { try lmdbWrite.put(ref.key, forKey: new, in: database) }
    }

    /// Removes every entry of `database` whose value is `key` (a walk of the whole index).
    func removeEntries(pointingAt key: [UInt8], in database: Database) throws {
        try lmdbWrite.withCursor(in: database) { cursor in
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

    /// Removes the links to `targets` (per field) from the stored object `ref`, rewriting its record
    /// without its Swift type: a to-one link to a removed target loses its field (as a nil optional
    /// is written), a to-many link loses every element pointing at one.
    private func removeLinks(_ targets: [String: Set<[UInt8]>], from ref: ObjectRef, type: UntypedType) throws
    {
        guard let bytes = try lmdb.get(ref.key, in: type.records) else { return }
        guard case .map(var entries) = try? CBORValue(decoding: bytes) else { return }
        let before = try? UntypedRecord(bytes: bytes, type: type.stored)
        var changedFields = Set<String>()
        for (field, removed) in targets {
            guard let link = type.stored.links.first(where: { $0.field == field }) else { continue }
            let path = field.split(separator: ".").map(String.init)
            let edited = CBORValue.map(entries).removingLinks(
                to: removed, atPath: path[...], toMany: link.isToMany)
            guard case .map(let updated) = edited, updated != entries else { continue }
            entries = updated
            changedFields.insert(path[0])
        }
        guard !changedFields.isEmpty else { return }
        let record = CBORValue.map(entries).encoded
        let after = try? UntypedRecord(bytes: record, type: type.stored)
        for (index, database) in type.indexes {
            // Removing a link can make a unique compound value collide; the delete fails then.
            try moveIndexEntry(
                index, in: database, of: ref, from: try? before?.indexKey(index),
                to: try? after?.indexKey(index),
                value: after)
        }
        for (link, database) in type.links where targets[link.field] != nil {
            let old = Set((try? before?.linkTargets(link)) ?? [])
            let new = Set((try? after?.linkTargets(link)) ?? [])
            try removeLinkEntries(database, targets: Array(old.subtracting(new)), primaryKey: ref.key)
        }
        try lmdbWrite.put(record, forKey: ref.key, in: type.records)
        try noteUntypedRecord(record, key: ref.key, type: ref.type)
        pendingChanges.record(
            type: ref.type, key: ref.key, existedBefore: true, existsAfter: true, fields: changedFields)
    }

    /// Adds the shape and kinds of a record written without its Swift type to the type's catalog
    /// entry: through the type's state when this process uses the type (so its later writes build on
    /// it), or directly.
    private func noteUntypedRecord(_ record: [UInt8], key: [UInt8], type: String) throws {
        if let state = (registeredTypes[type] ?? store.registeredState(named: type))
            as? any UntypedRecordNoting
        {
            try state.note(record: record, key: key, in: self)
            return
        }
        guard var entry = try catalogEntry(named: type) else { return }
        let before = entry
        if let fields = try? record.withUnsafeBytes({ try RecordNames.fields($0) }) {
            CatalogEntry.note(fields, in: &entry.kinds)
            _ = entry.noteShape(fields.shape, key: key)
            let missing = Set(fields.names).subtracting(entry.fields)
            if !missing.isEmpty { entry.fields = Array(Set(entry.fields).union(missing)).sorted() }
        }
        if entry != before { try writeCatalog(entry) }
    }
}

/// A type state that can note a record written without its Swift type.
protocol UntypedRecordNoting: AnyObject {
    func note(record: [UInt8], key: [UInt8], in transaction: WriteTransaction) throws
}

extension TypeState: UntypedRecordNoting {
    func note(record: [UInt8], key: [UInt8], in transaction: WriteTransaction) throws {
        try record.withUnsafeBytes { try transaction.noteFields(of: $0, key: key, state: self, known: nil) }
    }
}

extension CBORValue {
    /// The value with the links to `removed` taken out of the link at `path`: a to-one link whose
    /// key is one of them loses its field; a to-many one loses those elements.
    func removingLinks(to removed: Set<[UInt8]>, atPath path: ArraySlice<String>, toMany: Bool) -> CBORValue {
        guard case .map(var entries) = self, let name = path.first,
            let position = entries.firstIndex(where: { $0.key == .text(name) })
        else { return self }
        if path.count > 1 {
            entries[position].value = entries[position].value.removingLinks(
                to: removed, atPath: path.dropFirst(), toMany: toMany)
            return .map(entries)
        }
        func points(_ value: CBORValue) -> Bool {
            (try? KeyEncoder().encode(value)).map(removed.contains) ?? false
        }
        if toMany {
            guard case .array(let items) = entries[position].value else { return self }
            entries[position].value = .array(items.filter { !points($0) })
        } else if points(entries[position].value) {
            entries.remove(at: position)
        }
        return .map(entries)
    }
}
