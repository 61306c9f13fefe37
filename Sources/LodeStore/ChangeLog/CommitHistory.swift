import Foundation
import LMDB
import LodeCodec

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
