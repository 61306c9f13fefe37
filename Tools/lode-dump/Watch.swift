import Dispatch
import Foundation
import LMDB
import Lode
import Synchronization

/// Set by SIGINT and SIGTERM: `watch` finishes the commit it is printing and exits cleanly.
let stopRequested = Atomic<Bool>(false)

/// `watch`: follows commits of any process, printing each object inserted, updated or deleted (of
/// `type` only, and matching `filter`, when given) until Ctrl-C or `seconds` have passed.
func watch(_ path: String, type: String?, filter: Expression?, seconds: Double?) throws {
    let store = try openStore(path)
    let environment = try store.lmdbEnvironment
    if let type { _ = try store.read { tx in try tx.storedType(named: type) } }
    let changes: Database
    do {
        changes = try environment.database(named: "@changes", create: false)
    } catch let error as LMDBError where error.code == .notFound {
        throw DumpError(description: "\(path): the store has no change log to follow")
    }
    signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
    // A parent may have started us with these signals blocked (the mask is inherited): unblock them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    let deadline = seconds.map { Date().addingTimeInterval($0) }
    var seen = environment.info.lastTransactionID
    print("watching \(path) from version \(seen)\(type.map { ", type \($0)" } ?? "") (Ctrl-C stops)")
    fflush(nil)
    while !stopRequested.load(ordering: .relaxed) {
        if let deadline, Date() >= deadline { break }
        let last = environment.info.lastTransactionID
        if last > seen {
            var start = [UInt8](repeating: 0, count: 8)
            for index in 0..<8 {
                start[index] = UInt8(truncatingIfNeeded: UInt64(seen + 1) >> (56 - 8 * UInt64(index)))
            }
            try store.read { tx in
                for entry in try environment.read({ txn in Array(try txn.entries(in: changes, from: start)) })
                {
                    let version = entry.key.reduce(0) { $0 << 8 | Int($1) }
                    let value = try CBORValue(decoding: entry.value)
                    guard case .array(let items)? = value["changes"] else { continue }
                    for item in items {
                        let itemType = cell(item["type"])
                        if let type, itemType != type { continue }
                        let op = cell(item["op"])
                        var keyBytes: [UInt8] = []
                        if case .bytes(let bytes)? = item["key"] { keyBytes = bytes }
                        var line = "\(version)  \(op) \(itemType) \(KeyDescription.describe(keyBytes))"
                        if op == "insert" || op == "update" {
                            guard let record = try tx.storedRecord(of: itemType, key: keyBytes) else {
                                line += "  (gone since)"
                                print(line)
                                continue
                            }
                            let object = try record.value(type: itemType)
                            if let filter, !filter.matches(object) { continue }
                            if case .array(let fields)? = item["fields"] {
                                line += " (" + fields.map(cell).joined(separator: ", ") + ")"
                            }
                            line += "  " + object.json
                        } else if filter != nil, op != "delete", op != "clear" {
                            continue
                        }
                        print(line)
                    }
                    seen = max(seen, version)
                }
            }
            seen = max(seen, last)
            fflush(nil)
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    print(
        "stopped at version \(seen)\(stopRequested.load(ordering: .relaxed) ? " (interrupted)" : " (time limit)")"
    )
}
