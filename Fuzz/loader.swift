import Foundation

/// `lode-dump`'s error type and the formats it reads, as its other files define them (the harness
/// compiles only the loader's parsing files).
struct DumpError: Error, CustomStringConvertible { var description: String }
let readableFormats = 1...2

/// Takes a raw dump's databases and entries as the library's loader would, checking the parser
/// hands them over in order.
final class CheckingSink: RawDumpSink {
    private var inDatabase = false
    private(set) var entries = 0

    func beginDatabase(named name: String?, kind: RawDatabaseKind) throws {
        if case .fixedDuplicates(let width) = kind { precondition(width >= 0) }
        inDatabase = true
    }

    func put(key: [UInt8], value: [UInt8]) throws {
        precondition(inDatabase, "an entry before its database")
        entries += 1
    }

    func finish() throws {}
}

/// One libFuzzer input, read as `lode-dump load` reads standard input: an export (every line
/// decoded; every record of a type checked the way `restore` checks it, its primary and index keys
/// derived) or a raw dump (parsed into a sink).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLoader(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let lines = LineReader(FileHandle.nullDevice, prefix: bytes)
    let first = bytes.first { $0 != 0x20 && $0 != 0x0a && $0 != 0x09 && $0 != 0x0d }
    if first == UInt8(ascii: "{") {
        var type: StoredType?
        while let line = lines.next() {
            guard let decoded = try? decode(line, number: lines.number) else { continue }
            switch decoded {
            case .type(let described): type = described
            case .record(let record):
                guard let type, let untyped = try? UntypedRecord(bytes: record, type: type) else { continue }
                _ = untyped.primaryKey
                for index in type.indexes { _ = try? untyped.indexKey(index) }
            case .header, .end: break
            }
        }
    } else {
        _ = try? loadRawDump(from: lines, into: CheckingSink())
    }
    return 0
}
