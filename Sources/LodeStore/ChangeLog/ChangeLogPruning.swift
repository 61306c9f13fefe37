import Foundation
import LMDB
import LodeCodec

/// Pruning keeps the log bounded: entries older than the horizon and older than every live result
/// of this process are deleted, and `@meta` records (under `changes.floor`, 8 bytes big-endian) the
/// oldest version whose changes the log no longer holds in full.
///
/// A prune costs what it removes: it walks the log from its floor with one cursor, reads each
/// entry's version from its key and its time from the first bytes of its value (borrowed from the
/// map, never copied or decoded in full), and stops at the first entry it keeps.
enum ChangeLogPruning {
    static let floorKey = Array("changes.floor".utf8)
    /// A commit whose version is a multiple of this prunes the log.
    static let interval = 64

    /// The prefix of the `@meta` keys that keep the log from a version on, one per holder (the sync
    /// layer's upload cursor): `changes.retain.<holder>` → 8 bytes big-endian. Unlike a live result's
    /// pin, it holds across processes and restarts.
    static let retainPrefix = Array("changes.retain.".utf8)

    /// The oldest version any durable holder keeps the log from, if any.
    static func retained(in lmdb: LMDB.Transaction, meta: Database) throws -> Int? {
        var oldest: Int?
        try lmdb.forEachEntry(in: meta, from: retainPrefix) { entry in
            guard entry.key.starts(with: retainPrefix) else { return false }
            guard entry.value.count == 8 else { return true }
            let version = ChangeLogEntry.version(of: entry.value)
            oldest = min(oldest ?? version, version)
            return true
        }
        return oldest
    }

    static func floor(in lmdb: LMDB.Transaction, meta: Database) throws -> Int? {
        guard let bytes = try lmdb.get(floorKey, in: meta), bytes.count == 8 else { return nil }
        return ChangeLogEntry.version(of: bytes)
    }

    /// What one prune did.
    struct Outcome: Equatable {
        /// Entries whose version and time were read: the removed ones and the first one kept.
        var examined = 0
        /// Entries removed.
        var removed = 0
        /// Entries decoded in full because their time was not their first field.
        var decoded = 0
    }

    /// Removes the entries before version `limit` written before `cutoff`, and moves the floor.
    static func prune(
        _ txn: LMDB.WriteTransaction, log: Database, meta: Database, before limit: Int,
        writtenBefore cutoff: Date
    ) throws -> Outcome {
        var outcome = Outcome()
        var doomed: [[UInt8]] = []
        var floor: Int?
        // From the first version the log still holds: the history's entries of older versions (which
        // share the database) are not walked again at every prune.
        let start = ChangeLogEntry.key(for: try Self.floor(in: txn, meta: meta) ?? 0)
        try txn.withCursor(in: log) { cursor in
            // Each step says whether the entry goes; nil at the end of the log.
            func judge(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                guard key.count == 8 else { return true }  // not an entry: skip it, keep looking
                outcome.examined += 1
                let version = ChangeLogEntry.version(of: key)
                let time: Date
                if let read = ChangeLogEntry.time(ofEncoded: value) {
                    time = read
                } else {
                    outcome.decoded += 1
                    time = try CBORDecoder().decode(ChangeLogEntry.self, from: Array(value)).time
                }
                guard version < limit, time <= cutoff else { return false }
                doomed.append(Array(key))
                floor = version + 1
                return true
            }
            guard try cursor.seek(atLeast: start) != nil else { return }
            var going = try cursor.withCurrent(judge)
            while going == true { going = try cursor.withNext(judge) }
        }
        for key in doomed { try txn.delete(key, in: log) }
        outcome.removed = doomed.count
        if let floor { try txn.put(ChangeLogEntry.key(for: floor), forKey: floorKey, in: meta) }
        return outcome
    }
}
