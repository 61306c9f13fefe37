import Foundation
import LMDB
import LodeCodec

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
                        try Self.applyDeclaredRenames(types, in: tx)
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
}

extension Store {
    /// The renames `types` declare (``Schema/originalNames``) that records of the store still need:
    /// their catalog entries list the earlier name.
    static func pendingRenames(_ types: [any Persistable.Type], in tx: Transaction) throws -> [(
        type: String, old: String, new: String
    )] {
        var pending: [(type: String, old: String, new: String)] = []
        for type in types {
            func renames<T: Persistable>(_ type: T.Type) -> (String, String, [String: String]) {
                (T.schema.typeName, T.schema.primaryKeyField, T.schema.originalNames)
            }
            let (name, primaryKey, originalNames) = renames(type)
            guard !originalNames.isEmpty, let entry = try tx.catalogEntry(named: name) else { continue }
            if let old = originalNames[primaryKey] {
                throw LodeError.schemaMismatch(
                    type: name,
                    reason:
                        "its primary key \(primaryKey) cannot be renamed from \(old) by originalNames: write a migration that changes the primary key"
                )
            }
            for (new, old) in originalNames.sorted(by: { $0.key < $1.key }) where entry.fields.contains(old) {
                pending.append((name, old, new))
            }
        }
        return pending
    }

    /// Renames the fields `types` declare renamed in the records that still hold the earlier names,
    /// in `tx` (a step of opening, not a migration of the list: it is the types' declaration, and
    /// does nothing once done).
    static func applyDeclaredRenames(_ types: [any Persistable.Type], in tx: WriteTransaction) throws {
        let pending = try pendingRenames(types, in: tx)
        guard !pending.isEmpty else { return }
        let context = MigrationContext(
            tx, name: "declared renames", schemaVersion: try tx.schemaHistory().migrations.count)
        for rename in pending {
            do {
                try context.renameDeclaredField(rename.old, to: rename.new, in: rename.type)
            } catch {
                throw LodeError.migrationFailed(
                    name: "rename \(rename.type).\(rename.old) to \(rename.new)", reason: "\(error)")
            }
        }
        try context.finish()
    }

    /// ``applyDeclaredRenames(_:in:)`` in a write transaction of its own, when any is pending.
    func applyDeclaredRenames(_ types: [any Persistable.Type]) throws {
        guard !types.isEmpty, try !read({ try Self.pendingRenames(types, in: $0) }).isEmpty else { return }
        guard !configuration.readOnly else { throw LodeError.readOnly(path: path) }
        try write { tx in try Self.applyDeclaredRenames(types, in: tx) }
    }
}
