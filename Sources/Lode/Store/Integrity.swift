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

extension CBORValue: Encodable {
    /// Encodes the value as the Swift value that wrote it would encode: so ``KeyEncoder`` gives a
    /// record's fields the key bytes the library gave them (dates, UUIDs, URLs and decimals included).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .unsigned(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .negative(let value):
            var container = encoder.singleValueContainer()
            guard value <= UInt64(Int64.max) else {
                throw EncodingError.invalidValue(
                    self, .init(codingPath: encoder.codingPath, debugDescription: "below Int64.min"))
            }
            try container.encode(-1 - Int64(value))
        case .bytes(let bytes):
            var container = encoder.singleValueContainer()
            try container.encode(Data(bytes))
        case .text(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .map(let entries):
            var container = encoder.container(keyedBy: FieldKey.self)
            for entry in entries {
                let name: String
                if case .text(let text) = entry.key { name = text } else { name = entry.key.json }
                try container.encode(entry.value, forKey: FieldKey(stringValue: name))
            }
        case .tagged(let tag, let value):
            var container = encoder.singleValueContainer()
            switch (tag, value) {
            case (1, _) where value.number != nil:
                try container.encode(Date(timeIntervalSince1970: value.number!))
            case (40001, _) where value.number != nil:
                try container.encode(Date(timeIntervalSinceReferenceDate: value.number!))
            case (37, .bytes(let bytes)) where bytes.count == 16:
                try container.encode(UUID(uuidString: String(json.dropFirst().dropLast()))!)
            case (32, .text(let text)):
                try container.encode(text)
            case (4, _):
                guard let decimal = Decimal(string: json) else {
                    throw EncodingError.invalidValue(
                        self, .init(codingPath: encoder.codingPath, debugDescription: "a malformed decimal"))
                }
                try container.encode(decimal)
            default:
                try container.encode(value)
            }
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .null, .simple:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .float(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    /// The value at a dotted field path (`address.city`), or nil.
    public func value(atPath path: String) -> CBORValue? {
        var current: CBORValue? = self
        for part in path.split(separator: ".") { current = current?[String(part)] }
        return current
    }
}

private struct FieldKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
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
            var values: [[UInt8]: CBORValue] = [:]
            for record in try storedRecords(of: type.name) {
                report.records += 1
                let label = "\(type.name) \(KeyDescription.describe(record.key))"
                let value: CBORValue
                do {
                    value = try CBORValue(decoding: record.bytes)
                } catch {
                    report.problems.append("\(label): the record is not CBOR: \(error.reason)")
                    continue
                }
                guard case .map = value else {
                    report.problems.append("\(label): the record is not a CBOR map")
                    continue
                }
                values[record.key] = value
                guard let primaryKey = value.value(atPath: type.primaryKey) else {
                    report.problems.append(
                        "\(label): the record has no primary key field \"\(type.primaryKey)\"")
                    continue
                }
                if let encoded = try? KeyEncoder().encode(primaryKey), encoded != record.key {
                    report.problems.append(
                        "\(label): stored under another key than its \(type.primaryKey) \(primaryKey.json)")
                }
            }
            for index in type.indexes {
                let databaseName = CatalogEntry.databaseName(type: type.name, index: index.name)
                expectedDatabases.insert(databaseName)
                let database = try openDatabase(databaseName, kind: index.isUnique ? .plain : .duplicates)
                var expected: [[UInt8]: [[UInt8]]] = [:]
                for (key, value) in values {
                    var bytes: [UInt8] = []
                    do {
                        for field in index.fields {
                            try KeyEncoder().append(value.value(atPath: field) ?? .null, to: &bytes)
                        }
                    } catch {
                        report.problems.append(
                            "\(type.name) \(KeyDescription.describe(key)): its \(index.name) value does not encode: \(error)"
                        )
                        continue
                    }
                    expected[IndexKeyLimit.stored(bytes), default: []].append(key)
                }
                for entry in try lmdb.entries(in: database) {
                    report.indexEntries += 1
                    let target = "\(type.name) \(KeyDescription.describe(entry.value))"
                    if var keys = expected[entry.key], let found = keys.firstIndex(of: entry.value) {
                        keys.remove(at: found)
                        expected[entry.key] = keys.isEmpty ? nil : keys
                    } else if values[entry.value] == nil {
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
