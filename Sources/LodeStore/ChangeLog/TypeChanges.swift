import Foundation
import LMDB
import LodeCodec

/// The changes to one type between two versions, read from the log.
package struct TypeChanges {
    /// Net operation per primary key across the versions.
    package var keys: [[UInt8]: ChangeLogEntry.Operation] = [:]
    /// For updated keys: the fields that changed, or nil when unknown.
    var fields: [[UInt8]: Set<String>] = [:]
    /// Updated keys whose changed fields are unknown.
    var unknownFields = Set<[UInt8]>()
    /// True when the log could not say what changed (it was pruned, or the type was cleared): the
    /// query must be evaluated again in full.
    package var needsFullEvaluation = false

    /// Reads the changes to `typeName` in versions `(from, to]`.
    static func read(
        _ typeName: String, from: Int, to: Int, in lmdb: LMDB.Transaction, log: Database, meta: Database
    ) throws -> TypeChanges {
        var result = TypeChanges()
        guard to > from else { return result }
        if let floor = try ChangeLogPruning.floor(in: lmdb, meta: meta), floor > from + 1 {
            result.needsFullEvaluation = true
            return result
        }
        let decoder = CBORDecoder()
        for entry in try lmdb.logEntries(in: log, after: from, through: to)
        where entry.key.count == 8 {
            let version = ChangeLogEntry.version(of: entry.key)
            if version > to { break }
            let logged = try decoder.decode(ChangeLogEntry.self, from: entry.value)
            for change in logged.changes where change.type == typeName {
                switch change.op {
                case .clear, .bulk:
                    result.needsFullEvaluation = true
                case .insert, .update, .delete:
                    let key = [UInt8](change.key)
                    if change.op == .update {
                        if let changed = change.fields {
                            result.fields[key, default: []].formUnion(changed)
                        } else {
                            result.unknownFields.insert(key)
                        }
                    }
                    if let previous = result.keys[key] {
                        // Combine: insert+delete = gone (but it may have been in the result before
                        // only if it existed: an insert means it did not), delete+insert = update.
                        switch (previous, change.op) {
                        case (.insert, .delete): result.keys[key] = .delete
                        case (.delete, .insert): result.keys[key] = .update
                        case (.insert, _): result.keys[key] = .insert
                        default: result.keys[key] = change.op
                        }
                    } else {
                        result.keys[key] = change.op
                    }
                }
            }
        }
        return result
    }

    /// True when the update of `key` may have changed one of `observed` (nil: any field counts).
    package func modifies(_ key: [UInt8], observing observed: Set<String>?) -> Bool {
        guard let observed else { return true }
        if unknownFields.contains(key) { return true }
        return !(fields[key] ?? []).isDisjoint(with: observed)
    }
}

extension LMDB.Transaction {
    /// The change-log entries of the versions after `from` up to `through`, in order (copies; an
    /// error throws rather than ending the list early).
    ///
    /// - Throws: LMDB's errors, and ``LMDBError/Code/sealBroken`` for an entry of an encrypted store
    ///   that does not open.
    func logEntries(in log: Database, after from: Int, through: Int) throws -> [Cursor.Entry] {
        var entries: [Cursor.Entry] = []
        try withCursor(in: log) { cursor in
            guard try cursor.seek(atLeast: ChangeLogEntry.key(for: from + 1)) != nil else { return }
            var key = try cursor.storedKey(.current)
            while let found = key {
                // Keys of another length are not the change log's: the history's entries lie between,
                // passed over by their key (their values are not read).
                if found.count == 8 {
                    if ChangeLogEntry.version(of: found) > through { break }
                    if let entry = try cursor.current() { entries.append(entry) }
                }
                key = try cursor.storedKey(.next)
            }
        }
        return entries
    }
}
