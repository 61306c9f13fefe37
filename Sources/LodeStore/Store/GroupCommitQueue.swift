import Foundation
import LMDB

/// One write waiting in a ``GroupCommitQueue``: its closure, and how its caller learns the outcome.
final class GroupedWrite: @unchecked Sendable {
    // @unchecked: `run` and `finish` are only called on the queue's thread, one group at a time;
    // the result each keeps is handed to the caller by `finish` (a continuation or a semaphore,
    // which order the two threads).
    let run: (WriteTransaction) throws -> Void
    let finish: (Error?) -> Void

    init(run: @escaping (WriteTransaction) throws -> Void, finish: @escaping (Error?) -> Void) {
        self.run = run
        self.finish = finish
    }
}

/// The writes waiting to commit together, and whether the queue's thread is draining them.
///
/// Lock order: `waiting` is a leaf (only appended to and emptied under it).
final class GroupCommitQueue: Sendable {
    /// The most writes one commit takes (the rest go in the next).
    static let largestGroup = 256

    let queue = DispatchQueue(label: "lode.group-commit")
    private let waiting = Locked<(writes: [GroupedWrite], draining: Bool, added: Int)>(([], false, 0))

    /// Adds `write`; true when the caller must start draining (nobody is).
    func add(_ write: GroupedWrite) -> Bool {
        waiting.withLock { waiting in
            waiting.writes.append(write)
            waiting.added += 1
            if waiting.draining { return false }
            waiting.draining = true
            return true
        }
    }

    /// How many writes were ever added.
    var addedCount: Int { waiting.withLock { $0.added } }

    /// The next group, oldest first; empty (and draining over) when none is waiting.
    func next() -> [GroupedWrite] {
        waiting.withLock { waiting in
            let group = Array(waiting.writes.prefix(Self.largestGroup))
            waiting.writes.removeFirst(group.count)
            if group.isEmpty { waiting.draining = false }
            return group
        }
    }
}
