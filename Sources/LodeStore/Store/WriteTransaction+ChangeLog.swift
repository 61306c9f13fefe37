import Foundation
import LMDB

/// The change-log side of a write transaction: its entry, written right before the commit, and pruning.
extension WriteTransaction {
    /// Writes this transaction's entry to the change log (called once, right before the commit).
    func writeChangeLog() throws {
        guard !pendingChanges.isEmpty, let log = store.changeLog,
            let entry = pendingChanges.encodedEntry(bulkThreshold: store.configuration.changeLogBulkThreshold)
        else { return }
        try lmdbWrite.put(entry, forKey: ChangeLogEntry.key(for: lmdb.id), in: log)
        pendingChanges = PendingChanges()
        if lmdb.id % ChangeLogPruning.interval == 0 { try pruneChangeLog(log) }
    }

    /// Deletes log entries older than the retention and older than every live result of this process,
    /// and records in `@meta` the first version the log still covers.
    func pruneChangeLog(_ log: Database) throws {
        let cutoff = Date().addingTimeInterval(
            -Double(store.configuration.changeLogRetention.components.seconds))
        let outcome = try ChangeLogPruning.prune(
            lmdbWrite, log: log, meta: store.meta, before: store.pins.oldest.map { $0 + 1 } ?? lmdb.id,
            writtenBefore: cutoff)
        store.changeLogStatistics.record(outcome)
    }
}
