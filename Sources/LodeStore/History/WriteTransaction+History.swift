import Foundation
import LMDB
import LodeCodec
import Synchronization

/// The history with values (`@history`): turned on, written at each commit, pruned.
///
/// A commit's entry is made from the net changes the transaction recorded (`PendingChanges`): the
/// value of each object before comes from a snapshot of the version the transaction started from
/// (the store as it was, which LMDB still holds), the value after from the transaction itself, so
/// no write path has to carry values for it — and every writer of the store, in any process, records
/// the same way once `@meta` says the store keeps history.
extension WriteTransaction {
    /// Writes this transaction's history entry when the store keeps history (called once, right
    /// before the commit, while its net changes are still recorded).
    func writeHistory() throws {
        guard !pendingChanges.isEmpty else { return }
        // Looked at its first change already: no history then, none now.
        if historyCaptureChecked && !pendingChanges.capturesValues { return }
        guard let history = try historyDatabase() else { return }
        if let reason = breaksHistory {
            // What the migration did is not kept: the history starts again after this commit.
            try setHistoryFloor(lmdb.id + 1, in: history, reason: reason)
            return
        }
        let changes = try historyChanges()
        if changes.count > 0 {
            var entry = CBORWriter(capacity: 32 + changes.bytes.count)
            entry.head(5, author == nil ? 2 : 3)
            entry.text("time")
            entry.date(Date())
            if let author {
                entry.text("author")
                entry.text(author)
            }
            entry.text("changes")
            entry.head(4, UInt64(changes.count))
            changes.bytes.withUnsafeBytes { entry.raw($0) }
            try lmdbWrite.put(entry.bytes, forKey: HistoryLayout.key(for: lmdb.id), in: history)
        }
        if lmdb.id % HistoryLayout.pruneInterval == 0 {
            try pruneHistory(history, retention: try historyRetention())
        }
    }

    /// The `@history` database, when the store keeps history: once this process has seen that it
    /// does, it does for good (nothing turns history off); until then `@meta` says, read in every
    /// transaction that changed objects unless this process's own commit came last (another process
    /// may have turned history on since).
    func historyDatabase() throws -> Database? {
        if store.historyOffThrough.load(ordering: .acquiring) == lmdb.id - 1 {
            sawNoHistory = true
            return nil
        }
        if let known = store.historyDatabase.withLock({ $0 }) { return known }
        guard try lmdb.withValue(forKey: HistoryLayout.retentionKey, in: store.meta, { _ in true }) == true
        else {
            sawNoHistory = true
            return nil
        }
        let database = try lmdbWrite.database(named: StoreLayout.history, kind: .plain)
        store.historyDatabase.withLock { $0 = database }
        return database
    }

    /// Makes this transaction's changes keep their records when the store keeps history (once, at
    /// its first change: nothing can turn history on while it writes).
    func prepareHistoryCapture() throws {
        historyCaptureChecked = true
        if try historyDatabase() != nil { pendingChanges.startCapturingValues() }
    }

    /// The retention `@meta` holds now (the last process to open the store with one set it).
    private func historyRetention() throws -> HistoryRetention {
        guard let bytes = try lmdb.get(HistoryLayout.retentionKey, in: store.meta) else { return .forever }
        do {
            return try CBORDecoder().decode(HistoryRetention.self, from: bytes)
        } catch {
            throw LodeError.recordDoesNotDecode(
                type: StoreLayout.meta, key: "history", field: "", reason: "\(error)")
        }
    }

