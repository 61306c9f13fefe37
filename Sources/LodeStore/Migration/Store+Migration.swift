import Foundation
import LMDB
import LodeCodec

extension Transaction {
    /// The migrations this store has run (see ``Migration``).
    public func schemaHistory() throws -> SchemaHistory {
        guard let bytes = try lmdb.get(Array(StoreLayout.migrationsKey.utf8), in: store.meta) else {
            return SchemaHistory(migrations: [])
        }
        do {
            return SchemaHistory(migrations: try CBORDecoder().decode([String].self, from: bytes))
        } catch {
            throw LodeError.notAStore(
                path: store.path, reason: "its list of migrations does not decode: \(error)")
        }
    }

    /// Writes `history` as the migrations this store has run — for tools that restore a store from an
    /// export of another (`lode-dump load`); apps let ``Store/init(at:configuration:types:migrations:)``
    /// keep it.
    /// - Throws: ``LodeError/migrationsDiffer(path:position:stored:given:)`` when the store ran other
    ///   migrations than the start of `history`.
    public func restoreSchemaHistory(_ history: SchemaHistory) throws {
        guard let write = self as? WriteTransaction else { throw LodeError.readOnly(path: store.path) }
        let current = try schemaHistory().migrations
        for (position, name) in current.enumerated()
        where position >= history.migrations.count || history.migrations[position] != name {
            throw LodeError.migrationsDiffer(
                path: store.path, position: position, stored: name,
                given: position < history.migrations.count ? history.migrations[position] : "(none)")
        }
        try write.lmdbWrite.put(
            try CBOREncoder().encode(history.migrations), forKey: Array(StoreLayout.migrationsKey.utf8),
            in: store.meta)
        try write.lmdbWrite.put(
            try CBOREncoder().encode(history.version), forKey: Array(StoreLayout.schemaVersionKey.utf8),
            in: store.meta)
    }

    /// The first record of `T`'s stored type that does not decode as `T`, as an error (nil when all
    /// decode), and — when the catalog's list of record shapes could not be trusted and every record
    /// was read — the list found. With a trustworthy list, the example record of each shape and the
    /// first and last 16 records are decoded; otherwise every record's shape (field names and the
    /// kinds of their values, nested maps included) is read and one record of each decoded.
    func typeCheck<T: Persistable>(_ type: T.Type) throws -> (
        problem: LodeError?, shapes: [CatalogEntry.ShapeExample]?
    ) {
        guard let entry = try catalogEntry(named: T.schema.typeName) else { return (nil, nil) }
        let records = try recordsDatabase(of: T.schema.typeName)
        var problem: LodeError?
        func check(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            guard problem == nil else { return }
            do {
                _ = try decode(T.self, from: value, key: key)
            } catch LodeError.recordDoesNotDecode(let type, let key, let field, let reason) {
                problem = .typeChangedWithoutMigration(type: type, key: key, field: field, reason: reason)
            } catch {
                problem = .typeChangedWithoutMigration(
                    type: T.schema.typeName, key: KeyDescription.describe(Array(key)), field: "",
                    reason: "\(error)")
            }
        }
        if let shapes = entry.shapes {
            var trusted = true
            for example in shapes where problem == nil {
                let found = try lmdb.withValue(forKey: example.key, in: records) { value -> Bool in
                    guard RecordNames.shape(of: value) == example.shape else { return false }
                    example.key.withUnsafeBytes { check($0, value) }
                    return true
                }
                if found != true { trusted = false }
            }
            try lmdb.withCursor(in: records) { cursor in
                var step = 0
                var more = try cursor.withFirst(check) != nil
                while more, step < 15, problem == nil {
                    more = try cursor.withNext(check) != nil
                    step += 1
                }
                step = 0
                more = try cursor.last() != nil && cursor.withCurrent(check) != nil
                while more, step < 15, problem == nil {
                    more = try cursor.previous() != nil && cursor.withCurrent(check) != nil
                    step += 1
                }
            }
            if trusted || problem != nil { return (problem, nil) }
        }
        // Every record: one decode per shape of names and value kinds; the list of name shapes again.
        var kinds: Set<UInt64> = []
        var examples: [CatalogEntry.ShapeExample]? = []
        try lmdb.withCursor(in: records) { cursor in
            let visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void = { key, value in
                if kinds.insert(RecordShape.of(value)).inserted { check(key, value) }
                CatalogEntry.note(record: value, key: key, in: &examples)
            }
            var more = try cursor.withFirst(visit) != nil
            while more, problem == nil { more = try cursor.withNext(visit) != nil }
        }
        return (problem, problem == nil ? examples : nil)
    }
}

