// lode-dump: inspects any Lode store without the app's Swift types, read-only.
import Foundation
import Lode
import LodeInspection
import LodeStudio
import StoredQuery

let usage = """
    usage: lode-dump STORE                          summary: format, types, sizes, readers
           lode-dump schema STORE [--json]           the catalog in full
           lode-dump dump STORE TYPE [--format table|json|ndjson] [--where EXPR]
                                     [--sort FIELD[,-FIELD]] [--limit N] [--fields a,b] [--explain]
                                     [--match QUERY [--index NAME]]
                                                     --match: a full-text search, best match first
           lode-dump get STORE TYPE KEY [--as-of VERSION]
                                                     one object by primary key (as it was after
                                                     VERSION, from the store's history)
           lode-dump stats STORE                     per database: depth, pages, entries; full-text
                                                     indexes: terms, postings, size; readers
           lode-dump changes STORE [--since VERSION] [--json]
                                                     the commits: with their values (and --json:
                                                     one JSON object per commit) when the store
                                                     keeps history, else the change log
           lode-dump watch STORE [TYPE] [--where EXPR] [--for SECONDS]
                                                     follow commits of any process (Ctrl-C stops)
           lode-dump check STORE                     integrity of records, indexes and layout
           lode-dump serve STORE [--port N] [--for SECONDS]
                                                     Lode Studio: the store in a browser, on 127.0.0.1,
                                                     at the printed URL (it carries an access token)
           lode-dump raw STORE [--all | -s NAME]     mdb_dump text (byte values) for mdb_load
           lode-dump export STORE [TYPE ...]         a lossless ndjson export (exact records + readable JSON)
           lode-dump load DIR [--force] < DUMP       restore a raw dump or an export into a new store,
                                                     atomically (--force: into a non-empty one)
           lode-dump backup STORE DIR                a consistent copy (DIR new or empty)
           lode-dump compact STORE DIR               a compacting copy
           lode-dump rekey STORE [--new-key-file F | --new-passphrase-file F | --decrypt]
                                                     encrypt, change the key of, or decrypt a store in
                                                     place (nothing may have it open)

    An encrypted store is opened with --key-file FILE (its 32 bytes, or 64 hex digits) or
    --passphrase-file FILE (its first line), before or after the command; never on the command
    line. Copies and backups of an encrypted store stay encrypted; raw dumps show sealed bytes;
    export writes the objects in the clear (keep that file as you would the key).

    EXPR: comparisons (== != < <= > >=) of a field with a number, "text", true, false or null;
          FIELD in [v, …]; FIELD hasPrefix "t"; FIELD contains "t"; and, or, not, parentheses.
          Nested fields are written a.b.
    QUERY: words (all required), OR, -word (excluded), "a phrase", prefix*, parentheses.
    Exit status: 0 done, 1 the store or a record could not be read (or check found problems),
    2 a malformed command line.
    """

/// A malformed command line (exit status 2).
struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// A problem reading the store (exit status 1).
struct DumpError: Error, CustomStringConvertible {
    var description: String
}

/// The parsed command line: positional arguments and `--name value` options.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    init(_ raw: [String], valued: Set<String>, flags allowed: Set<String>) throws {
        var index = 0
        while index < raw.count {
            let argument = raw[index]
            if argument.hasPrefix("-") && argument.count > 1 && Double(argument) == nil {
                if valued.contains(argument) {
                    guard index + 1 < raw.count else {
                        throw UsageError(description: "\(argument) needs a value")
                    }
                    options[argument] = raw[index + 1]
                    index += 2
                    continue
                }
                guard allowed.contains(argument) else {
                    throw UsageError(description: "unknown option \(argument)")
                }
                flags.insert(argument)
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }
}

