import Foundation
import LodeCodec

/// What an undo or redo does with an object that changed since the commits it reverts (see
/// ``UndoStack``).
public enum UndoConflictPolicy: Sendable, Equatable {
    /// Refuse the whole undo with ``LodeError/undoConflict(action:conflicts:)`` naming each object and
    /// field that changed since: nothing is written.
    case refuse
    /// Put back only what nobody changed since: of an updated object, the fields no one changed
    /// after; an inserted or deleted object only when it is as the reverted commits left it. What was
    /// left is reported in ``UndoOutcome/skipped``.
    case skipChanged
}

/// An object an undo or redo would put back that changed since the commits it reverts.
public struct UndoConflict: Sendable, Equatable, CustomStringConvertible {
    /// The object.
    public var object: ObjectID
    /// The fields whose values changed since (empty when the object itself was deleted or made
    /// again).
    public var fields: [String]
    /// What changed, in words: "deleted since", "made again since" or "fields … changed since".
    public var change: String

    /// The object, its fields and what happened, on one line.
    public var description: String {
        "\(object.typeName) \(KeyDescription.describe(object.primaryKey)) (\(change))"
    }
}
