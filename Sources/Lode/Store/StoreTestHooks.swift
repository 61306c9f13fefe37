import LMDB
import Synchronization

/// Points where tests step into the store's own code to force an interleaving that timing alone
/// makes rare (a reader that sees an older version than the environment reports). Empty in use.
///
/// Lock order: `hooks` is a leaf; a hook runs after it is released.
final class StoreTestHooks: Sendable {
    private let hooks = Mutex<Hooks>(Hooks())

    private struct Hooks {
        var snapshot: (@Sendable (ReadSnapshot) -> ReadSnapshot)?
    }

    /// Replaces the snapshot ``Store/currentSnapshot()`` returns (nil: no hook).
    func onCurrentSnapshot(_ hook: (@Sendable (ReadSnapshot) -> ReadSnapshot)?) {
        hooks.withLock { $0.snapshot = hook }
    }

    func currentSnapshot(_ snapshot: ReadSnapshot) -> ReadSnapshot {
        guard let hook = hooks.withLock({ $0.snapshot }) else { return snapshot }
        return hook(snapshot)
    }
}