/// Opens the store read-only (with the key of `--key-file` or `--passphrase-file`, if given). A data
/// file that is not known to be the one Lode left (a copy, a restored backup, a file changed since
/// its last clean close) has its pages checked first, so a damaged file is refused by name before
/// LMDB reads it; one this process checked already (`check`, `serve`) is not checked again.
func openStore(_ path: String) throws -> Store {
    try requireDirectory(path)
    return try Store(
        atPath: path, configuration: StoreConfiguration(readOnly: true, encryption: KeyFiles.encryption))
}

/// The key files of the command line: read once, never echoed.
enum KeyFiles {
    /// The encryption `--key-file` or `--passphrase-file` gives, if any (set by `main` first).
    nonisolated(unsafe) static var encryption: StoreEncryption?

    /// Takes `--key-file F`, `--passphrase-file F` (the store's key) out of `arguments`, and, for
    /// `rekey`, `--new-key-file F`, `--new-passphrase-file F` or `--decrypt` (the new one).
    static func extract(_ arguments: inout [String]) throws -> (new: StoreEncryption?, decrypt: Bool) {
        var new: StoreEncryption?
        var decrypt = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--key-file", "--passphrase-file", "--new-key-file", "--new-passphrase-file":
                guard index + 1 < arguments.count else {
                    throw UsageError(description: "\(argument) needs a file")
                }
                let file = arguments[index + 1]
                arguments.removeSubrange(index...(index + 1))
                let read =
                    argument.hasSuffix("passphrase-file") ? try passphrase(file) : try key(file)
                if argument.hasPrefix("--new") {
                    guard new == nil else { throw UsageError(description: "give one new key or passphrase") }
                    new = read
                } else {
                    guard encryption == nil else {
                        throw UsageError(description: "give one key or passphrase")
                    }
                    encryption = read
                }
            case "--decrypt":
                decrypt = true
                arguments.remove(at: index)
            default:
                index += 1
            }
        }
        return (new, decrypt)
    }

    /// A key file: exactly 32 bytes, or 64 hex digits (a newline after them allowed).
    static func key(_ file: String) throws -> StoreEncryption {
        guard var data = FileManager.default.contents(atPath: file) else {
            throw DumpError(description: "\(file): the key file cannot be read")
        }
        var bytes = Array(data)
        // The copies of the key made here are wiped once the key is in libsodium's guarded memory.
        defer {
            data.resetBytes(in: 0..<data.count)
            bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } }
        }
        if bytes.count != 32 {
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.count == 64, let decoded = KeyText.bytes(text) else {
                throw DumpError(
                    description:
                        "\(file): a key file holds the key's 32 bytes or 64 hex digits, not \(bytes.count) bytes"
                )
            }
            bytes = decoded
        }
        return .key(try StoreKey(bytes: bytes))
    }

    /// A passphrase file: its first line.
    static func passphrase(_ file: String) throws -> StoreEncryption {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw DumpError(description: "\(file): the passphrase file cannot be read")
        }
        let line =
            String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .first.map(String.init) ?? ""
        guard !line.isEmpty else { throw DumpError(description: "\(file): the passphrase file is empty") }
        return .passphrase(line)
    }
}

/// `rekey`: encrypts, changes the key of, or decrypts the store in place, with a progress line on a
/// terminal.
func rekey(_ path: String, to new: StoreEncryption?) throws {
    try requireDirectory(path)
    let terminal = isatty(2) == 1
    try Store.changeEncryption(at: URL(fileURLWithPath: path), from: KeyFiles.encryption, to: new) {
        progress in
        if terminal {
            FileHandle.standardError.write(Data("\r\(progress.copied) of \(progress.total) records".utf8))
        }
    }
    if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    print(
        new == nil
            ? "decrypted \(path)"
            : KeyFiles.encryption == nil ? "encrypted \(path)" : "changed the key of \(path)")
}

/// Throws a one-line error unless `path` is an existing directory.
func requireDirectory(_ path: String) throws {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        throw DumpError(description: "\(path): no such file or directory")
    }
    guard isDirectory.boolValue else {
        throw DumpError(description: "\(path): not a directory (a store is a directory)")
    }
}

