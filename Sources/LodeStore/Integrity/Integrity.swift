import Foundation
import LMDB
import LodeCodec

/// What an integrity check of a store found.
public struct IntegrityReport: Sendable {
    /// Each problem, one readable line naming the database, the object and what is wrong.
    public var problems: [String] = []
    /// How many records were read.
    public var records = 0
    /// How many index entries were compared.
    public var indexEntries = 0
    /// How many types the catalog lists.
    public var types = 0
    /// Indexes whose contents were not checked, named: full-text indexes, when the process never
    /// declared one and opened no store for a tool (the full-text module checks them once it is in
    /// use). Their databases were checked to exist.
    public var unchecked: [String] = []
}

extension Transaction {
    /// Checks the store without the app's types: every record decodes as the library's readers read
    /// it (one CBOR item of definite lengths, a map of text field names each used once) and is stored
    /// under its own primary key; every link points at an object that exists and its inverse index agrees with
    /// the records; every record is one the type's history explains — a definite-length map whose
    /// top-level fields are ones the type's records have had, in a sequence they were written with,
    /// each holding a kind of value that field has held (as far as the catalog lists them); every index
    /// entry points at a record that has that value and every record is in every index of its type;
    /// every named database belongs to the layout the catalog describes.
    ///
    /// - Complexity: O(*N* (1 + *i*) log *N*) for *N* records with *i* indexes each: every record is read and
    ///   its index keys looked up, every index entry checked against its record.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails; what is wrong with the data is in the report, not thrown.
    public func checkIntegrity() throws -> IntegrityReport {
        var report = IntegrityReport()
        let types = try storedTypes()
        report.types = types.count
        var expectedDatabases: Set<String> = [
            StoreLayout.meta, StoreLayout.catalog, StoreLayout.changes, StoreLayout.history,
        ]
        for type in types {
            expectedDatabases.insert(type.name)
            var records: [[UInt8]: UntypedRecord] = [:]
            // Records that exist but do not read (their problem is reported once, by key): an index
            // entry or a link pointing at one points at something that exists.
            var unreadable: Set<[UInt8]> = []
            let entry = try catalogEntry(named: type.name)
            var stored: [StoredRecord] = []
            try lmdb.forEachEntry(
                in: try recordsDatabase(of: type.name),
                broken: { error in
                    // A sealed record that does not open: counted and reported by its stored key.
                    report.records += 1
                    report.problems.append(
                        "\(type.name) stored under \(KeyDescription.describe(error.sealedEntry?.key ?? [])): "
                            + "the sealed record does not open with the store's key (damaged, or moved from another key or type)"
                    )
                },
                { entry in
                    stored.append(StoredRecord(key: entry.key, bytes: entry.value))
                    return true
                })
            for record in stored {
                report.records += 1
                let label = "\(type.name) \(KeyDescription.describe(record.key))"
                // Read as the library reads it: a record that does not is reported once, for why.
                let untyped: UntypedRecord
                do {
                    untyped = try UntypedRecord(bytes: record.bytes, type: type)
                } catch {
                    report.problems.append(
                        "\(label): " + (error.field.isEmpty ? "" : "field \"\(error.field)\": ")
                            + error.reason)
                    unreadable.insert(record.key)
                    continue
                }
                if let entry, let problem = Self.unexplained(record.bytes, by: entry) {
                    report.problems.append("\(label): \(problem)")
                }
                records[record.key] = untyped
                if untyped.primaryKey != record.key {
                    report.problems.append(
                        "\(label): its \(type.primaryKey) is \(untyped.primaryKeyValue.json), not the key it is stored under"
                    )
                }
            }
            for index in type.indexes {
                let databaseName = CatalogEntry.databaseName(type: type.name, index: index.name)
                expectedDatabases.insert(databaseName)
                let database = try openDatabase(databaseName, kind: index.isUnique ? .plain : .duplicates)
                // Index value → the keys of the records that have it. Sets, changed in place: an
                // index with few values (a flag) has thousands of records under one value, and
                // copying or scanning that list for every entry made the check quadratic.
                var expected: [[UInt8]: Set<[UInt8]>] = [:]
                for (key, record) in records {
                    do {
                        expected[database.walkedKey(try record.indexKey(index)), default: []].insert(key)
                    } catch {
                        report.problems.append(
                            "\(type.name) \(KeyDescription.describe(key)): its \(index.name) value does not encode: \(error.reason)"
                        )
                    }
                }
                try lmdb.forEachEntry(in: database) { entry in
                    report.indexEntries += 1
                    let target = "\(type.name) \(KeyDescription.describe(entry.value))"
                    if expected[entry.key]?.remove(entry.value) != nil {
                        if expected[entry.key]?.isEmpty == true { expected[entry.key] = nil }
                    } else if unreadable.contains(entry.value) {
                        return true
                    } else if records[entry.value] == nil {
                        report.problems.append(
                            "index \(databaseName): entry \(KeyDescription.describe(entry.key)) points at \(target), which does not exist"
                        )
                    } else {
                        report.problems.append(
                            "index \(databaseName): entry \(KeyDescription.describe(entry.key)) points at \(target), whose \(index.fields.joined(separator: ", ")) differ"
                        )
                    }
                    return true
                }
                for (indexKey, keys) in expected.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                    for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                        report.problems.append(
                            "index \(databaseName): \(type.name) \(KeyDescription.describe(key)) is missing (value \(KeyDescription.describe(indexKey)))"
                        )
                    }
                }
            }
            for link in type.links {
                let databaseName = link.databaseName(of: type.name)
                expectedDatabases.insert(databaseName)
                try checkLink(link, of: type.name, records: records, database: databaseName, into: &report)
            }
            let inspector = AttachedIndexInspection.inspector
            for index in type.textIndexes {
                expectedDatabases.formUnion(
                    CatalogEntry.attachedIndexDatabaseNames(type: type.name, index: index.name))
                if let inspector {
                    let check = try inspector.check(
                        index, of: type.name, records: records, unreadable: unreadable, in: self)
                    report.problems += check.problems
                    report.indexEntries += check.entries
                } else {
                    report.unchecked.append("full-text index \(index.name) of \(type.name)")
                }
            }
        }
        let environment = lmdb.environment
        for entry in try lmdb.allEntries(in: environment.mainDatabase) {
            let name = String(decoding: entry.key, as: UTF8.self)
            if !expectedDatabases.contains(name) && !StoreLayout.isSyncDatabase(name) {
                report.problems.append("database \"\(name)\" is not part of the layout the catalog describes")
            }
        }
        return report
    }

    /// Compares the inverse index of `link` with the records, and finds links whose target is missing.
    private func checkLink(
        _ link: StoredLink, of type: String, records: [[UInt8]: UntypedRecord], database name: String,
        into report: inout IntegrityReport
    ) throws {
        let database = try openDatabase(name, kind: .duplicates)
        let targets: Database?
        do {
            targets =
                try catalogEntry(named: link.targetTypeName) == nil
                ? nil : try openDatabase(link.targetTypeName, kind: .plain)
        }
        // Target key → the keys of the records that link to it.
        var expected: [[UInt8]: Set<[UInt8]>] = [:]
        for (key, record) in records.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let label = "\(type) \(KeyDescription.describe(key))"
            let linked: [[UInt8]]
            do {
                linked = try record.linkTargets(link)
            } catch {
                report.problems.append("\(label): link \"\(link.field)\": \(error.reason)")
                continue
            }
            for target in linked {
                expected[database.walkedKey(target), default: []].insert(key)
                if try targets.map({ try !lmdb.contains(target, in: $0) }) ?? true {
                    report.problems.append(
                        "\(label): link \"\(link.field)\" points at \(link.targetTypeName) \(KeyDescription.describe(target)), which does not exist"
                    )
                }
            }
        }
        try lmdb.forEachEntry(in: database) { entry in
            report.indexEntries += 1
            if expected[entry.key]?.remove(entry.value) != nil {
                if expected[entry.key]?.isEmpty == true { expected[entry.key] = nil }
            } else {
                let source = "\(type) \(KeyDescription.describe(entry.value))"
                report.problems.append(
                    "link index \(name): entry \(KeyDescription.describe(entry.key)) says \(source) links to it, "
                        + (records[entry.value] == nil
                            ? "but \(source) does not exist" : "but its \(link.field) does not")
                )
            }
            return true
        }
        for (target, keys) in expected.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                report.problems.append(
                    "link index \(name): \(type) \(KeyDescription.describe(key)) links to \(link.targetTypeName) \(KeyDescription.describe(target)) but the entry is missing"
                )
            }
        }
    }

    /// What in `record` the type's catalog entry cannot explain, or nil.
    static func unexplained(_ record: [UInt8], by entry: CatalogEntry) -> String? {
        let fields: RecordNames.Fields?
        do {
            fields = try record.withUnsafeBytes { try RecordNames.fields($0) }
        } catch {
            return nil  // not readable: the decoding check (run first) says so
        }
        guard let fields else {
            return "not a definite-length map of text field names, which no version of Lode writes"
        }
        let known = Set(entry.fields)
        if let unknown = fields.names.first(where: { !known.contains($0) }) {
            return
                "field \"\(unknown)\" is not one the type's records have ever had (they had: \(entry.fields.joined(separator: ", ")))"
        }
        if let shapes = entry.shapes, !shapes.contains(where: { $0.shape == fields.shape }) {
            return
                "its fields in this order (\(fields.names.joined(separator: ", "))) are not a sequence the type's records were written with"
        }
        if let kinds = entry.kinds {
            for (name, kind) in zip(fields.names, fields.kinds) where kinds[name]?.contains(kind.name) != true
            {
                let held = kinds[name].map { $0.joined(separator: " or ") } ?? "nothing recorded"
                return "field \"\(name)\" holds \(kind.name), a kind of value it never held (it held \(held))"
            }
        }
        return nil
    }
}
