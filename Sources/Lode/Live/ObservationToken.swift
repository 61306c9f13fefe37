import Dispatch
import Foundation
import LMDB

/// Keeps an observation alive: it stops on ``cancel()`` or when the token is released.
public final class ObservationToken: @unchecked Sendable {
    // @unchecked: `stopActions` and `cancelled` are guarded by `lock`; `silencer` is weak and set once,
    // before the token is handed out or on the observation's queue before any write can use it.
    private let lock = NSLock()
    private var stopActions: [() -> Void] = []
    private var cancelled = false
    /// The observation, for writes that skip it.
    weak var silencer: (any DeliverySilencing)?

    init() {}

    /// Runs `action` when the token is cancelled (at once if it already is).
    func onCancel(_ action: @escaping () -> Void) {
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
