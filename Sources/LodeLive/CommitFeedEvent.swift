import Dispatch
import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// What an observer of a store's commits receives.
public enum CommitFeedEvent: Sendable {
    /// The commits since the last delivery, oldest first.
    case commits(CommitBatch)
    /// Reading the log failed; observation goes on (and ends after `storeClosed`).
    case error(LodeError)
}
