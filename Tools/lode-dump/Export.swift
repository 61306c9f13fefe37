// `export` writes a store as a Lode ndjson export; `load` restores one (or a raw dump).
import Foundation
import Lode

/// The version of the ndjson export layout this tool writes and reads.
let exportVersion = 1

/// `export`: the store (or the named types) as ndjson, from one snapshot: a header line, then per
/// type a `{"type": …}` line with its catalog entry followed by one line per object carrying the
/// record's exact bytes (`record`, base64 CBOR: what `load` restores) and its readable JSON
/// (`object`), then an `{"end": …}` line with the totals, so a truncated export is refused.
func export(_ path: String, types names: [String]) throws {
    let store = try openStore(path)
    let format = try meta(store)["format"]?.number.map { Int($0) } ?? 0
    var output = Output()
    defer { output.flush() }
    try store.read { tx in
        let all = try tx.storedTypes()
        for name in names where !all.contains(where: { $0.name == name }) {
            throw LodeError.typeNotFound(name)
        }
        let chosen = names.isEmpty ? all : all.filter { names.contains($0.name) }
        let version = tx.version  // the snapshot this export reads
        output.write(
            "{\"lode\":\"export\",\"exportVersion\":\(exportVersion),\"format\":\(format),"
                + "\"version\":\(version),\"types\":\(chosen.count)}\n")
        var total = 0
        for type in chosen {
            output.write("{\"type\":\(typeJSON(type))}\n")
            var start: [UInt8]?
            while true {
                let batch = try tx.storedRecords(of: type.name, from: start, limit: 1000)
                for record in batch {
                    // An export that `load` would refuse is no backup: stop at the first such record
                    // (the export then has no end line, so `load` refuses it whole).
                    try record.checkRestorable(as: type)
                    let readable = try record.value(type: type.name).json
                    output.write(
                        "{\"record\":\"\(Data(record.bytes).base64EncodedString())\",\"object\":\(readable)}\n"
                    )
                }
                total += batch.count
                guard batch.count == 1000, let last = batch.last else { break }
                start = last.key + [0]
            }
        }
        output.write("{\"end\":{\"types\":\(chosen.count),\"records\":\(total)}}\n")
    }
}

/// Standard output written in large blocks (an export has a line per object).
private struct Output {
    private var buffer: [UInt8] = []

    mutating func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 20 { flush() }
    }

    mutating func flush() {
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// One type of an export with its records, as read back.
struct ExportedType {
    var type: StoredType
    var records: [[UInt8]] = []
}

/// Reads an ndjson export, checking its header, every line and the totals.
func parseExport(_ text: Substring) throws -> [ExportedType] {
    var types: [ExportedType] = []
    var sawHeader = false
    var sawEnd = false
    for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let number = offset + 1
        func fail(_ what: String) -> DumpError { DumpError(description: "export line \(number): \(what)") }
        if line.allSatisfy(\.isWhitespace) { continue }
        guard !sawEnd else { throw fail("text after the end line") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw fail("not a JSON object")
        }
        if !sawHeader {
            guard object["lode"] as? String == "export" else {
                throw fail(
                    "not a Lode export (the output of `dump --format ndjson` is for reading; make a loadable one with `lode-dump export STORE`)"
                )
            }
            guard object["exportVersion"] as? Int == exportVersion else {
                throw fail(
                    "export version \(object["exportVersion"] ?? "none"); this tool reads \(exportVersion)")
            }
            guard let format = object["format"] as? Int, Store.supportedFormatVersions.contains(format) else {
                throw fail(
                    "store format \(object["format"] ?? "none"); this tool reads formats "
                        + "\(Store.supportedFormatVersions.lowerBound)–\(Store.supportedFormatVersions.upperBound)"
                )
            }
            sawHeader = true
        } else if let type = object["type"] as? [String: Any] {
            types.append(ExportedType(type: try storedType(from: type, fail: fail)))
        } else if let encoded = object["record"] as? String {
            guard !types.isEmpty else { throw fail("a record before any type line") }
            guard let bytes = Data(base64Encoded: encoded) else { throw fail("the record is not base64") }
            types[types.count - 1].records.append(Array(bytes))
        } else if let end = object["end"] as? [String: Any] {
            let records = types.reduce(0) { $0 + $1.records.count }
            guard end["types"] as? Int == types.count, end["records"] as? Int == records else {
                throw fail(
                    "the end line counts \(end["types"] ?? "?") types and \(end["records"] ?? "?") records; the export holds \(types.count) and \(records)"
                )
            }
            sawEnd = true
        } else {
            throw fail("neither a type, a record nor the end line")
        }
    }
    guard sawHeader else { throw DumpError(description: "the export on standard input is empty") }
    for exported in types where exported.records.count != exported.type.objectCount {
        throw DumpError(
            description:
                "the export is incomplete: \(exported.type.name) has \(exported.records.count) of \(exported.type.objectCount) records"
        )
    }
    guard sawEnd else { throw DumpError(description: "the export is truncated: it has no end line") }
    return types
}

/// A catalog entry from its export line.
private func storedType(from object: [String: Any], fail: (String) -> DumpError) throws -> StoredType {
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
    return StoredType(
        name: name, primaryKey: primaryKey, indexes: stored, fields: fields, version: version,
        objectCount: objects)
}

/// Restores an export into the store at `path` in one write transaction: every type is complete,
/// with its indexes built from its records, or nothing is written.
func loadExport(_ types: [ExportedType], into path: String) throws -> Int {
    let store: Store
    do {
        store = try Store(atPath: path)
    } catch LodeError.notAStore(_, let reason) {
        throw DumpError(description: "\(path) is not a Lode store (\(reason)); an export loads into a store")
    }
    defer { store.close() }
    return try store.write { tx in
        try types.reduce(0) { total, exported in
            total + (try tx.restore(exported.type, records: exported.records))
        }
    }
}
