/// The versions that readers above the store (live results) are on, so change-log pruning keeps the
/// entries they still need.
///
/// Lock order: `versions` is a leaf. Nothing is called while it is held, so a write transaction may
/// ask for ``oldest`` while a live result that holds its own lock moves its pin.
final class VersionPins: Sendable {
    private let versions = Locked<(next: Int, pinned: [Int: Int])>((0, [:]))

    /// A pin at `version`; it moves with ``VersionPin/move(to:)`` and goes when released.
    func pin(at version: Int) -> VersionPin {
        let id = versions.withLock { state in
            let id = state.next
            state.next += 1
            state.pinned[id] = version
            return id
        }
        return VersionPin(pins: self, id: id)
    }

    /// The oldest pinned version, if any.
    var oldest: Int? { versions.withLock { $0.pinned.values.min() } }

    fileprivate func set(_ id: Int, _ version: Int) { versions.withLock { $0.pinned[id] = version } }
    fileprivate func remove(_ id: Int) { _ = versions.withLock { $0.pinned.removeValue(forKey: id) } }
}

/// One reader's place in ``VersionPins``: released with the reader.
final class VersionPin: Sendable {
    private let pins: VersionPins
    private let id: Int

    fileprivate init(pins: VersionPins, id: Int) {
        self.pins = pins
        self.id = id
    }

    /// The reader is now on `version`.
    func move(to version: Int) { pins.set(id, version) }

    deinit { pins.remove(id) }
}

/// Told after each commit of this process (the live layer's notifier); held weakly by the store.
///
/// The store calls it after the write transaction ended and outside its own lock.
protocol CommitListener: AnyObject, Sendable {
    /// A write transaction of this process committed.
    func storeDidCommit()
}
