import Dispatch
import Foundation
import LodeStore

/// Keeps an observation alive: it stops on ``cancel()`` or when the token is released.
///
/// The token also keeps the commits ``Store/write(withoutNotifying:_:)`` made silent for its
/// observation: a write marks them on the token, which exists before the observation starts, so a
/// silent write made right after `observe` returns is passed over too.
///
/// Lock order: `lock` is a leaf; stop actions run after it is released.
public final class ObservationToken: @unchecked Sendable {
    // @unchecked: `stopActions`, `cancelled` and `silenced` are guarded by `lock`.
    private let lock = LodeLock("ObservationToken")
    private var stopActions: [() -> Void] = []
    private var cancelled = false
    /// Versions of commits not to be delivered.
    private var silenced = Set<Int>()

    package init() {}

    /// The commit that will have `version` is not to be delivered.
    func silence(version: Int) { _ = lock.withLock { silenced.insert(version) } }

    /// That commit did not happen after all.
    func unsilence(version: Int) { _ = lock.withLock { silenced.remove(version) } }

    /// True when an advance from `from` to `to` passes over exactly one commit made silent; forgets
    /// the silenced versions up to `to` either way (a combined change is delivered as usual).
    func takeSilence(from: Int, to: Int) -> Bool {
        lock.withLock {
            let silent = to == from + 1 && silenced.contains(to)
            silenced = silenced.filter { $0 > to }
            return silent
        }
    }

    /// Runs `action` when the token is cancelled (at once if it already is).
    package func onCancel(_ action: @escaping () -> Void) {
        let runNow = lock.withLock { () -> Bool in
            if cancelled { return true }
            stopActions.append(action)
            return false
        }
        if runNow { action() }
    }

    /// True once cancelled.
    public var isCancelled: Bool { lock.withLock { cancelled } }

    /// Stops the observation; no delivery starts after this returns.
    public func cancel() {
        let actions = lock.withLock { () -> [() -> Void] in
            cancelled = true
            defer { stopActions = [] }
            return stopActions
        }
        for action in actions { action() }
    }

    deinit { cancel() }
}
