import Foundation
import Lode

/// `raw`: LMDB's own `mdb_dump` text (byte values), so stock `mdb_load` restores it. Without
/// options the main database; `--all` every named database (as `mdb_dump -a`); `-s NAME` one.
func rawDump(_ path: String, all: Bool, only: String?) throws {
    let store = try openStore(path)
    let info = try store.fileInfo()
    // One read transaction: every database as of one version.
    try store.inspect { tx in
        let names: [String?]
        if let only {
            names = [only]
        } else if all {
            names = try tx.databaseNames()
        } else {
            names = [nil]
        }
        var output = ""
        for name in names {
            let stat: StoreDatabaseStatistics
            do {
                stat = try tx.statistics(ofDatabase: name)
            } catch LodeError.typeNotFound {
                throw DumpError(description: "\(path): no database named \"\(name ?? "")\"")
            }
            output += "VERSION=3\nformat=bytevalue\n"
            if let name { output += "database=\(name)\n" }
            output += "type=btree\nmapsize=\(info.mapSize)\nmaxreaders=\(info.maxReaders)\n"
            switch stat.duplicates {
            case .plain: break
            case .duplicates: output += "duplicates=1\ndupsort=1\n"
            case .fixedDuplicates: output += "duplicates=1\ndupsort=1\ndupfixed=1\n"
            }
            output += "db_pagesize=\(stat.pageSize)\nHEADER=END\n"
            try tx.forEachRawEntry(ofDatabase: name) { key, value in
                output += " " + hex(key) + "\n " + hex(value) + "\n"
            }
            output += "DATA=END\n"
            FileHandle.standardOutput.write(Data(output.utf8))
            output = ""
        }
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)

func hex(_ bytes: [UInt8]) -> String {
    var text = [UInt8]()
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(hexDigits[Int(byte >> 4)])
        text.append(hexDigits[Int(byte & 0xf)])
    }
    return String(decoding: text, as: UTF8.self)
}

/// One database of a raw dump.
struct RawBlock {
    var name: String?
    var duplicates = false
    var fixed = false
    var mapSize = 0
    var entries: [(key: [UInt8], value: [UInt8])] = []
}

/// Parses `mdb_dump` byte-value text; a malformed dump is an error naming the line.
func parseRawDump(_ text: String) throws -> [RawBlock] {
    var blocks: [RawBlock] = []
    var current: RawBlock?
    var inData = false
    var pendingKey: [UInt8]?
    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        func fail(_ what: String) -> DumpError {
            DumpError(description: "the dump, line \(number + 1): \(what)")
        }
        if inData {
            if line == "DATA=END" {
                guard pendingKey == nil else { throw fail("a key without a value") }
                blocks.append(current!)
                current = nil
                inData = false
                continue
            }
            guard line.first == " ", let bytes = unhex(line.dropFirst()) else {
                throw fail("expected a hex line")
            }
            if let key = pendingKey {
                current!.entries.append((key, bytes))
                pendingKey = nil
            } else {
                pendingKey = bytes
            }
            continue
        }
        if line.isEmpty { continue }
        guard let equals = line.firstIndex(of: "=") else { throw fail("expected NAME=VALUE") }
        let name = line[..<equals]
        let value = String(line[line.index(after: equals)...])
        switch name {
        case "VERSION":
            guard value == "3" else { throw fail("only VERSION=3 dumps are read") }
            current = RawBlock()
        case "format":
            guard value == "bytevalue" else {
                throw fail("only format=bytevalue is read (write it with lode-dump raw)")
            }
        case "database": current?.name = value
        case "mapsize": current?.mapSize = Int(value) ?? 0
        case "duplicates", "dupsort": current?.duplicates = value == "1"
        case "dupfixed": current?.fixed = value == "1"
        case "HEADER":
            guard current != nil else { throw fail("HEADER=END before VERSION") }
            inData = true
        case "type", "maxreaders", "db_pagesize", "mapaddr": break
        default: throw fail("unsupported header \(name)")
        }
    }
    guard current == nil, !inData else {
        throw DumpError(description: "the dump ends inside a database (no DATA=END)")
    }
    return blocks
}