    /// The encoded changes of this transaction (the items of the entry's `changes` array) and how
    /// many there are.
    private func historyChanges() throws -> (bytes: [UInt8], count: Int) {
        var writer = CBORWriter(capacity: 256)
        var count = 0
        var records: [String: Database] = [:]
        func recordsDatabase(_ type: String) throws -> Database {
            if let known = records[type] { return known }
            let database = try lmdbWrite.database(named: type, create: false)
            records[type] = database
            return database
        }
        func change(type: String, key: [UInt8], op: HistoryChange.Kind, fields: Int) {
            writer.head(5, UInt64(3 + fields))
            writer.text("type")
            writer.text(type)
            writer.text("key")
            key.withUnsafeBytes { writer.byteString($0) }
            writer.text("op")
            writer.text(op.rawValue)
            count += 1
        }
        // The values before come from the version this transaction started from: a snapshot, opened
        // only when a change needs one (inserts do not).
        var needsSnapshot = false
        pendingChanges.visitNetChanges { _, _, existedBefore, _, cleared, before, _ in
            if (existedBefore && before == nil) || cleared { needsSnapshot = true }
        }
        func withSnapshot(_ body: (LMDB.Transaction?) throws -> Void) throws {
            if needsSnapshot { try lmdb.environment.read { try body($0) } } else { try body(nil) }
        }
        try withSnapshot { snapshot in
            func typeExisted(_ type: String) throws -> Bool {
                try snapshot?.get(Array(type.utf8), in: lmdb.environment.mainDatabase) != nil
            }
            try pendingChanges.visitNetChanges {
                type, key, existedBefore, existsAfter, cleared, kept, keptAfter in
                if cleared {
                    guard try typeExisted(type) else { return }
                    let database = try recordsDatabase(type)
                    try snapshot?.forEachEntry(in: database) { entry in
                        change(type: type, key: entry.key, op: .delete, fields: 1)
                        writer.text("before")
                        entry.value.withUnsafeBytes { writer.raw($0) }
                        return true
                    }
                    return
                }
                let database = try recordsDatabase(type)
                switch (existedBefore, existsAfter) {
                case (false, true):
                    if let keptAfter {
                        change(type: type, key: key, op: .insert, fields: 1)
                        writer.text("after")
                        keptAfter.withUnsafeBytes { writer.raw($0) }
                        return
                    }
                    _ = try lmdb.withValue(forKey: key, in: database) { after in
                        change(type: type, key: key, op: .insert, fields: 1)
                        writer.text("after")
                        writer.raw(after)
                    }
                case (true, false):
                    guard let before = try kept ?? snapshot?.get(key, in: database) else { return }
                    change(type: type, key: key, op: .delete, fields: 1)
                    writer.text("before")
                    before.withUnsafeBytes { writer.raw($0) }
                case (true, true):
                    guard let before = try kept ?? snapshot?.get(key, in: database),
                        let after = try keptAfter ?? lmdb.get(key, in: database)
                    else { return }
                    try before.withUnsafeBytes { before in
                        try after.withUnsafeBytes { after in
                            try writeUpdate(type: type, key: key, before: before, after: after)
                        }
                    }
                case (false, false):
                    return
                }
            }
        }
        /// An update: the fields whose values changed, on each side (nothing when none did).
        func writeUpdate(
            type: String, key: [UInt8], before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer
        ) throws {
            guard let changed = HistoryLayout.changedFields(before: before, after: after) else {
                throw LodeError.recordDoesNotDecode(
                    type: type, key: KeyDescription.describe(key), field: "",
                    reason: "the record is not a map of fields")
            }
            guard !changed.isEmpty else { return }
            change(type: type, key: key, op: .update, fields: 2)
            for (side, pick) in [("before", 0), ("after", 1)] {
                writer.text(side)
                let present = changed.filter { (pick == 0 ? $0.before : $0.after) != nil }
                writer.head(5, UInt64(present.count))
                for field in present {
                    writer.head(3, UInt64(field.name.count))
                    writer.raw(field.name)
                    writer.raw(pick == 0 ? field.before! : field.after!)
                }
            }
        }
        return (writer.bytes, count)
    }

