/// The versions that objects of this process hold (results, live results), with what holds each:
/// change-log pruning keeps the entries live results still need, and a commit warns (or refuses)
/// when a held version falls too far behind (LMDB cannot reuse a page any held version still sees).
///
/// Lock order: `state` is a leaf. Nothing is called while it is held, so a write transaction may
/// ask for ``oldest`` while a live result that holds its own lock moves its pin.
package final class VersionPins: Sendable {
    private struct Entry {
        package var version: Int
        var owner: String
        var needsChangeLog: Bool
        /// Warned about at this version already (a pin warns once per version it is on).
        var warned = false
    }

    private let state = Locked<(next: Int, pinned: [Int: Entry])>((0, [:]))

    /// A pin at `version`, held by `owner` (a description such as `LiveResults<Task>`); it moves with
    /// ``VersionPin/move(to:)`` and goes when released. With `needsChangeLog`, pruning keeps the
    /// change log from that version on.
    package func pin(at version: Int, owner: String, needsChangeLog: Bool) -> VersionPin {
        let id = state.withLock { state in
            let id = state.next
            state.next += 1
            state.pinned[id] = Entry(version: version, owner: owner, needsChangeLog: needsChangeLog)
            return id
        }
        return VersionPin(pins: self, id: id)
    }

    /// The oldest version whose holder needs the change log, if any.
    var oldest: Int? {
        state.withLock { $0.pinned.values.lazy.filter(\.needsChangeLog).map(\.version).min() }
    }

    /// The oldest version held by anyone.
    var oldestHeld: Int? { state.withLock { $0.pinned.values.lazy.map(\.version).min() } }

    /// Every held version, oldest first, with its holders and how far `latest` is ahead of it.
    func held(latest: Int) -> [HeldVersion] {
        let entries = state.withLock { Array($0.pinned.values) }
        return Self.grouped(entries.map { ($0.version, $0.owner) }, latest: latest)
    }

    /// The versions held `threshold` or more versions behind `latest` by holders not warned about
    /// yet (each holder is marked as warned until it moves), with all their holders.
    func newlyLagging(latest: Int, threshold: Int) -> [HeldVersion] {
        let entries = state.withLock { state -> [Entry] in
            var versions: Set<Int> = []
            for (id, entry) in state.pinned where !entry.warned && latest - entry.version >= threshold {
                state.pinned[id]?.warned = true
                versions.insert(entry.version)
            }
            return state.pinned.values.filter { versions.contains($0.version) }
        }
        return Self.grouped(entries.map { ($0.version, $0.owner) }, latest: latest)
    }

    /// One ``HeldVersion`` per version, oldest first; its holders sorted, repeats counted.
    private static func grouped(_ entries: [(version: Int, owner: String)], latest: Int) -> [HeldVersion] {
        Dictionary(grouping: entries, by: \.version).map { version, entries in
            let counts = Dictionary(grouping: entries, by: \.owner).mapValues(\.count)
            return HeldVersion(
                version: version,
                owners: counts.keys.sorted().map { counts[$0]! > 1 ? "\($0) ×\(counts[$0]!)" : $0 },
                behind: latest - version)
        }.sorted { $0.version < $1.version }
    }

    fileprivate func set(_ id: Int, _ version: Int) {
        state.withLock { state in
            guard state.pinned[id]?.version != version else { return }
            state.pinned[id]?.version = version
            state.pinned[id]?.warned = false
        }
    }

    fileprivate func remove(_ id: Int) { _ = state.withLock { $0.pinned.removeValue(forKey: id) } }
}

/// One holder's place in ``VersionPins``: released with the holder.
package final class VersionPin: Sendable {
    private let pins: VersionPins
    private let id: Int

    fileprivate init(pins: VersionPins, id: Int) {
        self.pins = pins
        self.id = id
    }

    /// The holder is now on `version`.
    package func move(to version: Int) { pins.set(id, version) }

    deinit { pins.remove(id) }
}
