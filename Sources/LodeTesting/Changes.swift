import Foundation
import Lode
import ModelStorage

/// Why a testing helper could not give what was asked.
public enum LodeTestingError: Error, Equatable, CustomStringConvertible {
    /// The storage follows commits by itself, so a commit's update is delivered on its queue at a
    /// moment of its own; make it with `observesCommits: false` to take updates here.
    case storageFollowsCommits
    /// The edit delivered this many updates where one was expected (`events(during:)` gives them all).
    case notOneUpdate(Int)

    /// What to do about it.
    public var description: String {
        switch self {
        case .storageFollowsCommits:
            return
                "the storage follows commits on its own queue; make it with LiveResultsStorage(store:observesCommits: false) to take its updates synchronously"
        case .notOneUpdate(let count):
            return
                "the edit delivered \(count) updates where one was expected; use events(during:) to see them all"
        }
    }
}

extension Store {
    /// Runs `body` in a write and returns the change `results` report for it — synchronously, with
    /// no queue, observer or sleep. An empty change when the write did not touch the results.
    ///
    /// ```swift
    /// let change = try store.change(of: store.objects(Task.self).sorted(by: \.rank)) { tx in
    ///     try tx.insert(Task(id: 9, title: "new", rank: 0))
    /// }
    /// #expect(change.withoutVersions == .expected(inserted: [0]))
    /// ```
    ///
    /// `keyPaths` limits what counts as a modification, as for `observe`.
    ///
    /// - Throws: what making the results live throws (as `LiveResults.init(_:keyPaths:linkedKeyPaths:)`), what the write
    ///   throws (as `Store.write(_:)`, whatever `body` throws included; nothing is written then), and what
    ///   advancing them throws.
    @available(*, noasync, message: "runs a write, which must not cross an await")
    public func change<Element>(
        of results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        whenWriting body: (WriteTransaction) throws -> Void
    ) throws -> CollectionChange {
        let live = try results.reevaluated().live(keyPaths: keyPaths)
        let before = live.version
        try write(body)
        if let change = try live.refresh() { return change }
        return CollectionChange(fromVersion: before, toVersion: live.version)
    }

    /// Runs `body` in a write and returns the change sectioned results report for it.
    ///
    /// - Throws: as the `change(of:keyPaths:whenWriting:)` of plain results: what making the sections live,
    ///   the write and advancing them throw.
    @available(*, noasync, message: "runs a write, which must not cross an await")
    public func change<Key, Element>(
        of sections: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        whenWriting body: (WriteTransaction) throws -> Void
    ) throws -> SectionedChange {
        let live = try sections.reevaluated().live(keyPaths: keyPaths)
        let before = live.version
        try write(body)
        if let change = try live.refresh() { return change }
        return SectionedChange(fromVersion: before, toVersion: live.version)
    }

    /// Runs `body` in a write and returns the update `storage` delivers for it (already delivered
    /// to its delegate and `updates` stream as usual), or nil when the write changed nothing it
    /// shows.
    ///
    /// - Throws: ``LodeTestingError/storageFollowsCommits`` for a storage that follows commits on its
    ///   own queue (make it with `observesCommits: false`), and whatever the write throws.
    @available(*, noasync, message: "runs a write, which must not cross an await")
    public func update(
        of storage: LiveResultsStorage, whenWriting body: (WriteTransaction) throws -> Void
    ) throws -> StorageUpdate? {
        guard !storage.followsCommits else { throw LodeTestingError.storageFollowsCommits }
        try write(body)
        return try storage.refresh()
    }
}

extension BaseStorage {
    /// Runs `edit` and returns every update, reload and failure the storage delivered during it, in
    /// order. The storage's delegate (if any) still receives them and applies them; without one they
    /// are applied as the storage applies them itself.
    ///
    /// - Throws: whatever `edit` throws.
    public func events(during edit: () throws -> Void) rethrows -> [StorageEvent] {
        let recorder = RecordingDelegate(forwardingTo: delegate)
        delegate = recorder
        defer { delegate = recorder.next }
        try edit()
        return recorder.events
    }

    /// Runs `edit` and returns the one update the storage delivered for it.
    ///
    /// - Throws: ``LodeTestingError/notOneUpdate(_:)`` when it delivered none or several (or a
    ///   reload), and whatever `edit` throws.
    public func update(during edit: () throws -> Void) throws -> StorageUpdate {
        let events = try events(during: edit)
        guard events.count == 1, case .update(let update) = events[0] else {
            throw LodeTestingError.notOneUpdate(events.count)
        }
        return update
    }
}

/// Records what a storage delivers and passes it on to the delegate it replaced.
private final class RecordingDelegate: StorageUpdating {
    weak var next: (any StorageUpdating)?
    var events: [StorageEvent] = []

    init(forwardingTo next: (any StorageUpdating)?) { self.next = next }

    func storageDidPerformUpdate(_ update: StorageUpdate) {
        events.append(.update(update))
        if let next {
            next.storageDidPerformUpdate(update)
        } else {
            update.applyDeferredDatasourceUpdates()
        }
    }

    func storageNeedsReloading() {
        events.append(.reload)
        next?.storageNeedsReloading()
    }

    func storageDidFail(_ error: any Error) {
        events.append(.failure(error))
        next?.storageDidFail(error)
    }
}