func unhex(_ text: Substring) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    var bytes = [UInt8]()
    bytes.reserveCapacity(utf8.count / 2)
    func digit(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
    var index = 0
    while index < utf8.count {
        guard let high = digit(utf8[index]), let low = digit(utf8[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
        index += 2
    }
    return bytes
}

/// `load`: restores a raw dump or a Lode ndjson export read from standard input into a new store at
/// `path`, in one transaction: the store is complete or not there at all (a directory this command
/// created is removed again when the load fails).
func load(_ path: String, force: Bool) throws {
    // Read until the first byte that is not white space says which kind of input this is: an export
    // is then streamed a line at a time, a raw dump read whole.
    var head: [UInt8] = []
    var first: UInt8?
    while first == nil {
        let chunk = FileHandle.standardInput.availableData
        if chunk.isEmpty { break }
        head.append(contentsOf: chunk)
        first = head.first { !(Character(UnicodeScalar($0)).isWhitespace) }
    }
    guard let first else { throw DumpError(description: "the dump on standard input is empty") }
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    let existed = manager.fileExists(atPath: path, isDirectory: &isDirectory)
    if existed && !isDirectory.boolValue {
        throw DumpError(description: "\(path): not a directory (a store is a directory)")
    }
    let before = Set((try? manager.contentsOfDirectory(atPath: path)) ?? [])
    if !before.isEmpty {
        let isEmptyStore =
            (try? Store(atPath: path, configuration: StoreConfiguration(readOnly: true)))
            .map { store in
                defer { store.close() }
                return (try? store.read { tx in try tx.storedTypes() })?.allSatisfy { $0.objectCount == 0 }
                    ?? false
            }
            ?? false
        guard force || isEmptyStore else {
            throw DumpError(
                description: "\(path) already holds data; load into a new directory or pass --force")
        }
    }
    do {
        if first == UInt8(ascii: "{") {
            let (types, count) = try loadExport(
                from: LineReader(FileHandle.standardInput, prefix: head), into: path)
            print("loaded \(types) \(types == 1 ? "type" : "types"), \(count) objects into \(path)")
        } else {
            let input = head + FileHandle.standardInput.readDataToEndOfFile()
            let blocks = try parseRawDump(String(decoding: input, as: UTF8.self))
            try loadRaw(blocks, into: path, inputSize: input.count)
            let count = blocks.reduce(0) { $0 + $1.entries.count }
            print("loaded \(blocks.count) databases, \(count) entries into \(path)")
        }
    } catch {
        // Leave the target as it was: remove what this load created.
        if !existed {
            try? manager.removeItem(atPath: path)
        } else {
            let created = Set((try? manager.contentsOfDirectory(atPath: path)) ?? []).subtracting(before)
            for name in created { try? manager.removeItem(atPath: path + "/" + name) }
        }
        throw error
    }
}

/// Writes every block of a raw dump into the store directory at `path`, in one write transaction.
private func loadRaw(_ blocks: [RawBlock], into path: String, inputSize: Int) throws {
    guard !blocks.isEmpty else { throw DumpError(description: "the dump on standard input is empty") }
    let mapSize = max(blocks.map(\.mapSize).max() ?? 0, inputSize * 4 + (64 << 20))
    try Store.loadRawDump(
        blocks.map { block in
            let kind: RawDatabaseKind
            if block.fixed, let width = block.entries.first?.value.count {
                kind = .fixedDuplicates(width: width)
            } else {
                kind = block.duplicates ? .duplicates : .plain
            }
            return RawDatabaseDump(name: block.name, kind: kind, entries: block.entries)
        }, into: path, mapSize: mapSize)
}

/// `backup` and `compact`: a consistent copy of the store while it stays in use.
func copyStore(_ path: String, to target: String, compacting: Bool) throws {
    let store = try openStore(path)
    try store.copy(to: target, compacting: compacting)
    let size = (try? FileManager.default.attributesOfItem(atPath: target + "/data.mdb")[.size] as? Int) ?? 0
    print("\(compacting ? "compacted" : "copied") \(path) to \(target) (\(byteCount(size)))")
}
