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
            let entries = try environment.read { txn in try changeEntries(txn, changes, from: seen + 1) }
            try store.read { tx in
                for entry in entries {
                    for change in entry.changes {
                        if let type, change.type != type { continue }
                        var line =
                            "\(entry.version)  \(change.op) \(change.type) \(KeyDescription.describe(change.key))"
                        if change.op == "insert" || change.op == "update" {
                            guard let record = try tx.storedRecord(of: change.type, key: change.key) else {
                                print(line + "  (gone since)")
                                continue
                            }
                            let object = try record.value(type: change.type)
                            if let filter, !filter.matches(object) { continue }
                            if let fields = change.fields {
                                line += " (" + fields.joined(separator: ", ") + ")"
                            }
                            line += "  " + object.json
                        }
                        print(line)
                    }
                }
            }
            // Entries may run past `last` (commits made meanwhile): never print one twice.
            seen = max(seen, last, entries.last?.version ?? seen)
            fflush(nil)
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    print(
        "stopped at version \(seen)\(stopRequested.load(ordering: .relaxed) ? " (interrupted)" : " (time limit)")"
    )
}
