import Foundation
import Lode
import LodeInspection

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

extension RawDumpLoader: RawDumpSink {}

/// `load`: restores a raw dump or a Lode ndjson export read from standard input, streaming. A new
/// store (a missing or empty directory) is built in batches of transactions in a staging directory
/// beside it that is renamed into place at the end — memory stays bounded, and the store is
/// complete or not there at all, also when the load is killed (a staging directory
/// `.NAME.loading-PID` may then be left behind). An existing store — one without objects, or any
/// with `--force` — is loaded in place in one transaction: what the input holds replaces what has
/// the same name, the rest stays.
func load(_ path: String, force: Bool) throws {
    // Read until the first byte that is not white space says which kind of input this is.
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
    let target = URL(fileURLWithPath: path).standardizedFileURL
    var isDirectory: ObjCBool = false
    let existed = manager.fileExists(atPath: target.path, isDirectory: &isDirectory)
    if existed && !isDirectory.boolValue {
        throw DumpError(description: "\(path): not a directory (a store is a directory)")
    }
    if existed, !((try? manager.contentsOfDirectory(atPath: target.path)) ?? []).isEmpty {
        let isEmptyStore =
            (try? Store(
                atPath: target.path,
                configuration: StoreConfiguration(readOnly: true, encryption: KeyFiles.encryption)))
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
    // A store with objects (with --force) or without is loaded in place, in one transaction; any
    // other target is built beside it and renamed into place — never over files that are not a store.
    let inPlace = existed && manager.fileExists(atPath: target.appendingPathComponent("data.mdb").path)
    if existed && !inPlace && !((try? manager.contentsOfDirectory(atPath: target.path)) ?? []).isEmpty {
        throw DumpError(description: "\(path) holds files that are not a store; load into a new directory")
    }
    let parent = target.deletingLastPathComponent()
    guard manager.fileExists(atPath: parent.path) else {
        throw DumpError(description: "\(parent.path): no such directory")
    }
    let staging = parent.appendingPathComponent(".\(target.lastPathComponent).loading-\(getpid())")
    let destination = inPlace ? target : staging
    if !inPlace { try? manager.removeItem(at: staging) }
    let summary: String
    do {
        let lines = LineReader(FileHandle.standardInput, prefix: head)
        if first == UInt8(ascii: "{") {
            let (types, count) = try loadExport(from: lines, into: destination.path, inPlace: inPlace)
            summary = "loaded \(types) \(types == 1 ? "type" : "types"), \(count) objects into \(path)"
        } else {
            let loader = try RawDumpLoader(into: destination.path, batchSize: inPlace ? nil : loadBatchSize)
            let (databases, count) = try loadRawDump(from: lines, into: loader)
            guard databases > 0 else { throw DumpError(description: "the dump on standard input is empty") }
            summary = "loaded \(databases) databases, \(count) entries into \(path)"
        }
        if !inPlace {
            // The staging directory's lock file belongs to it alone; the new store makes its own.
            try? manager.removeItem(at: staging.appendingPathComponent("lock.mdb"))
            try replace(target, with: staging, existed: existed)
        }
    } catch {
        if !inPlace { try? manager.removeItem(at: staging) }
        throw error
    }
    print(summary)
}

/// Moves the finished staging directory to `target`: a rename when the target is missing or an
/// empty directory; otherwise the old directory is renamed aside first and removed after. The
/// parent directory is synced before this returns, so the loaded store survives a power cut (a
/// rename is on disk only once its directory is).
private func replace(_ target: URL, with staging: URL, existed: Bool) throws {
    if rename(staging.path, target.path) == 0 {
        try syncDirectory(target.deletingLastPathComponent())
        return
    }
    guard existed, errno == ENOTEMPTY || errno == EEXIST else {
        throw DumpError(
            description: "cannot move the loaded store to \(target.path): \(String(cString: strerror(errno)))"
        )
    }
    let aside = target.deletingLastPathComponent().appendingPathComponent(
        ".\(target.lastPathComponent).replaced-\(getpid())")
    guard rename(target.path, aside.path) == 0 else {
        throw DumpError(description: "cannot replace \(target.path): \(String(cString: strerror(errno)))")
    }
    guard rename(staging.path, target.path) == 0 else {
        let reason = String(cString: strerror(errno))
        _ = rename(aside.path, target.path)
        throw DumpError(description: "cannot move the loaded store to \(target.path): \(reason)")
    }
    try syncDirectory(target.deletingLastPathComponent())
    try? FileManager.default.removeItem(at: aside)
}

/// `fsync` of a directory, so the names just made in it are on disk.
private func syncDirectory(_ directory: URL) throws {
    let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard descriptor >= 0 else {
        throw DumpError(description: "cannot open \(directory.path): \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    guard fsync(descriptor) == 0 || errno == EINVAL else {
        throw DumpError(description: "cannot sync \(directory.path): \(String(cString: strerror(errno)))")
    }
}

/// `backup` and `compact`: a consistent copy of the store while it stays in use.
func copyStore(_ path: String, to target: String, compacting: Bool) throws {
    let store = try openStore(path)
    try store.copy(to: target, compacting: compacting)
    let size = (try? FileManager.default.attributesOfItem(atPath: target + "/data.mdb")[.size] as? Int) ?? 0
    print("\(compacting ? "compacted" : "copied") \(path) to \(target) (\(byteCount(size)))")
}
