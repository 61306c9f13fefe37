import Foundation
import LMDB

/// The versions this process's objects and other processes' readers hold: listed, refused past
/// ``StoreConfiguration/maxVersionLag`` before a commit, and handed to ``Store/versionLagHandler``
/// after one.
extension Store {
    /// The versions objects of this process hold (results read outside a transaction, live results),
    /// oldest first, with what holds each and how far behind the last commit it is.
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails.
    public func heldVersions() throws -> [HeldVersion] {
        pins.held(latest: try environment().info.lastTransactionID)
    }

    /// Throws when a held version would fall further behind than ``StoreConfiguration/maxVersionLag``.
    func refuseIfVersionHeldTooLong(committing version: Int) throws {
        guard let limit = configuration.maxVersionLag, let oldest = pins.oldestHeld,
            version - oldest > limit, let held = pins.held(latest: version).first
        else { return }
        throw LodeError.versionHeldTooLong(held, limit: limit)
    }

    /// Hands the versions that just fell too far behind to the handler, on the committing thread
    /// after the commit (a process that exits right after a write has printed its warning).
    func warnAboutHeldVersions(latest: Int, in environment: Environment) {
        let threshold = configuration.versionLagWarning
        guard threshold > 0, let handler = versionLagHandler else { return }
        var lagging: [HeldVersion] = []
        if let oldest = pins.oldestHeld, latest - oldest >= threshold {
            lagging = pins.newlyLagging(latest: latest, threshold: threshold)
        }
        lagging += laggingReadersOfOtherProcesses(latest: latest, threshold: threshold, in: environment)
        LockWatch.check(entering: "the version-lag handler")
        for held in lagging { handler(held) }
    }

    /// Readers of other processes (a frozen or slow one) `threshold` versions behind and not warned
    /// about at that version yet, read from the reader table every tenth of `threshold` commits.
    private func laggingReadersOfOtherProcesses(latest: Int, threshold: Int, in environment: Environment)
        -> [HeldVersion]
    {
        let due = otherReaders.withLock { state -> Bool in
            guard latest - state.checkedAt >= Swift.max(1, threshold / 10) else { return false }
            state.checkedAt = latest
            return true
        }
        guard due else { return [] }
        let me = getpid()
        var oldest: [Int32: Int] = [:]
        for slot in environment.readers() where slot.processID != me {
            guard let version = slot.transactionID, latest - version >= threshold, slot.processIsAlive else {
                continue
            }
            oldest[slot.processID] = Swift.min(oldest[slot.processID] ?? version, version)
        }
        return otherReaders.withLock { state in
            let fresh = oldest.filter { state.warned[$0.key] != $0.value }
            state.warned = oldest
            return fresh.sorted { $0.key < $1.key }.map { process, version in
                HeldVersion(
                    version: version, owners: ["a reader of process \(process)"], behind: latest - version,
                    processID: process)
            }
        }
    }
}