func byteCount(_ bytes: Int) -> String {
    ByteCountFormatter.string(fromByteCount: Int64(bytes), countStyle: .binary)
}

/// The `@meta` entries decoded.
func meta(_ store: Store) throws -> [String: CBORValue] {
    try store.read { tx in
        try tx.metaEntries().mapValues { (try? CBORValue(decoding: $0)) ?? .bytes($0) }
    }
}

func summary(_ path: String) throws {
    let store = try openStore(path)
    let info = try store.fileInfo()
    let meta = try meta(store)
    let types = try store.read { tx in try tx.storedTypes() }
    let dataFile = URL(fileURLWithPath: path).appendingPathComponent("data.mdb").path
    let fileSize = (try? FileManager.default.attributesOfItem(atPath: dataFile)[.size] as? Int) ?? 0
    let used = info.usedBytes
    print("store      \(path)")
    print("format     \(meta["format"].map(cell) ?? "?")   created \(meta["created"].map(cell) ?? "?")")
    print(
        "file       \(byteCount(fileSize))   map \(byteCount(info.mapSize)) (\(used * 100 / max(info.mapSize, 1))% used)"
    )
    let free = try store.freePageCount()
    print("free       \(free) pages (\(byteCount(free * info.pageSize)), reused before the file grows)")
    print("last txn   \(info.lastCommittedVersion)")
    let history = try store.read { try $0.schemaHistory() }
    print(
        "schema     version \(history.version)\(history.migrations.last.map { " (last migration: \($0))" } ?? "")"
    )
    let readers = try store.readers()
    let stale = readers.filter { !$0.processIsAlive }.count
    print(
        "readers    \(readers.count) of \(info.maxReaders)\(stale > 0 ? " (\(stale) stale: their processes are gone)" : "")"
    )
    // A reader far behind keeps every page it sees from being reused: the file grows until it lets go.
    if let oldest = readers.filter({ $0.version != nil }).min(by: { $0.version! < $1.version! }),
        let version = oldest.version
    {
        print(
            "oldest     version \(version) (\(info.lastCommittedVersion - version) behind), held by pid "
                + "\(oldest.processID)\(oldest.processIsAlive ? "" : " (gone)")")
    }
    print("types      \(types.count)")
    for type in types {
        print(
            "  \(type.name): \(type.objectCount) objects, primary key \(type.primaryKey), version \(type.version)"
        )
        for index in type.indexes {
            print(
                "    index \(index.name)\(index.isUnique ? " (unique)" : ""): \(index.fields.joined(separator: ", "))"
            )
        }
        for link in type.links {
            print(
                "    link \(link.field) → \(link.targetTypeName)\(link.isToMany ? " (to-many)" : ""), on delete \(link.rule)"
            )
        }
        for index in type.textIndexes {
            print(
                "    text index \(index.name): \(index.fields.joined(separator: ", ")) (\(index.tokenizer))")
        }
    }
}

func schema(_ path: String, json: Bool) throws {
    let store = try openStore(path)
    let (history, types) = try store.read { tx in (try tx.schemaHistory(), try tx.storedTypes()) }
    if json {
        print(
            "{\"schemaVersion\":\(history.version),\"migrations\":[\(history.migrations.map(quoted).joined(separator: ","))],"
                + "\"types\":[\(types.map(typeJSON).joined(separator: ","))]}")
        return
    }
    print("schema version \(history.version)")
    for (number, name) in history.migrations.enumerated() { print("  migration \(number + 1)  \(name)") }
    for type in types {
        print("\(type.name)  (version \(type.version), \(type.objectCount) objects)")
        print("  primary key  \(type.primaryKey)")
        print("  fields       \(type.fields.joined(separator: ", "))")
        for index in type.indexes {
            print(
                "  index        \(index.name)\(index.isUnique ? " unique" : ""): \(index.fields.joined(separator: ", ")) (\(index.entryCount) entries)"
            )
        }
        for link in type.links {
            print(
                "  link         \(link.field) → \(link.targetTypeName), \(link.isToMany ? "to-many" : "to-one"), on delete \(link.rule) (\(link.entryCount) entries)"
            )
        }
        for index in type.textIndexes {
            print(
                "  text index   \(index.name): \(index.fields.joined(separator: ", ")), tokenizer \(index.tokenizer) (\(index.documentCount) documents, \(index.tokenCount) tokens)"
            )
        }
        for event in type.history {
            print(
                "  history      schema \(event.schemaVersion), type version \(event.typeVersion), \(event.event): \(event.fields.joined(separator: ", "))"
            )
        }
    }
}

