import Foundation
import LodeStore
import LodeText

import struct LMDB.LMDBError

extension WriteTransaction {
    /// Restores one type from an export, without its Swift type (this is how `lode-dump load` works):
    /// writes the catalog entry `type` describes, stores each record under the key its primary-key
    /// field encodes to, and builds every index from the records exactly as the library would have.
    ///
    /// A type already in the catalog is replaced: its records and index databases are emptied first
    /// (watchers see the type cleared, then the restored objects inserted). With `appending`, the
    /// records are added to the ones an earlier `restore` of the same description stored instead (a
    /// loader restores a large type in several transactions this way, so none holds it all). The
    /// object and entry counts of `type` are ignored. Returns the number of records stored.
    /// - Throws: `LodeError/recordDoesNotDecode(type:key:field:reason:)` for a record that is not a
    ///   CBOR map holding the primary-key field; `LodeError/duplicateKey(type:key:)`,
    ///   `LodeError/uniqueViolation(type:index:value:)` and `LodeError/keyTooLong(type:bytes:)` as
    ///   an insert would; `LodeError/typeInUse(type:)` when this process has the type
    ///   registered (its cached schema would go stale) or the description is not a valid schema. Like
    ///   every error that leaves the write, each rolls the whole transaction back.
    @discardableResult
    public func restore(_ type: StoredType, records: some Sequence<[UInt8]>, appending: Bool = false) throws
        -> Int
    {
        let name = type.name
        try validate(type)
        if registeredTypes[name] != nil || store.hasRegisteredType(named: name) {
            throw LodeError.typeInUse(type: name)
        }
        var fields = Set(type.fields)
        let existing = try catalogEntry(named: name)
        if appending {
            guard let existing, existing.primaryKey == type.primaryKey,
                existing.indexes.map({ [$0.name, $0.fields.joined(separator: ","), "\($0.unique)"] })
                    == type.indexes.map({ [$0.name, $0.fields.joined(separator: ","), "\($0.isUnique)"] })
            else {
                throw LodeError.invalidTypeDescription(
                    type: name,
                    reason: "records can only be appended to a type restored with the same description")
            }
            guard (existing.links ?? []) == type.links.map(Self.linkEntry),
                existing.attachedIndexes ?? [] == Self.restorableTextIndexes(of: type)
            else {
                throw LodeError.invalidTypeDescription(
                    type: name,
                    reason: "records can only be appended to a type restored with the same description")
            }
            fields.formUnion(existing.fields)
        } else if let existing {
            let old = try lmdbWrite.database(named: name, kind: .plain, create: false)
            try lmdbWrite.empty(old)
            for index in existing.indexes {
                let databaseName = CatalogEntry.databaseName(type: name, index: index.name)
                try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
            }
            for link in existing.links ?? [] {
                let databaseName = CatalogEntry.linkDatabaseName(type: name, field: link.field)
                try lmdbWrite.drop(try lmdbWrite.database(named: databaseName, create: false))
            }
            for index in existing.attachedIndexes ?? [] {
                try dropAttachedIndex(type: name, index: index.name)
            }
            pendingChanges.recordClear(type: name)
        }
        let recordsDatabase = try lmdbWrite.database(named: name, kind: .plain)
        let indexDatabases = try type.indexes.map { index in
            try lmdbWrite.database(
                named: CatalogEntry.databaseName(type: name, index: index.name),
                kind: index.isUnique ? .plain : .duplicates)
        }
        let linkDatabases = try type.links.map { link in
            try lmdbWrite.database(named: link.databaseName(of: name), kind: .duplicates)
        }
        // Full-text indexes built by Lode's own tokenizer are built here; one an app's tokenizer
        // built is left out, and built again when the app opens the store.
        let textIndexes = Self.restorableTextIndexes(of: type)
        let textDatabases = try textIndexes.map { index in
            (
                postings: try lmdbWrite.database(
                    named: TextIndexLayout.postingsDatabaseName(type: name, index: index.name), kind: .plain),
                keys: try lmdbWrite.database(
                    named: TextIndexLayout.keysDatabaseName(type: name, index: index.name), kind: .plain),
                tokenizer: Self.knownTokenizers[index.tokenizer]!
            )
        }
        var count = 0
        var shapes: [CatalogEntry.ShapeExample]? = appending ? existing?.shapes : []
        var kinds: [String: [String]]? = appending ? existing?.kinds : [:]
        for record in records {
            count += 1
            let label = "record \(count)"
            let untyped: UntypedRecord
            do {
                untyped = try UntypedRecord(bytes: record, type: type)
            } catch {
                if let length = error.keyLength { throw LodeError.keyTooLong(type: name, bytes: length) }
                throw LodeError.recordDoesNotDecode(
                    type: name, key: label, field: error.field, reason: error.reason)
            }
            fields.formUnion(untyped.fieldNames)
            let primaryKey = untyped.primaryKeyValue
            let key = untyped.primaryKey
            do {
                try lmdbWrite.put(record, forKey: key, in: recordsDatabase, flags: .noOverwrite)
            } catch let error as LMDBError where error.code == .keyExists {
                throw LodeError.duplicateKey(type: name, key: primaryKey.json)
            }
            for (index, database) in zip(type.indexes, indexDatabases) {
                let indexKey: [UInt8]
                do {
                    indexKey = try untyped.indexKey(index)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: name, key: primaryKey.json, field: error.field, reason: error.reason)
                }
                do {
                    try lmdbWrite.put(
                        key, forKey: indexKey, in: database, flags: index.isUnique ? .noOverwrite : [])
                } catch let error as LMDBError where error.code == .keyExists {
                    let values = index.fields.map { untyped.value.value(atPath: $0)?.json ?? "null" }
                    throw LodeError.uniqueViolation(
                        type: name, index: index.name, value: values.joined(separator: ", "))
                }
            }
            for (link, database) in zip(type.links, linkDatabases) {
                let targets: [[UInt8]]
                do {
                    targets = try untyped.linkTargets(link)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: name, key: primaryKey.json, field: error.field, reason: error.reason)
                }
                for target in targets { try lmdbWrite.put(key, forKey: target, in: database) }
            }
            for (index, databases) in zip(textIndexes, textDatabases) {
                try indexText(
                    databases.postings, keys: databases.keys, key: key, before: nil,
                    after: TextDocument.texts(of: untyped.value, fields: index.fields),
                    tokenizer: databases.tokenizer)
            }
            pendingChanges.record(type: name, key: key, existedBefore: false, existsAfter: true)
            CatalogEntry.note(record: record, key: key, shapes: &shapes, kinds: &kinds)
        }
        let entry = CatalogEntry(
            name: name, primaryKey: type.primaryKey,
            indexes: type.indexes.map { .init(name: $0.name, fields: $0.fields, unique: $0.isUnique) },
            fields: fields.sorted(), version: type.version)
        var restored = entry
        restored.history = type.history.map {
            .init(
                schemaVersion: $0.schemaVersion, typeVersion: $0.typeVersion, fields: $0.fields,
                event: $0.event)
        }
        if restored.history?.isEmpty == true { restored.history = existing?.history }
        restored.shapes = shapes
        restored.kinds = kinds
        restored.links = type.links.isEmpty ? nil : type.links.map(Self.linkEntry)
        restored.defaults = type.defaults.isEmpty ? nil : type.defaults.mapValues { Data($0.encoded) }
        restored.attachedIndexes = textIndexes.isEmpty ? nil : textIndexes
        try flushDeferredIndexWrites()
        try writeCatalog(restored)
        return count
    }

    /// The full-text indexes of `type` a restore builds: those of a tokenizer this library has.
    private static func restorableTextIndexes(of type: StoredType) -> [CatalogEntry.AttachedIndexEntry] {
        type.textIndexes.filter { knownTokenizers[$0.tokenizer] != nil }.map {
            CatalogEntry.AttachedIndexEntry(name: $0.name, fields: $0.fields, tokenizer: $0.tokenizer)
        }
    }

    private static func linkEntry(_ link: StoredLink) -> CatalogEntry.LinkEntry {
        .init(field: link.field, target: link.targetTypeName, toMany: link.isToMany, rule: link.rule)
    }

    /// Refuses a description the library could not have written.
    private func validate(_ type: StoredType) throws {
        func refuse(_ reason: String) -> LodeError {
            .invalidTypeDescription(type: type.name, reason: reason)
        }
        guard !type.name.isEmpty, !type.name.hasPrefix("@") else {
            throw refuse(
                "a type name must be non-empty and must not start with @ (the store's own databases)")
        }
        guard !type.primaryKey.isEmpty else { throw refuse("the primary-key field is empty") }
        var names: Set<String> = []
        for index in type.indexes {
            guard !index.name.isEmpty, names.insert(index.name).inserted else {
                throw refuse("index names must be non-empty and distinct (\"\(index.name)\")")
            }
            guard !index.fields.isEmpty else { throw refuse("index \"\(index.name)\" has no fields") }
            guard !index.name.hasPrefix("@") else {
                throw refuse("index \"\(index.name)\" starts with @, which link indexes use")
            }
        }
        var linkFields: Set<String> = []
        for link in type.links {
            guard !link.field.isEmpty, linkFields.insert(link.field).inserted else {
                throw refuse("link fields must be non-empty and distinct (\"\(link.field)\")")
            }
            guard !link.targetTypeName.isEmpty, !link.targetTypeName.hasPrefix("@") else {
                throw refuse("the link on \"\(link.field)\" points at an invalid type name")
            }
            guard !link.rule.isEmpty else { throw refuse("the link on \"\(link.field)\" has no delete rule") }
        }
    }
}
