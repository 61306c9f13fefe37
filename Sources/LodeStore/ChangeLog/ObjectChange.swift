import Foundation
import LMDB
import LodeCodec

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