    /// Removes the entries the retention no longer keeps, oldest first, and records in `@meta` the
    /// first version whose history is still complete.
    func pruneHistory(_ history: Database, retention: HistoryRetention) throws {
        let cutoff = retention.seconds.map { Date().addingTimeInterval(-Double($0)) }
        let newest = lmdb.id
        var doomed: [[UInt8]] = []
        // By count and age: from the oldest, up to the first entry kept.
        try lmdbWrite.withCursor(in: history) { cursor in
            func judge(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                let version = HistoryLayout.version(of: key)
                if let versions = retention.versions, version <= newest - versions { return true }
                if let cutoff, let time = ChangeLogEntry.time(ofEncoded: value), time < cutoff { return true }
                return false
            }
            var going = try cursor.withFirst { key, value in
                let expired = try judge(key, value)
                if expired { doomed.append(Array(key)) }
                return expired
            }
            while going == true {
                going = try cursor.withNext { key, value in
                    let expired = try judge(key, value)
                    if expired { doomed.append(Array(key)) }
                    return expired
                }
            }
        }
        for key in doomed { try lmdbWrite.delete(key, in: history) }
        var removedThrough = doomed.last.map { HistoryLayout.version(of: $0) }
        // By size: the oldest go, 64 at a time, until the history's pages fit.
        if let bytes = retention.bytes {
            while try lmdb.statistics(of: history).totalBytes > bytes {
                var batch: [[UInt8]] = []
                try lmdbWrite.withCursor(in: history) { cursor in
                    var going = try cursor.withFirst { key, _ in
                        batch.append(Array(key))
                        return true
                    }
                    while going == true, batch.count < 64 {
                        going = try cursor.withNext { key, _ in
                            batch.append(Array(key))
                            return true
                        }
                    }
                }
                guard let last = batch.last else { break }
                for key in batch { try lmdbWrite.delete(key, in: history) }
                removedThrough = HistoryLayout.version(of: last)
            }
        }
        if let removedThrough { try setHistoryFloor(removedThrough + 1, in: history, reason: nil) }
    }

    /// Records that the history is complete from `version` on (raising it only; with `reason`, what
    /// broke it, kept for the error a reader from before gets).
    private func setHistoryFloor(_ version: Int, in history: Database, reason: String?) throws {
        let current = try lmdb.get(HistoryLayout.floorKey, in: store.meta).map {
            HistoryLayout.version(of: $0)
        }
        guard version > current ?? 0 else { return }
        try lmdbWrite.put(HistoryLayout.key(for: version), forKey: HistoryLayout.floorKey, in: store.meta)
        if let reason {
            try lmdbWrite.put(Array(reason.utf8), forKey: HistoryLayout.breakKey, in: store.meta)
        } else {
            _ = try lmdbWrite.delete(HistoryLayout.breakKey, in: store.meta)
        }
    }
}

extension Store {
    /// Makes the store keep history with `retention` from the next commit on (in a transaction of its
    /// own, at open): `@meta` says so to every writer, the history starts after this version, and the
    /// format says that a Lode which does not know history must not write here.
    func keepHistory(_ retention: HistoryRetention) throws {
        let environment = try environment()
        try mapStorageErrors {
            try environment.write { txn in
                let encoded = try CBOREncoder().encode(retention)
                let stored = try txn.get(HistoryLayout.retentionKey, in: meta)
                if stored == encoded { return }
                try txn.put(encoded, forKey: HistoryLayout.retentionKey, in: meta)
                _ = try txn.database(named: StoreLayout.history, kind: .plain)
                if stored == nil {
                    try txn.put(HistoryLayout.key(for: txn.id + 1), forKey: HistoryLayout.floorKey, in: meta)
                    _ = try txn.delete(HistoryLayout.breakKey, in: meta)
                }
                let formatKey = Array(StoreLayout.formatVersionKey.utf8)
                let format = try txn.get(formatKey, in: meta).flatMap {
                    try? CBORDecoder().decode(Int.self, from: $0)
                }
                if (format ?? 0) < StoreLayout.historyFormatVersion {
                    try txn.put(
                        try CBOREncoder().encode(StoreLayout.historyFormatVersion), forKey: formatKey,
                        in: meta)
                }
            }
        }
    }
}
