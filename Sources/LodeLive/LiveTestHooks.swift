import LodeStore

import class LMDB.ReadSnapshot

/// Points where tests step into the live layer to force an interleaving that timing alone makes
/// rare: a commit that prunes the change log while a live result advances under its lock, a
/// delivery whose fresh read sees an older version than the notifier saw (LMDB allows it:
/// `mdb_env_info` runs ahead of new readers). Empty in use.
///
/// Lock order: `hooks` is a leaf; a hook runs after it is released.
final class LiveTestHooks: Sendable {
    private let hooks = Locked<Hooks>(Hooks())

    private struct Hooks {
        var advance: (@Sendable () -> Void)?
        var deliverySnapshot: (@Sendable (ReadSnapshot) -> ReadSnapshot)?
        var sourceMade: (@Sendable () -> Void)?
    }

    /// Runs `hook` on an observation's queue after its source was made, before it starts following
    /// the store.
    func onSourceMade(_ hook: (@Sendable () -> Void)?) { hooks.withLock { $0.sourceMade = hook } }

    func sourceMade() { hooks.withLock { $0.sourceMade }?() }

    /// Runs `hook` each time a live result of the store advances, while it holds its own lock.
    func onAdvance(_ hook: (@Sendable () -> Void)?) { hooks.withLock { $0.advance = hook } }

    /// Replaces the snapshot of the last version that an observation reads before it advances.
    func onDeliverySnapshot(_ hook: (@Sendable (ReadSnapshot) -> ReadSnapshot)?) {
        hooks.withLock { $0.deliverySnapshot = hook }
    }

    func advancing() { hooks.withLock { $0.advance }?() }

    func deliverySnapshot(_ snapshot: ReadSnapshot) -> ReadSnapshot {
        guard let hook = hooks.withLock({ $0.deliverySnapshot }) else { return snapshot }
        return hook(snapshot)
    }
}
