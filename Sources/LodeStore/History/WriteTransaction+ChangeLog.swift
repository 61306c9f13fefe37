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
        var limit = store.pins.oldest.map { $0 + 1 } ?? lmdb.id
        if let retained = try ChangeLogPruning.retained(in: lmdbWrite, meta: store.meta) {
            limit = min(limit, retained + 1)
        }
        let outcome = try ChangeLogPruning.prune(
            lmdbWrite, log: log, meta: store.meta, before: limit, writtenBefore: cutoff)
        store.changeLogStatistics.record(outcome)
    }

    /// Keeps the change log's entries after `version` until `holder` moves on (nil: releases it), in
    /// this transaction and for every process: the sync layer's upload cursor. Entries after the
    /// oldest retained version are never pruned.
    package func retainChangeLog(after version: Int?, holder: String) throws {
        let key = ChangeLogPruning.retainPrefix + Array(holder.utf8)
        try mapStorageErrors {
            if let version {
                try lmdbWrite.put(ChangeLogEntry.key(for: version), forKey: key, in: store.meta)
            } else {
                _ = try lmdbWrite.delete(key, in: store.meta)
            }
        }
    }
}
