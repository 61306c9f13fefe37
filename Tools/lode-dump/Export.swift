// `export` writes a store as a Lode ndjson export; `load` restores one (or a raw dump).
import Foundation
import Lode
import LodeInspection

/// The version of the ndjson export layout this tool writes and reads.
/// The store formats an export may carry (the library reads them).
let readableFormats = Store.supportedFormatVersions

/// `export`: the store (or the named types) as ndjson, from one snapshot: a header line, then per
/// type a `{"type": …}` line with its catalog entry followed by one line per object carrying the
/// record's exact bytes (`record`, base64 CBOR: what `load` restores) and its readable JSON
/// (`object`), then an `{"end": …}` line with the totals, so a truncated export is refused.
func export(_ path: String, types names: [String]) throws {
    let store = try openStore(path)
    let format = try meta(store)["format"]?.number.flatMap { Int(exactly: $0) } ?? 0
    var output = Output()
    defer { output.flush() }
    var progress = Progress("exporting")
    defer { progress.finish() }
    try store.read { tx in
        let all = try tx.storedTypes()
        for name in names where !all.contains(where: { $0.name == name }) {
            throw LodeError.typeNotFound(name)
        }
        let chosen = names.isEmpty ? all : all.filter { names.contains($0.name) }
        let version = tx.version  // the snapshot this export reads
        let history = try tx.schemaHistory()
        output.write(
            "{\"lode\":\"export\",\"exportVersion\":\(exportVersion),\"format\":\(format),"
                + "\"version\":\(version),\"types\":\(chosen.count),\"schemaVersion\":\(history.version),"
                + "\"migrations\":[\(history.migrations.map(quoted).joined(separator: ","))]}\n")
        var total = 0
        for type in chosen {
            output.write("{\"type\":\(typeJSON(type))}\n")
            var start: [UInt8]?
            while true {
                let batch = try tx.storedRecords(of: type.name, from: start, limit: 1000)
                for record in batch {
                    // An export that `load` would refuse is no backup: stop at the first such record
                    // (the export then has no end line, so `load` refuses it whole).
                    let readable = try record.checkRestorable(as: type).json
                    progress.advance()
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

/// The record lines after a type line, read as `restore` asks for them. A line that is not a record
/// ends them and is kept for the caller; a line that does not decode stops them with the error
/// kept (a sequence cannot throw), which the caller throws so the write rolls back.
private final class RecordLines: Sequence, IteratorProtocol {
    private let lines: LineReader
    private var progress: Progress
    var following: ExportLine?
    var failure: (any Error)?
    private(set) var count = 0

    init(_ lines: LineReader, progress: Progress) {
        self.lines = lines
        self.progress = progress
    }

    /// True once the type's records ended (at the next line that is not a record, an error, or the
    /// end of the input).
    private(set) var isFinished = false

    func next() -> [UInt8]? {
        guard following == nil, failure == nil, !isFinished else { return nil }
        defer { if following != nil || failure != nil { isFinished = true } }
        while let line = lines.next() {
            if line.allSatisfy(\.isWhitespace) { continue }
            do {
                switch try decode(line, number: lines.number) {
                case .record(let bytes):
                    count += 1
                    progress.advance()
                    return bytes
                case let other:
                    following = other
                    return nil
                }
            } catch {
                failure = error
                return nil
            }
        }
        isFinished = true
        return nil
    }

    var progressState: Progress { progress }
}

/// How many records of an export or entries of a raw dump one transaction of `load` writes: memory
/// stays bounded by a batch, whatever the size of the input. `LODE_DUMP_LOAD_BATCH` sets it (tests
/// use small batches).
let loadBatchSize =
    ProcessInfo.processInfo.environment["LODE_DUMP_LOAD_BATCH"].flatMap(Int.init).map {
        max(1, $0)
    } ?? 20_000

/// Restores an export read from `lines` into the store at `path`, streaming, checked against the
/// header, each type's count and the end line. `inPlace`: one write transaction, all or nothing in
/// the store as it is (types in the export replace those of the same name, others stay; memory grows
/// with the export). Otherwise a new store (`load` builds it in a staging directory) filled a batch
/// of records per transaction, so memory stays bounded. Returns how many types and objects were
/// loaded.
func loadExport(from lines: LineReader, into path: String, inPlace: Bool) throws -> (
    types: Int, objects: Int
) {
    let store: Store
    do {
        store = try Store(atPath: path, configuration: StoreConfiguration(encryption: KeyFiles.encryption))
    } catch LodeError.notAStore(_, let reason) {
        throw DumpError(description: "\(path) is not a Lode store (\(reason)); an export loads into a store")
    }
    defer { store.close() }
    if inPlace {
        return try store.write { tx in
            try restoreExport(
                from: lines,
                restore: { type, records, appending in
                    try tx.restore(type, records: records, appending: appending)
                },
                stored: { try tx.storedType(named: $0).objectCount },
                history: { try tx.restoreSchemaHistory($0) })
        }
    }
    return try restoreExport(
        from: lines,
        restore: { type, records, appending in
            try store.write { tx in try tx.restore(type, records: records, appending: appending) }
        },
        stored: { name in try store.read { tx in try tx.storedType(named: name).objectCount } },
        history: { history in try store.write { tx in try tx.restoreSchemaHistory(history) } })
}

/// Reads an export from `lines`, handing each type's records to `restore` in batches (a batch, and
/// whether earlier batches of the type came before it); returns the types and objects restored.
/// After each type, `stored` counts the records the store now holds for it: the load is checked
/// against what was kept, not only against what was read.
private func restoreExport(
    from lines: LineReader, restore: (StoredType, RecordBatch, Bool) throws -> Int,
    stored: (String) throws -> Int, history: (SchemaHistory) throws -> Void
) throws -> (types: Int, objects: Int) {
    var progress = Progress("loading")
    defer { progress.finish() }
    func nextLine() throws -> ExportLine? {
        while let line = lines.next() {
            if !line.allSatisfy(\.isWhitespace) { return try decode(line, number: lines.number) }
        }
        return nil
    }
    var firstLine: Substring?
    while firstLine == nil, let line = lines.next() {
        if !line.allSatisfy(\.isWhitespace) { firstLine = line }
    }
    let object = firstLine.flatMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    guard let firstLine, object?["lode"] != nil,
        case .header(_, let migrations) = try decode(firstLine, number: lines.number)
    else {
        throw DumpError(
            description:
                "export line \(lines.number): not a Lode export (the output of `dump --format ndjson` is for reading; make a loadable one with `lode-dump export STORE`)"
        )
    }
    var types = 0
    var objects = 0
    var line = try nextLine()
    while true {
        switch line {
        case .type(let type)?:
            let records = RecordLines(lines, progress: progress)
            var restored = 0
            var batches = 0
            repeat {
                let batch = RecordBatch(records, limit: loadBatchSize)
                do {
                    restored += try restore(type, batch, batches > 0)
                } catch let error as LodeError {
                    throw DumpError(description: "export line \(lines.number): \(error)")
                }
                batches += 1
                if let failure = records.failure { throw failure }
            } while !records.isFinished
            progress = records.progressState
            guard restored == type.objectCount else {
                throw DumpError(
                    description:
                        "the export is incomplete: \(type.name) has \(restored) of \(type.objectCount) records"
                )
            }
            let kept = try stored(type.name)
            guard kept == restored else {
                throw DumpError(
                    description:
                        "loading \(type.name) read \(restored) records but the store keeps \(kept); nothing was loaded"
                )
            }
            types += 1
            objects += restored
            line = records.following
        case .end(let countedTypes, let countedRecords)?:
            guard countedTypes == types, countedRecords == objects else {
                throw DumpError(
                    description:
                        "export line \(lines.number): the end line counts \(countedTypes) types and \(countedRecords) records; the export holds \(types) and \(objects)"
                )
            }
            while let rest = lines.next() {
                guard rest.allSatisfy(\.isWhitespace) else {
                    throw DumpError(description: "export line \(lines.number): text after the end line")
                }
            }
            try history(SchemaHistory(migrations: migrations))
            return (types, objects)
        case .record?:
            throw DumpError(description: "export line \(lines.number): a record before any type line")
        case .header?:
            throw DumpError(description: "export line \(lines.number): a second header")
        case nil:
            throw DumpError(description: "the export is truncated: it has no end line")
        }
    }
}

/// At most `limit` records of a type, for one transaction.
private struct RecordBatch: Sequence, IteratorProtocol {
    let records: RecordLines
    var limit: Int

    init(_ records: RecordLines, limit: Int) {
        self.records = records
        self.limit = limit
    }

    mutating func next() -> [UInt8]? {
        guard limit > 0 else { return nil }
        limit -= 1
        return records.next()
    }
}
