import Foundation
import Lode
import LodeInspection

// The export format as `load` reads it: kept apart from the store so the loader fuzz target
// (`Fuzz/loader.swift`) compiles it with the library's codec alone.

/// The export format this tool writes and reads.
let exportVersion = 1

/// One line of an export, decoded.
enum ExportLine {
    case header(format: Int, migrations: [String])
    case type(StoredType)
    case record([UInt8])
    case end(types: Int, records: Int)
}

func decode(_ line: Substring, number: Int) throws -> ExportLine {
    func fail(_ what: String) -> DumpError { DumpError(description: "export line \(number): \(what)") }
    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
        throw fail("not a JSON object")
    }
    if object["lode"] != nil {
        guard object["lode"] as? String == "export" else { throw fail("not a Lode export header") }
        guard object["exportVersion"] as? Int == exportVersion else {
            throw fail(
                "export version \(object["exportVersion"] ?? "none"); this tool reads \(exportVersion)")
        }
        guard let format = object["format"] as? Int, readableFormats.contains(format) else {
            throw fail(
                "store format \(object["format"] ?? "none"); this tool reads formats "
                    + "\(readableFormats.lowerBound)–\(readableFormats.upperBound)"
            )
        }
        // Exports written before migrations existed carry none.
        guard let migrations = (object["migrations"] ?? [String]()) as? [String] else {
            throw fail("the header's migrations are not a list of names")
        }
        return .header(format: format, migrations: migrations)
    }
    if let type = object["type"] as? [String: Any] { return .type(try storedType(from: type, fail: fail)) }
    if let encoded = object["record"] as? String {
        guard let bytes = Data(base64Encoded: encoded) else { throw fail("the record is not base64") }
        return .record(Array(bytes))
    }
    if let end = object["end"] as? [String: Any] {
        guard let types = end["types"] as? Int, let records = end["records"] as? Int else {
            throw fail("the end line needs types and records")
        }
        return .end(types: types, records: records)
    }
    throw fail("neither a type, a record nor the end line")
}

/// A catalog entry from its export line.
func storedType(from object: [String: Any], fail: (String) -> DumpError) throws -> StoredType {
    guard let name = object["name"] as? String, let primaryKey = object["primaryKey"] as? String,
        let version = object["version"] as? Int, let objects = object["objects"] as? Int,
        let fields = object["fields"] as? [String], let indexes = object["indexes"] as? [[String: Any]]
    else { throw fail("a type line needs name, primaryKey, version, objects, fields and indexes") }
    let stored = try indexes.map { index in
        guard let indexName = index["name"] as? String, let indexFields = index["fields"] as? [String],
            let unique = index["unique"] as? Bool
        else { throw fail("an index of \(name) needs name, fields and unique") }
        return StoredIndex(name: indexName, fields: indexFields, isUnique: unique)
    }
    var type = StoredType(
        name: name, primaryKey: primaryKey, indexes: stored, fields: fields, version: version,
        objectCount: objects)
    // Exports written before the field history existed carry none.
    guard let history = (object["history"] ?? [[String: Any]]()) as? [[String: Any]] else {
        throw fail("the history of \(name) is not a list")
    }
    type.history = try history.map { event in
        guard let schemaVersion = event["schemaVersion"] as? Int,
            let typeVersion = event["typeVersion"] as? Int,
            let fields = event["fields"] as? [String], let what = event["event"] as? String
        else { throw fail("a history entry of \(name) needs schemaVersion, typeVersion, fields and event") }
        return FieldHistoryEntry(
            schemaVersion: schemaVersion, typeVersion: typeVersion, fields: fields, event: what)
    }
    guard let defaults = (object["defaults"] ?? [String: String]()) as? [String: String] else {
        throw fail("the defaults of \(name) are not an object of base64 values")
    }
    for (field, encoded) in defaults {
        guard let bytes = Data(base64Encoded: encoded), let value = try? CBORValue(decoding: Array(bytes))
        else {
            throw fail("the default of \(name).\(field) is not base64 CBOR")
        }
        type.defaults[field] = value
    }
    // Exports written before links existed carry none.
    guard let links = (object["links"] ?? [[String: Any]]()) as? [[String: Any]] else {
        throw fail("the links of \(name) are not a list")
    }
    type.links = try links.map { link in
        guard let field = link["field"] as? String, let target = link["target"] as? String,
            let toMany = link["toMany"] as? Bool, let rule = link["rule"] as? String
        else { throw fail("a link of \(name) needs field, target, toMany and rule") }
        return StoredLink(field: field, targetTypeName: target, isToMany: toMany, rule: rule)
    }
    // Exports written before full-text indexes existed carry none.
    guard let textIndexes = (object["textIndexes"] ?? [[String: Any]]()) as? [[String: Any]] else {
        throw fail("the full-text indexes of \(name) are not a list")
    }
    type.textIndexes = try textIndexes.map { index in
        guard let indexName = index["name"] as? String, let fields = index["fields"] as? [String],
            let tokenizer = index["tokenizer"] as? String
        else { throw fail("a full-text index of \(name) needs name, fields and tokenizer") }
        return StoredTextIndex(name: indexName, fields: fields, tokenizer: tokenizer)
    }
    return type
}