/// One catalog entry as a JSON object (`schema --json` and the type lines of an export).
func typeJSON(_ type: StoredType) -> String {
    // Each default as base64 CBOR, the bytes the catalog keeps.
    let defaults = type.defaults.sorted { $0.key < $1.key }.map { field, value in
        "\(quoted(field)):\(quoted(Data(value.encoded).base64EncodedString()))"
    }
    let history = type.history.map { event in
        "{\"schemaVersion\":\(event.schemaVersion),\"typeVersion\":\(event.typeVersion),"
            + "\"fields\":[\(event.fields.map(quoted).joined(separator: ","))],\"event\":\(quoted(event.event))}"
    }
    let indexes = type.indexes.map { index in
        "{\"name\":\(quoted(index.name)),\"fields\":[\(index.fields.map(quoted).joined(separator: ","))],"
            + "\"unique\":\(index.isUnique),\"entries\":\(index.entryCount)}"
    }
    let links = type.links.map { link in
        "{\"field\":\(quoted(link.field)),\"target\":\(quoted(link.targetTypeName)),\"toMany\":\(link.isToMany),"
            + "\"rule\":\(quoted(link.rule)),\"entries\":\(link.entryCount)}"
    }
    let textIndexes = type.textIndexes.map { index in
        "{\"name\":\(quoted(index.name)),\"fields\":[\(index.fields.map(quoted).joined(separator: ","))],"
            + "\"tokenizer\":\(quoted(index.tokenizer)),\"documents\":\(index.documentCount),\"tokens\":\(index.tokenCount)}"
    }
    return
        "{\"name\":\(quoted(type.name)),\"primaryKey\":\(quoted(type.primaryKey)),\"version\":\(type.version),"
        + "\"objects\":\(type.objectCount),\"fields\":[\(type.fields.map(quoted).joined(separator: ","))],"
        + "\"indexes\":[\(indexes.joined(separator: ","))],\"history\":[\(history.joined(separator: ","))],"
        + "\"defaults\":{\(defaults.joined(separator: ","))},\"links\":[\(links.joined(separator: ","))],"
        + "\"textIndexes\":[\(textIndexes.joined(separator: ","))]}"
}

func quoted(_ text: String) -> String {
    CBORValue.text(text).json
}

/// Text for a table cell: text, dates, UUIDs and URLs without JSON quotes.
func cell(_ value: CBORValue?) -> String {
    guard let value else { return "" }
    if case .text(let text) = value { return text }
    let json = value.json
    if case .tagged = value, json.hasPrefix("\""), json.hasSuffix("\""), json.count >= 2 {
        return String(json.dropFirst().dropLast())
    }
    return json
}

