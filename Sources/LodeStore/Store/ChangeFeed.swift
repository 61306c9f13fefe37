import Foundation
import LMDB
import LodeCodec

/// One commit as the change log records it: its version, when it was made, and the net change of
/// each object it touched — readable without the app's Swift types (`lode-dump changes` and `watch`
/// print these).
public struct Commit: Sendable, Equatable {
    /// The version the commit made (its LMDB transaction id).
    public var version: Int
    /// When it was made.
    public var time: Date
    /// The net change of each object, in the order first touched.
    public var changes: [ObjectChange]
}

/// What one commit did to one object (or, for `clear` and `bulk`, to a whole type).
public struct ObjectChange: Sendable, Equatable {
    /// The kind of change.
    public enum Kind: Sendable, Equatable {
        /// The object was inserted.
        case insert
        /// The object was updated; `fields` are the top-level fields whose values changed (nil when
        /// unknown).
        case update(fields: [String]?)
        /// The object was deleted.
        case delete
        /// Every object of the type was deleted.
        case clear
        /// `count` objects of the type changed, too many to list one by one.
        case bulk(count: Int)
    }

    /// The type's store name.
    public var type: String
    /// The object's encoded primary key (empty for `clear` and `bulk`).
    public var key: [UInt8]
    /// What happened.
    public var kind: Kind

    /// The primary key as text (an integer, a UUID, a string…), for display.
    public var keyDescription: String { KeyDescription.describe(key) }

    /// `insert`, `update`, `delete`, `clear` or `bulk`.
    public var operation: String {
        switch kind {
        case .insert: return "insert"
        case .update: return "update"
        case .delete: return "delete"
        case .clear: return "clear"
        case .bulk: return "bulk"
        }
    }

    init(_ change: ChangeLogEntry.Change) {
        type = change.type
        key = [UInt8](change.key)
        switch change.op {
        case .insert: kind = .insert
        case .update: kind = .update(fields: change.fields)
        case .delete: kind = .delete
        case .clear: kind = .clear
        case .bulk: kind = .bulk(count: change.count ?? 0)
        }
    }
}

/// The commits a transaction's version holds after some earlier version.
public struct CommitHistory: Sendable, Equatable {
    /// The commits after the version asked for, up to the transaction's, oldest first.
    public var commits: [Commit]
    /// False when the log was pruned past the version asked for: commits before the first one listed
    /// are missing (their versions start at ``firstAvailable``).
    public var isComplete: Bool
    /// The first version whose changes the log still holds, if it was ever pruned.
    public var firstAvailable: Int?
}

extension Transaction {
    /// The commits after `version` up to this transaction's version, read from the change log.
    ///
    /// - Complexity: O(*k* + *e*) for the *k* commits after `version` and their *e* object changes, read in
    ///   one pass of the log.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for an entry that is not a
    ///   change-log entry (`@changes`, the entry's version).
    public func commits(after version: Int) throws -> CommitHistory {
        guard let log = store.changeLog else { return CommitHistory(commits: [], isComplete: false) }
        return try mapStorageErrors {
            let floor = try ChangeLogPruning.floor(in: lmdb, meta: store.meta)
            var commits: [Commit] = []
            let decoder = CBORDecoder()
            for entry in try lmdb.entries(in: log, from: ChangeLogEntry.key(for: max(version, -1) + 1))
            where entry.key.count == 8 {
                let committed = ChangeLogEntry.version(of: entry.key)
                if committed > self.version { break }
                let logged: ChangeLogEntry
                do {
                    logged = try decoder.decode(ChangeLogEntry.self, from: entry.value)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: StoreLayout.changes, key: "\(committed)",
                        field: (error as? DecodingError)?.fieldPath ?? "", reason: "\(error)")
                }
                commits.append(
                    Commit(
                        version: committed, time: logged.time, changes: logged.changes.map(ObjectChange.init))
                )
            }
            return CommitHistory(
                commits: commits, isComplete: floor.map { $0 <= version + 1 } ?? true, firstAvailable: floor)
        }
    }
}
