import Synchronization

/// Points where tests step into the live layer to force an interleaving (a commit that prunes the
/// change log while a live result advances under its lock). Empty in use.
///
/// Lock order: `hooks` is a leaf; a hook runs after it is released.
final class LiveTestHooks: Sendable {
    private let hooks = Mutex<(@Sendable () -> Void)?>(nil)

    /// Runs `hook` each time a live result of the store advances, while it holds its own lock.
    func onAdvance(_ hook: (@Sendable () -> Void)?) { hooks.withLock { $0 = hook } }

    func advancing() { hooks.withLock { $0 }?() }
}
