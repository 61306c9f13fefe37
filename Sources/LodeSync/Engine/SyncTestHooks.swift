import LodeStore

/// Points where tests step into a client to force what timing makes rare: the answer to a batch the
/// server committed lost on the way back. Empty in use.
///
/// Lock order: `hooks` is a leaf; a hook runs after it is released.
final class SyncTestHooks: Sendable {
    private let hooks = Locked<(@Sendable (Int64) throws -> Void)?>(nil, name: "the sync test hooks")

    /// Runs `hook` with the batch's number after the server committed it, before the client records
    /// the answer; what it throws is handled as a failure of the send.
    func onServerCommit(_ hook: (@Sendable (Int64) throws -> Void)?) { hooks.withLock { $0 = hook } }

    func serverCommitted(_ batch: Int64) throws { try hooks.withLock { $0 }?(batch) }
}
