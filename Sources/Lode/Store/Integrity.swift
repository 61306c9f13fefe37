import Foundation
import LMDB

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
}

extension Transaction {
    /// Checks the store without the app's types: every record decodes as CBOR and is stored under its
    /// own primary key; every index entry points at a record that has that value and every record is
    /// in every index of its type; every named database belongs to the layout the catalog describes.
    public func checkIntegrity() throws -> IntegrityReport {
        var report = IntegrityReport()
        let types = try storedTypes()
        report.types = types.count
        var expectedDatabases: Set<String> = [StoreLayout.meta, StoreLayout.catalog, StoreLayout.changes]
        for type in types {
            expectedDatabases.insert(type.name)
            var records: [[UInt8]: UntypedRecord] = [:]
            for record in try storedRecords(of: type.name) {
                report.records += 1
                let label = "\(type.name) \(KeyDescription.describe(record.key))"
                let untyped: UntypedRecord
                do {
                    untyped = try UntypedRecord(bytes: record.bytes, type: type)
                } catch {
                    report.problems.append(
                        "\(label): " + (error.field.isEmpty ? "" : "field \"\(error.field)\": ")
                            + error.reason)
                    continue
                }
                records[record.key] = untyped
                if untyped.primaryKey != record.key {
                    report.problems.append(
                        "\(label): stored under another key than its \(type.primaryKey) \(untyped.primaryKeyValue.json)"
                    )
                }
            }
            for index in type.indexes {
                let databaseName = CatalogEntry.databaseName(type: type.name, index: index.name)
                expectedDatabases.insert(databaseName)
                let database = try openDatabase(databaseName, kind: index.isUnique ? .plain : .duplicates)
                var expected: [[UInt8]: [[UInt8]]] = [:]
                for (key, record) in records {
                    do {
                        expected[try record.indexKey(index), default: []].append(key)
                    } catch {
                        report.problems.append(
                            "\(type.name) \(KeyDescription.describe(key)): its \(index.name) value does not encode: \(error.reason)"
                        )
                    }
                }
                for entry in try lmdb.entries(in: database) {
                    report.indexEntries += 1
                    let target = "\(type.name) \(KeyDescription.describe(entry.value))"
                    if var keys = expected[entry.key], let found = keys.firstIndex(of: entry.value) {
                        keys.remove(at: found)
                        expected[entry.key] = keys.isEmpty ? nil : keys
                    } else if records[entry.value] == nil {
                        report.problems.append(
                            "index \(databaseName): entry \(KeyDescription.describe(entry.key)) points at \(target), which does not exist"
                        )
                    } else {
                        report.problems.append(
                            "index \(databaseName): entry \(KeyDescription.describe(entry.key)) points at \(target), whose \(index.fields.joined(separator: ", ")) differ"
                        )
                    }
                }
                for (indexKey, keys) in expected.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                    for key in keys {
                        report.problems.append(
                            "index \(databaseName): \(type.name) \(KeyDescription.describe(key)) is missing (value \(KeyDescription.describe(indexKey)))"
                        )
                    }
                }
            }
        }
        let environment = lmdb.environment
        for entry in try lmdb.entries(in: environment.mainDatabase) {
            let name = String(decoding: entry.key, as: UTF8.self)
            if !expectedDatabases.contains(name) {
                report.problems.append("database \"\(name)\" is not part of the layout the catalog describes")
            }
        }
        return report
    }
}