/// A record's shape for the check at open: a hash of its field names and the kind of each value
/// (major type, tag number), into nested maps and the first element of arrays. Records of one
/// shape decode alike unless a value is out of range for its field, so one decode per shape finds
/// a change of fields or of their types.
enum RecordShape {
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var reader = CBORReader(bytes)
        return (try? hash(&reader, depth: 0)) ?? 0
    }

    private static func hash(_ reader: inout CBORReader, depth: Int) throws(CBORReader.Failure) -> UInt64 {
        let start = reader.offset
        let head = try reader.readHead()
        var hash = FieldShape.adding(CollectionOfOne(head.major), to: FieldShape.basis)
        // A count larger than the bytes left is a damaged record: its shape is its head alone.
        let fits = head.argument <= UInt64(reader.bytes.count - reader.offset)
        switch head.major {
        case 5 where head.info != 31 && depth < 8 && fits:
            for _ in 0..<Int(head.argument) {
                guard let name = try reader.readStringBytes(major: 3) else { return hash }
                hash = FieldShape.adding(name, to: hash)
                hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
            }
        case 4 where head.info != 31 && depth < 8 && fits:
            for index in 0..<Int(head.argument) {
                if index == 0 {
                    hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
                } else {
                    try reader.skipItem()
                }
            }
        case 6 where depth < 8:
            hash = hash &* 31 &+ head.argument
            hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
        case 7:
            // true/false and null are different kinds for a decoder (a Bool field cannot be null).
            hash = hash &* 31 &+ UInt64(head.info == 22 ? 1 : head.info == 20 || head.info == 21 ? 2 : 3)
        default:
            reader = CBORReader(reader.bytes, offset: start)
            try reader.skipItem()
        }
        return hash
    }
}

extension Store {
    /// Runs the migrations the store has not run yet, each in its own write transaction with the
    /// schema version going up; checks first that the store ran a prefix of `migrations`. The last
    /// one's transaction also checks that `types` read the records it leaves (one record per shape)
    /// and registers them — their new indexes built, old ones dropped — so a migration that leaves
    /// records the app cannot read is not committed. Returns true when this process ran the last
    /// migration (and so checked and registered `types`).
    func migrate(_ migrations: [Migration], types: [any Persistable.Type]) throws -> Bool {
        let names = migrations.map(\.name)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            throw LodeError.migrationFailed(name: repeated, reason: "the list names it twice")
        }
        let applied = try read { try $0.schemaHistory() }.migrations
        try Self.compare(applied: applied, given: names, path: path)
        guard applied.count < names.count else { return false }
        guard !configuration.readOnly else {
            throw LodeError.readOnly(path: path)
        }
        var checked = false
        for migration in migrations[applied.count...] {
            let isLast = migration.name == names.last
            try write { tx in
                // Another process may have run it between the read above and this write.
                let now = try tx.schemaHistory().migrations
                try Self.compare(applied: now, given: names, path: path)
                guard !now.contains(migration.name) else { return }
                let context = MigrationContext(tx, name: migration.name, schemaVersion: now.count + 1)
                do {
                    try migration.body(context)
                    try context.finish()
                    if isLast {
                        for type in types {
                            func check<T: Persistable>(_ type: T.Type) throws {
                                if let problem = try tx.typeCheck(T.self).problem { throw problem }
                            }
                            try check(type)
                            try tx.registerType(type)
                        }
                        checked = true
                    }
                } catch {
                    throw LodeError.migrationFailed(name: migration.name, reason: "\(error)")
                }
                let history = now + [migration.name]
                try tx.lmdbWrite.put(
                    try CBOREncoder().encode(history), forKey: Array(StoreLayout.migrationsKey.utf8), in: meta
                )
                try tx.lmdbWrite.put(
                    try CBOREncoder().encode(history.count), forKey: Array(StoreLayout.schemaVersionKey.utf8),
                    in: meta)
            }
        }
        // Another process may have run the last one first: then `types` are still to check.
        return checked
    }

    private static func compare(applied: [String], given: [String], path: String) throws {
        for (position, name) in applied.enumerated() {
            guard position < given.count else {
                throw LodeError.storeNewerThanCode(
                    path: path, unknownMigrations: Array(applied[given.count...]))
            }
            guard given[position] == name else {
                throw LodeError.migrationsDiffer(
                    path: path, position: position, stored: name, given: given[position])
            }
        }
    }

    /// The check at open (``StoreConfiguration/checksTypesAtOpen``): throws for the first type whose
    /// stored records no longer decode, or erases them when the configuration says so. A type whose
    /// records all had to be read gets its list of shapes written back (in a writable store), so the
    /// next open reads examples only.
    func checkTypesAtOpen(_ types: [any Persistable.Type]) throws {
        for type in types {
            func check<T: Persistable>(_ type: T.Type) throws -> (LodeError?, [CatalogEntry.ShapeExample]?) {
                try read { tx in try tx.typeCheck(T.self) }
            }
            let (problem, shapes) = try check(type)
            if let problem {
                guard configuration.erasesIncompatibleTypes, !configuration.readOnly else { throw problem }
                try erase(type, because: problem)
            } else if let shapes, !configuration.readOnly {
                func name<T: Persistable>(_ type: T.Type) -> String { T.schema.typeName }
                let typeName = name(type)
                try write { tx in
                    guard var entry = try tx.catalogEntry(named: typeName), entry.shapes != shapes else {
                        return
                    }
                    entry.shapes = shapes
                    try tx.writeCatalog(entry)
                }
            }
        }
    }

    /// Deletes every record of `type` (development only), saying so on standard error.
    private func erase(_ type: any Persistable.Type, because problem: LodeError) throws {
        func name<T: Persistable>(_ type: T.Type) -> String { T.schema.typeName }
        let typeName = name(type)
        let count = try write { tx in try MigrationContext(tx).deleteAllRecords(of: typeName) }
        FileHandle.standardError.write(
            Data(
                "lode: WARNING: erased all \(count) stored \(typeName) objects because erasesIncompatibleTypes is on: \(problem)\n"
                    .utf8))
    }
}
