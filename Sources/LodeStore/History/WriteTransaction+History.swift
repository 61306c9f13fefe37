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
            HistoryChangeEncoder.timeName.withUnsafeBytes { entry.raw($0) }
            entry.date(Date())
            if let author {
                HistoryChangeEncoder.authorName.withUnsafeBytes { entry.raw($0) }
                entry.text(author)
            }
            HistoryChangeEncoder.changesName.withUnsafeBytes { entry.raw($0) }
            entry.head(4, UInt64(changes.count))
            changes.bytes.withUnsafeBytes { entry.raw($0) }
            try lmdbWrite.put(entry.bytes, forKey: HistoryLayout.entryKey(for: lmdb.id), in: history)
        }
        if lmdb.id % HistoryLayout.pruneInterval == 0 {
            try pruneHistory(history, retention: try historyRetention())
        }
    }

    /// The database of the history's entries (`@changes`, beside the change log's) when the store
    /// keeps history, else nil: once this process has seen that it does, it does for good (nothing
    /// turns history off); until then `@meta` says, read in every transaction that changed objects
    /// unless this process's own commit came last (another process may have turned history on
    /// since).
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
        guard let database = store.changeLog else { return nil }
        store.historyDatabase.withLock { $0 = database }
        return database
    }

    /// Makes this transaction's changes keep their records when the store keeps history (once, at
    /// its first change: nothing can turn history on while it writes).
    func prepareHistoryCapture() throws {
        historyCaptureChecked = true
        if try historyDatabase() != nil {
            pendingChanges.startCapturingValues(insertLimit: store.configuration.historyInsertValuesLimit)
        }
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
        let encoder = HistoryChangeEncoder()
        var records: [String: Database] = [:]
        func recordsDatabase(_ type: String) throws -> Database {
            if let known = records[type] { return known }
            let database = try lmdbWrite.database(named: type, create: false)
            records[type] = database
            return database
        }
        // The values before come from the version this transaction started from: a snapshot, opened
        // only when a change needs one (inserts do not).
        var needsSnapshot = false
        var inserts = 0
        pendingChanges.visitNetChanges { _, _, existedBefore, existsAfter, cleared, before, _ in
            if (existedBefore && before == nil) || cleared { needsSnapshot = true }
            if !existedBefore && existsAfter && !cleared { inserts += 1 }
        }
        // Many inserts are recorded by reference: their values are the records this commit writes.
        let insertsByReference = inserts > store.configuration.historyInsertValuesLimit
        func withSnapshot(_ body: (LMDB.Transaction?) throws -> Void) throws {
            if needsSnapshot { try lmdb.environment.read { try body($0) } } else { try body(nil) }
        }
        try withSnapshot { snapshot in
            func typeExisted(_ type: String) throws -> Bool {
                try snapshot?.get(Array(type.utf8), in: lmdb.environment.mainDatabase) != nil
            }
            /// The record before this transaction: the one kept, or the snapshot's.
            func withBefore(
                _ kept: UnsafeRawBufferPointer?, _ type: String, _ key: [UInt8],
                _ body: (UnsafeRawBufferPointer) throws -> Void
            ) throws {
                if let kept { return try body(kept) }
                guard let stored = try snapshot?.get(key, in: try recordsDatabase(type)) else { return }
                try stored.withUnsafeBytes(body)
            }
            /// The record after the last change: the one kept, or the transaction's.
            func withAfter(
                _ kept: UnsafeRawBufferPointer?, _ type: String, _ key: [UInt8],
                _ body: (UnsafeRawBufferPointer) throws -> Void
            ) throws {
                if let kept { return try body(kept) }
                _ = try lmdb.withValue(forKey: key, in: try recordsDatabase(type), body)
            }
            try pendingChanges.visitNetChanges {
                type, key, existedBefore, existsAfter, cleared, kept, keptAfter in
                if cleared {
                    guard try typeExisted(type) else { return }
                    try snapshot?.forEachEntry(in: try recordsDatabase(type)) { entry in
                        entry.key.withUnsafeBytes { encoder.change(type: type, key: $0, form: .delete) }
                        entry.value.withUnsafeBytes { encoder.writer.raw($0) }
                        return true
                    }
                    return
                }
                switch (existedBefore, existsAfter) {
                case (false, true):
                    if insertsByReference {
                        key.withUnsafeBytes { encoder.insertByReference(type: type, key: $0) }
                        return
                    }
                    try withAfter(keptAfter, type, key) { after in
                        key.withUnsafeBytes { encoder.change(type: type, key: $0, form: .insert) }
                        encoder.writer.raw(after)
                    }
                case (true, false):
                    try withBefore(kept, type, key) { before in
                        key.withUnsafeBytes { encoder.change(type: type, key: $0, form: .delete) }
                        encoder.writer.raw(before)
                    }
                case (true, true):
                    try withBefore(kept, type, key) { before in
                        try withAfter(keptAfter, type, key) { after in
                            try encoder.update(type: type, key: key, before: before, after: after)
                        }
                    }
                case (false, false):
                    return
                }
            }
        }
        encoder.endInserts()
        return (encoder.writer.bytes, encoder.count)
    }

    /// Removes the entries the retention no longer keeps, oldest first, and records in `@meta` the
    /// first version whose history is still complete. The walk starts at that version (no entry lies
    /// below it) and passes over the change log's entries between.
    func pruneHistory(_ history: Database, retention: HistoryRetention) throws {
        let cutoff = retention.seconds.map { Date().addingTimeInterval(-Double($0)) }
        let newest = lmdb.id
        let floor =
            try lmdb.get(HistoryLayout.floorKey, in: store.meta).map { HistoryLayout.version(of: $0) } ?? 0
        // By count and age: from the oldest, up to the first entry kept.
        let doomed = try oldestHistoryEntries(in: history, from: floor) { key, value in
            let version = HistoryLayout.version(of: key)
            if let versions = retention.versions, version <= newest - versions { return true }
            if let cutoff, let time = ChangeLogEntry.time(ofEncoded: value), time < cutoff { return true }
            return false
        }
        for key in doomed { try lmdbWrite.delete(key, in: history) }
        var removedThrough = doomed.last.map { HistoryLayout.version(of: $0) }
        // By size: the oldest go, 64 at a time, until the pages of the history (and of the change
        // log, which shares them) fit.
        if let bytes = retention.bytes {
            while try lmdb.statistics(of: history).totalBytes > bytes {
                var taken = 0
                let batch = try oldestHistoryEntries(in: history, from: floor) { _, _ in
                    taken += 1
                    return taken <= 64
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
            // What came before the break no longer leads to the store as it is (no reader is given
            // it): its entries go now, so none lies below the floor, where pruning starts.
            let before = try oldestHistoryEntries(in: history, from: current ?? 0) { key, _ in
                HistoryLayout.version(of: key) < version
            }
            for key in before { try lmdbWrite.delete(key, in: history) }
        } else {
            _ = try lmdbWrite.delete(HistoryLayout.breakKey, in: store.meta)
        }
    }

    /// The keys of the history's oldest entries from version `floor` on, while `take` accepts each
    /// (with its value); the change log's entries between are passed over.
    private func oldestHistoryEntries(
        in history: Database, from floor: Int,
        while take: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws -> [[UInt8]] {
        var found: [[UInt8]] = []
        try lmdbWrite.withCursor(in: history) { cursor in
            func step(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                guard HistoryLayout.isEntryKey(key) else { return true }
                guard try take(key, value) else { return false }
                found.append(Array(key))
                return true
            }
            guard try cursor.seek(atLeast: HistoryLayout.key(for: floor)) != nil else { return }
            var going = try cursor.withCurrent(step)
            while going == true { going = try cursor.withNext(step) }
        }
        return found
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
                _ = try txn.database(named: HistoryLayout.database)
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

/// Encodes a commit's changes for its history entry. A class: the closures that visit the changes
/// share it without boxing each variable they change (and its unchecked state needs no dynamic
/// exclusivity check per object: one writer fills it, in one transaction).
private final class HistoryChangeEncoder {
    @exclusivity(unchecked) var writer = CBORWriter(capacity: 256)
    @exclusivity(unchecked) var count = 0
    /// How a change is written: which operation, and which side follows.
    enum Form: Int {
        /// An insert with its values (`after`).
        case insert
        /// A deletion with the last values (`before`).
        case delete
        /// An update with the changed fields on each side (`before`, `after`).
        case update

        /// The number of entries of the change's map.
        var entries: UInt64 { rawValue == 2 ? 5 : 4 }
    }

    // Each change's map begins with the same bytes for every change of one type and form: they are
    // encoded once per type, not per change.
    @exclusivity(unchecked) private var prefixType: String?
    /// For 4 and 5 entries, made when first needed.
    @exclusivity(unchecked) private var prefixes: [[UInt8]?] = [nil, nil]

    /// Writes the head of a change, up to the name of its first side (`after` for an insert,
    /// `before` otherwise), which the caller writes next.
    func change(type: String, key: UnsafeRawBufferPointer, form: Form) {
        endInserts()
        if type != prefixType {
            prefixType = type
            prefixes = [nil, nil]
        }
        let slot = Int(form.entries) - 4
        if prefixes[slot] == nil {
            var prefix = CBORWriter(capacity: 16 + type.utf8.count)
            prefix.head(5, form.entries)
            Self.typeName.withUnsafeBytes { prefix.raw($0) }
            prefix.text(type)
            Self.keyName.withUnsafeBytes { prefix.raw($0) }
            prefixes[slot] = prefix.bytes
        }
        prefixes[slot]!.withUnsafeBytes { writer.raw($0) }
        writer.byteString(key)
        Self.changeSuffixes[form.rawValue].withUnsafeBytes { writer.raw($0) }
        count += 1
    }

    /// The run of inserts by reference being written: their type, and their keys (each a byte
    /// string) and how many, written out as one change when the run ends.
    @exclusivity(unchecked) private var insertsType: String?
    @exclusivity(unchecked) private var insertedKeys = CBORWriter(capacity: 0)
    @exclusivity(unchecked) private var insertedCount = 0

    /// An insert without its values (a commit that inserts many objects: they are the records it
    /// wrote). Consecutive ones of one type are one change listing their keys.
    func insertByReference(type: String, key: UnsafeRawBufferPointer) {
        if type != insertsType {
            endInserts()
            insertsType = type
        }
        insertedKeys.byteString(key)
        insertedCount += 1
    }

    /// Writes the run of inserts by reference, if any: `{type, op: "insert", keys: [...]}`.
    func endInserts() {
        guard let type = insertsType else { return }
        writer.head(5, 3)
        Self.typeName.withUnsafeBytes { writer.raw($0) }
        writer.text(type)
        Self.insertOp.withUnsafeBytes { writer.raw($0) }
        Self.keysName.withUnsafeBytes { writer.raw($0) }
        writer.head(4, UInt64(insertedCount))
        insertedKeys.bytes.withUnsafeBytes { writer.raw($0) }
        insertedKeys = CBORWriter(capacity: 0)
        insertedCount = 0
        insertsType = nil
        count += 1
    }

    /// The changed fields ``updateInStep(type:key:before:after:)`` found: each name and its value on
    /// each side, as views into the records (kept between updates: no allocation each).
    @exclusivity(unchecked) private var steps:
        [(name: UnsafeRawBufferPointer, before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer)] = []

    /// An update: the fields whose values changed, on each side (nothing when none did).
    func update(type: String, key: [UInt8], before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer)
        throws
    {
        if updateInStep(type: type, key: key, before: before, after: after) { return }
        guard let changed = HistoryLayout.changedFields(before: before, after: after) else {
            throw LodeError.recordDoesNotDecode(
                type: type, key: KeyDescription.describe(key), field: "",
                reason: "the record is not a map of fields")
        }
        guard !changed.isEmpty else { return }
        key.withUnsafeBytes { change(type: type, key: $0, form: .update) }
        for pick in [0, 1] {
            if pick == 1 { Self.afterName.withUnsafeBytes { writer.raw($0) } }
            let present = changed.filter { (pick == 0 ? $0.before : $0.after) != nil }
            writer.head(5, UInt64(present.count))
            for field in present {
                writer.head(3, UInt64(field.name.count))
                writer.raw(field.name)
                writer.raw(pick == 0 ? field.before! : field.after!)
            }
        }
    }

    /// ``update(type:key:before:after:)`` for two records with the same field names in the same
    /// order (one encoder wrote both: the common case), walked side by side without building lists
    /// of their fields; false, having written nothing, when their names differ.
    private func updateInStep(
        type: String, key: [UInt8], before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer
    ) -> Bool {
        steps.removeAll(keepingCapacity: true)
        let inStep = RecordDiff.forEachChangedFieldInStep(before, after) { name, old, new in
            steps.append((name, old, new))
        }
        guard inStep else { return false }
        guard !steps.isEmpty else { return true }
        key.withUnsafeBytes { change(type: type, key: $0, form: .update) }
        for side in 0..<2 {
            if side == 1 { Self.afterName.withUnsafeBytes { writer.raw($0) } }
            writer.head(5, UInt64(steps.count))
            for step in steps {
                writer.head(3, UInt64(step.name.count))
                writer.raw(step.name)
                writer.raw(side == 0 ? step.before : step.after)
            }
        }
        steps.removeAll(keepingCapacity: true)
        return true
    }

    /// What follows a change's key, up to its first side's value: `op`, the operation and the name of
    /// that side — for each ``Form``.
    private static let changeSuffixes: [[UInt8]] = [
        ("insert", "after"), ("delete", "before"), ("update", "before"),
    ]
    .map { op, side in
        var suffix = CBORWriter(capacity: 20)
        suffix.text("op")
        suffix.text(op)
        suffix.text(side)
        return suffix.bytes
    }
    /// `op` and `insert`, encoded.
    private static let insertOp: [UInt8] = {
        var writer = CBORWriter(capacity: 12)
        writer.text("op")
        writer.text("insert")
        return writer.bytes
    }()
    private static let keysName = encoded("keys")
    /// The name `after`, encoded (and the other names the encoder writes).
    private static let afterName = encoded("after")
    static let timeName = encoded("time")
    static let authorName = encoded("author")
    static let changesName = encoded("changes")
    private static let typeName = encoded("type")
    private static let keyName = encoded("key")

    /// `name` as a CBOR text string.
    private static func encoded(_ name: String) -> [UInt8] {
        var writer = CBORWriter(capacity: name.utf8.count + 1)
        writer.text(name)
        return writer.bytes
    }
}