func dump(_ path: String, type: String, arguments: Arguments) throws {
    let store = try openStore(path)
    let format = arguments.options["--format"] ?? (isatty(1) == 1 ? "table" : "ndjson")
    guard ["table", "json", "ndjson"].contains(format) else {
        throw UsageError(description: "--format takes table, json or ndjson, not \(format)")
    }
    var limit = Int.max
    if let text = arguments.options["--limit"] {
        guard let value = Int(text), value >= 0 else {
            throw UsageError(description: "--limit needs a count, got \(text)")
        }
        limit = value
    }
    let filter = try arguments.options["--where"].map { try WhereExpression.parse($0) }
    let sortKeys: [(field: String, ascending: Bool)] = (arguments.options["--sort"] ?? "").split(
        separator: ","
    ).map {
        $0.hasPrefix("-") ? (String($0.dropFirst()), false) : (String($0), true)
    }
    if arguments.options["--index"] != nil && arguments.options["--match"] == nil {
        throw UsageError(description: "--index names the full-text index of --match, which is missing")
    }
    let search = try arguments.options["--match"].map { text in
        do {
            return try TextQuery(text)
        } catch {
            throw UsageError(description: "--match: \(error)")
        }
    }
    let records = try store.read { tx -> [StoredRecord] in
        if let search {
            // Best match first; --where filters the matches, --sort orders them instead.
            let matches = try tx.search(search, in: type, index: arguments.options["--index"])
            if arguments.flags.contains("--explain") {
                FileHandle.standardError.write(
                    Data(
                        "plan: full-text search, \(matches.count) match(es), ranked by relevance (BM25)\n"
                            .utf8))
            }
            return matches.map(\.record)
        }
        let storedType = try tx.storedType(named: type)
        let (chosen, description) = try plan(filter, type: storedType, in: tx)
        if arguments.flags.contains("--explain") {
            FileHandle.standardError.write(Data("plan: \(description)\n".utf8))
        }
        return try candidates(chosen, type: type, transaction: tx) ?? tx.storedRecords(of: type)
    }
    var objects: [CBORValue] = []
    for record in records {
        let value = try record.value(type: type)
        if let filter, !filter.matches(value) { continue }
        objects.append(value)
        if sortKeys.isEmpty && objects.count >= limit { break }
    }
    if !sortKeys.isEmpty {
        objects = objects.enumerated().sorted { lhs, rhs in
            for key in sortKeys {
                let order = compare(
                    lhs.element.value(atPath: key.field), rhs.element.value(atPath: key.field))
                if order != 0 { return key.ascending ? order < 0 : order > 0 }
            }
            return lhs.offset < rhs.offset
        }.map(\.element)
        objects = Array(objects.prefix(limit))
    }
    let fields = arguments.options["--fields"].map { $0.split(separator: ",").map(String.init) }
    func projected(_ value: CBORValue) -> CBORValue {
        guard let fields else { return value }
        return .map(
            fields.compactMap { name in value.value(atPath: name).map { .init(key: .text(name), value: $0) } }
        )
    }
    switch format {
    case "json":
        print("[" + objects.map { projected($0).json }.joined(separator: ",\n ") + "]")
    case "ndjson":
        for object in objects { print(projected(object).json) }
    default:
        let columns = try fields ?? store.read { tx in try tx.storedType(named: type).fields }
        let rows = objects.map { object in columns.map { cell(object.value(atPath: $0)) } }
        let widths = columns.indices.map { column in
            min(40, ([columns[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0)
        }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { text, width in
                let clipped = text.count > width ? String(text.prefix(width - 1)) + "…" : text
                return clipped.padding(toLength: width, withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        print(line(columns))
        print(line(widths.map { String(repeating: "-", count: $0) }))
        for row in rows { print(line(row)) }
        print("(\(rows.count) \(rows.count == 1 ? "object" : "objects"))")
    }
}

/// `check`: prints each problem; exit status 0 only when there are none.
func check(_ path: String) throws -> Int32 {
    // The pages first, read by the check itself: LMDB would walk a damaged page blindly.
    try requireDirectory(path)
    let pages = try Store.checkPages(atPath: path)
    if !pages.isClean {
        for problem in pages.problems { print("data.mdb: \(problem)") }
        print(
            "\(pages.problems.count)\(pages.truncated ? "+" : "") page \(pages.problems.count == 1 ? "problem" : "problems"): the file is damaged; its records were not read"
        )
        return 1
    }
    let store = try openStore(path)
    let report = try store.read { tx in try tx.checkIntegrity() }
    for problem in report.problems { print(problem) }
    let summary =
        "\(report.types) types, \(report.records) records, \(report.indexEntries) index entries checked"
    if report.problems.isEmpty {
        print("ok: \(summary)")
        return 0
    }
    print("\(report.problems.count) \(report.problems.count == 1 ? "problem" : "problems"): \(summary)")
    return 1
}

func get(_ path: String, type: String, key: String, asOf version: Int?) throws {
    let store = try openStore(path)
    // The key's Swift type is unknown: try it as each kind of key a store can have.
    var candidates: [[UInt8]] = []
    let encoder = KeyEncoder()
    if let number = Int(key) { candidates.append(try encoder.encode(number)) }
    if let uuid = UUID(uuidString: key) { candidates.append(try encoder.encode(uuid)) }
    candidates.append(try encoder.encode(key))
    let found = try store.read { tx in
        try candidates.lazy.compactMap { candidate in
            if let version { return try tx.storedRecord(of: type, key: candidate, asOf: version) }
            return try tx.storedRecord(of: type, key: candidate)
        }.first
    }
    guard let found else {
        throw DumpError(
            description: "\(type): no object with primary key \(key)"
                + (version.map { " at version \($0)" } ?? ""))
    }
    print(try found.value(type: type).json)
}

func stats(_ path: String) throws {
    let store = try openStore(path)
    let statistics = try store.inspect { tx in
        try ([nil] + tx.databaseNames().map(Optional.some)).map { try tx.statistics(ofDatabase: $0) }
    }
    print(
        "database".padding(toLength: 32, withPad: " ", startingAt: 0)
            + "  depth  branch    leaf  overflow   entries  bytes")
    for stat in statistics {
        let label = stat.name ?? "(main)"
        print(
            label.padding(toLength: max(32, label.count), withPad: " ", startingAt: 0)
                + String(
                    format: "  %5d  %6d  %6d  %8d  %8d  %@", stat.depth, stat.branchPages, stat.leafPages,
                    stat.overflowPages, stat.entries, byteCount(stat.bytes)))
    }
    let textIndexes = try store.read { tx in
        try tx.storedTypes().flatMap { type in
            try type.textIndexes.map { index in
                (type.name, index, try tx.textIndexReport(named: index.name, of: type.name))
            }
        }
    }
    for (type, index, report) in textIndexes {
        print(
            "\nfull-text index \(type).\(index.name) (\(index.fields.joined(separator: ", ")); \(index.tokenizer)): "
                + "\(index.documentCount) documents, \(index.tokenCount) tokens, \(report.terms) terms, "
                + "\(report.postings) postings in \(report.blocks) blocks, \(byteCount(report.bytes))")
        if !report.commonTerms.isEmpty {
            print(
                "  most common: "
                    + report.commonTerms.map { "\($0.term) (\($0.documents))" }.joined(separator: ", "))
        }
    }
    let info = try store.fileInfo()
    print(
        "\nreaders: \(info.readerSlotsUsed) slots used of \(info.maxReaders); last txn \(info.lastCommittedVersion)"
    )
    for reader in try store.readers() {
        let pinned =
            reader.version.map { "pins version \($0) (\(info.lastCommittedVersion - $0) behind)" } ?? "idle"
        print(
            "  pid \(reader.processID)\(reader.processIsAlive ? "" : " (stale: the process is gone)"): \(pinned)"
        )
    }
}

func changes(_ path: String, since: Int, json: Bool) throws {
    let store = try openStore(path)
    if try store.read({ try $0.keepsHistory }) {
        try historyChanges(store, since: since, json: json)
        return
    }
    guard !json else {
        throw DumpError(description: "\(path) keeps no history: --json shows the values a history holds")
    }
    guard store.hasChangeLog else {
        print("(no change log)")
        return
    }
    let history = try store.read { tx in try tx.commits(after: since - 1) }
    if !history.isComplete, let first = history.firstAvailable {
        print("(the change log was pruned: it holds versions \(first) on)")
    }
    for commit in history.commits {
        print(
            "\(commit.version)  \(isoTime(commit.time))  "
                + commit.changes.map(describe).joined(separator: "; "))
    }
}

/// The history with values: a line per commit (version, time, author), a line per object changed —
/// an insert's and a deletion's values, each updated field's value before and after; or, with
/// `json`, one JSON object per commit.
func historyChanges(_ store: Store, since: Int, json: Bool) throws {
    let commits = try store.read { tx in
        try tx.history(since: since == 0 ? nil : HistoryToken(version: since - 1))
    }
    func object(_ fields: HistoryFields) -> String {
        "{"
            + fields.sorted { $0.key < $1.key }.map { "\(jsonString($0.key)):\($0.value.json)" }
            .joined(separator: ",") + "}"
    }
    for commit in commits {
        if json {
            let changes = commit.changes.map { change in
                "{\"type\":\(jsonString(change.type)),\"key\":\(jsonString(change.keyDescription)),"
                    + "\"op\":\"\(change.kind.rawValue)\",\"before\":\(object(change.before)),"
                    + "\"after\":\(object(change.after))}"
            }
            print(
                "{\"version\":\(commit.version),\"time\":\"\(isoTime(commit.time))\",\"author\":"
                    + (commit.author.map(jsonString) ?? "null") + ",\"changes\":["
                    + changes.joined(separator: ",") + "]}")
            continue
        }
        print("\(commit.version)  \(isoTime(commit.time))" + (commit.author.map { "  by \($0)" } ?? ""))
        for change in commit.changes {
            let head = "  \(change.kind.rawValue) \(change.type) \(change.keyDescription)"
            switch change.kind {
            case .insert: print(head + " " + object(change.after))
            case .delete: print(head + " " + object(change.before))
            case .update:
                let fields = change.fields.sorted().map { field in
                    "\(field): \(change.before[field]?.json ?? "(none)") → \(change.after[field]?.json ?? "(none)")"
                }
                print(head + ": " + fields.joined(separator: ", "))
            }
        }
    }
}

/// `text` as a JSON string literal.
func jsonString(_ text: String) -> String { CBORValue.text(text).json }

/// `insert Task 7`, `update Task 7 (rank, title)`, `bulk Task (51 objects)`.
func describe(_ change: ObjectChange) -> String {
    switch change.kind {
    case .insert, .delete: return "\(change.operation) \(change.type) \(change.keyDescription)"
    case .update(let fields):
        return "update \(change.type) \(change.keyDescription)"
            + (fields.map { " (" + $0.joined(separator: ", ") + ")" } ?? "")
    case .clear: return "clear \(change.type)"
    case .bulk(let count): return "bulk \(change.type) (\(count) objects)"
    }
}

/// A commit time as ISO 8601 with milliseconds, as dates are shown everywhere else.
func isoTime(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
}

func main() -> Int32 {
    // lode-dump reads stores without their types: their full-text indexes are described and checked
    // through the full-text module's inspector.
    TextIndexInspector.register()
    var raw = Array(CommandLine.arguments.dropFirst())
    do {
        let (newKey, decrypt) = try KeyFiles.extract(&raw)
        if raw.contains("--help") || raw.contains("-h") || raw.first == "help" {
            print(usage)
            return 0
        }
        guard let first = raw.first else { throw UsageError(description: "no store given") }
        let commands = [
            "schema", "dump", "get", "stats", "changes", "raw", "export", "load", "backup", "compact",
            "watch", "check", "serve", "rekey",
        ]
        guard commands.contains(first) else {
            guard raw.count == 1 else { throw UsageError(description: "unexpected arguments after \(first)") }
            try summary(first)
            return 0
        }
        let arguments = try Arguments(
            Array(raw.dropFirst()),
            valued: [
                "--format", "--where", "--sort", "--limit", "--fields", "--since", "-s", "--for", "--port",
                "--match", "--index", "--as-of",
            ],
            flags: ["--json", "--all", "--force", "--explain"])
        let positional = arguments.positional
        func expect(_ count: Int, _ names: String) throws {
            guard positional.count == count else {
                throw UsageError(description: "\(first) takes \(names), got \(positional.count) arguments")
            }
        }
        switch first {
        case "schema":
            try expect(1, "STORE")
            try schema(positional[0], json: arguments.flags.contains("--json"))
        case "dump":
            try expect(2, "STORE TYPE")
            try dump(positional[0], type: positional[1], arguments: arguments)
        case "get":
            try expect(3, "STORE TYPE KEY")
            let version = try arguments.options["--as-of"].map {
                guard let value = Int($0), value >= 0 else {
                    throw UsageError(description: "--as-of needs a version, got \($0)")
                }
                return value
            }
            try get(positional[0], type: positional[1], key: positional[2], asOf: version)
        case "stats":
            try expect(1, "STORE")
            try stats(positional[0])
        case "watch":
            guard positional.count == 1 || positional.count == 2 else {
                throw UsageError(description: "watch takes STORE [TYPE], got \(positional.count) arguments")
            }
            let seconds = try arguments.options["--for"].map {
                guard let value = Double($0), value > 0 else {
                    throw UsageError(description: "--for needs seconds, got \($0)")
                }
                return value
            }
            try watch(
                positional[0], type: positional.count == 2 ? positional[1] : nil,
                filter: try arguments.options["--where"].map { try WhereExpression.parse($0) },
                seconds: seconds)
        case "check":
            try expect(1, "STORE")
            return try check(positional[0])
        case "serve":
            try expect(1, "STORE")
            let port =
                try arguments.options["--port"].map {
                    guard let value = UInt16($0) else {
                        throw UsageError(description: "--port needs a port number, got \($0)")
                    }
                    return value
                } ?? UInt16(0)
            let seconds = try arguments.options["--for"].map {
                guard let value = Double($0), value > 0 else {
                    throw UsageError(description: "--for needs seconds, got \($0)")
                }
                return value
            }
            try serve(positional[0], port: port, seconds: seconds)
        case "raw":
            try expect(1, "STORE")
            guard !(arguments.flags.contains("--all") && arguments.options["-s"] != nil) else {
                throw UsageError(description: "raw takes --all or -s NAME, not both")
            }
            try rawDump(positional[0], all: arguments.flags.contains("--all"), only: arguments.options["-s"])
        case "export":
            guard !positional.isEmpty else { throw UsageError(description: "export takes STORE [TYPE ...]") }
            try export(positional[0], types: Array(positional.dropFirst()))
        case "load":
            try expect(1, "DIR")
            guard isatty(0) == 0 else {
                throw UsageError(
                    description: "load reads the dump from standard input: lode-dump load DIR < DUMP")
            }
            try load(positional[0], force: arguments.flags.contains("--force"))
        case "rekey":
            try expect(1, "STORE")
            guard (newKey != nil) != decrypt else {
                throw UsageError(
                    description: "rekey takes --new-key-file, --new-passphrase-file or --decrypt")
            }
            try rekey(positional[0], to: newKey)
        case "backup", "compact":
            try expect(2, "STORE DIR")
            try copyStore(positional[0], to: positional[1], compacting: first == "compact")
        default:
            try expect(1, "STORE")
            let since =
                try arguments.options["--since"].map {
                    guard let value = Int($0), value >= 0 else {
                        throw UsageError(description: "--since needs a version, got \($0)")
                    }
                    return value
                } ?? 0
            try changes(positional[0], since: since, json: arguments.flags.contains("--json"))
        }
        return 0
    } catch let error as UsageError {
        FileHandle.standardError.write(Data("lode-dump: \(error)\n\(usage)\n".utf8))
        return 2
    } catch let error as ExpressionError {
        FileHandle.standardError.write(Data("lode-dump: \(error)\n\(usage)\n".utf8))
        return 2
    } catch {
        FileHandle.standardError.write(Data("lode-dump: \(error)\n".utf8))
        return 1
    }
}

exit(Supervisor.isWorker ? main() : Supervisor.run())
