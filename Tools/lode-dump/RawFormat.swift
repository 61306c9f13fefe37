import Foundation
import Lode
import LodeInspection

// The raw dump format (`mdb_dump` byte-value text) as `load` reads it: kept apart from the store
// so the loader fuzz target (`Fuzz/loader.swift`) compiles it with the library's codec alone.

/// Where a raw dump's databases and entries go (the library's `RawDumpLoader`).
protocol RawDumpSink {
    /// Starts a database (nil: LMDB's main database).
    func beginDatabase(named name: String?, kind: RawDatabaseKind) throws
    /// Adds an entry to the current database.
    func put(key: [UInt8], value: [UInt8]) throws
    /// Ends the dump.
    func finish() throws
}

/// Reads `mdb_dump` byte-value text a line at a time and hands each database and entry to `loader`
/// as it goes; a malformed dump is an error naming the line. Returns the databases and entries read.
func loadRawDump(from lines: LineReader, into loader: some RawDumpSink) throws -> (
    databases: Int, entries: Int
) {
    var name: String?
    var duplicates = false
    var fixed = false
    var inHeader = false
    var inData = false
    var begun = false
    var pendingKey: [UInt8]?
    var databases = 0
    var entries = 0
    var progress = Progress("loading")
    defer { progress.finish() }
    func begin(width: Int?) throws {
        let kind: RawDatabaseKind
        if fixed, let width {
            kind = .fixedDuplicates(width: width)
        } else {
            kind = duplicates ? .duplicates : .plain
        }
        try loader.beginDatabase(named: name, kind: kind)
        begun = true
    }
    while let line = lines.next() {
        func fail(_ what: String) -> DumpError {
            DumpError(description: "the dump, line \(lines.number): \(what)")
        }
        if inData {
            if line == "DATA=END" {
                guard pendingKey == nil else { throw fail("a key without a value") }
                if !begun { try begin(width: nil) }
                databases += 1
                inData = false
                continue
            }
            guard line.first == " ", let bytes = unhex(line.dropFirst()) else {
                throw fail("expected a hex line")
            }
            if let key = pendingKey {
                if !begun { try begin(width: bytes.count) }
                try loader.put(key: key, value: bytes)
                entries += 1
                progress.advance()
                pendingKey = nil
            } else {
                pendingKey = bytes
            }
            continue
        }
        if line.isEmpty { continue }
        guard let equals = line.firstIndex(of: "=") else { throw fail("expected NAME=VALUE") }
        let header = line[..<equals]
        let value = String(line[line.index(after: equals)...])
        switch header {
        case "VERSION":
            guard value == "3" else { throw fail("only VERSION=3 dumps are read") }
            (name, duplicates, fixed, begun, inHeader) = (nil, false, false, false, true)
        case "format":
            guard value == "bytevalue" else {
                throw fail("only format=bytevalue is read (write it with lode-dump raw)")
            }
        case "database": name = value
        case "duplicates", "dupsort": duplicates = value == "1"
        case "dupfixed": fixed = value == "1"
        case "HEADER":
            guard inHeader else { throw fail("HEADER=END before VERSION") }
            inHeader = false
            inData = true
        case "type", "maxreaders", "db_pagesize", "mapaddr", "mapsize": break
        default: throw fail("unsupported header \(header)")
        }
    }
    guard !inData, !inHeader else {
        throw DumpError(description: "the dump ends inside a database (no DATA=END)")
    }
    try loader.finish()
    return (databases, entries)
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
