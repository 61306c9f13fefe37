import Dispatch
import Foundation
import LodeLive
import LodeQuery
import LodeStore
import ModelStorage

import class LMDB.ReadSnapshot

/// What a table-like view reads: sections backed by live results — plain results (one section each,
/// of any types) and sectioned results (as many sections as they have keys) — that advance together
/// as one ``LiveGroup``, one `StorageUpdate` per commit across all of them, computed from one version.
///
/// The data-source methods show the version the delegate has applied (an update's data changes when
/// the delegate calls `applyDeferredDatasourceUpdates()`; without a delegate, at once). Header
/// models default to the section keys of sectioned results; set `headerModelProvider` to override.
///
/// Observed commits are delivered on the storage's queue; member edits (`addSection`, …) and
/// ``refresh()`` deliver on the calling thread, so call them on that queue too (for a view: the main
/// queue) to keep updates in order. Updates are delivered outside the storage's lock: a delegate may
/// read the storage from any thread. A failure (a record that no longer decodes, a closed store)
/// reaches the delegate's `storageDidFail(_:)` and the `updates` sequence; the storage keeps what
/// the view shows and catches up with the next commit.
///
/// Lock order: the members advance in the storage's turn (`AdvanceTurn`; the group's and the
/// members' turns come below it) with no lock held; `lock` is a leaf that guards what the data source
/// reads. Rows are read from the views outside it; the delegate and `updates` are called after it is
/// released.
public final class LiveResultsStorage: BaseStorage, Storage, @unchecked Sendable {
    // @unchecked: `visible`, `applied`, `observing` and `observesCommits` are guarded by `lock`;
    // `members` (and each member's state) is used only by the advancer whose turn it is.

    /// A member edit that names a member the storage does not have.
    public enum MemberError: Error, Equatable, Sendable, CustomStringConvertible {
        /// There is no member `index`; the storage has `count`.
        case noSuchMember(index: Int, count: Int)

        /// One line a user can act on.
        public var description: String {
            switch self {
            case .noSuchMember(let index, let count):
                return "live-results storage: no member \(index) (it has \(count))"
            }
        }
    }

    /// One member's sections at one version.
    struct View {
        var sectionCount: Int
        var count: (Int) -> Int
        var item: (IndexPath) throws -> Any?
        var objectID: (IndexPath) throws -> ObjectID?
        var header: (Int) -> Any?
        var identifier: (Int) -> SectionIdentifier
    }

    /// A member: its live results (a member of the storage's group) and its view at the version it is
    /// on.
    final class Member: LiveGroupMember {
        private let live: any LiveGroupMember
        /// The view at the member's version, made after each advance.
        private let makeView: () throws -> View
        private(set) var view: View
        /// How many sections the last composed update gave the member (0 before it was shown).
        var composedSections = 0

        init(live: any LiveGroupMember, makeView: @escaping () throws -> View) throws {
            self.live = live
            self.makeView = makeView
            self.view = try makeView()
        }

        var shape: MemberShape { live.shape }

        func advanceMember(to snapshot: ReadSnapshot, index: Int) throws -> LiveGroup.Change? {
            let change = try live.advanceMember(to: snapshot, index: index)
            view = try makeView()
            return change
        }
    }

    package let store: Store
    let queue: DispatchQueue
    let group: LiveGroup
    let lock = LodeLock("LiveResultsStorage", recursive: true)
    /// The turn in which members are edited and advanced.
    let turn = AdvanceTurn()
    var members: [Member] = []
    var visible: [View] = []
    /// The delivered updates and the newest the view applied (used under `lock`).
    let applied = AppliedUpdates()
    /// True once the observation that follows commits has started (used under `lock`).
    var observing = false
    var observesCommits: Bool

    /// The token of the storage's observation of the store, for the storage's whole life: pass it to
    /// ``Store/write(withoutNotifying:_:)`` for an edit the view already shows (a row the user just
    /// moved), so the storage advances past that commit without an update. Cancelling it is
    /// ``stopObserving()``.
    public let observationToken = ObservationToken()

    /// True while the storage follows every commit by itself (it was made with `observesCommits`
    /// and ``stopObserving()`` was not called); otherwise ``refresh()`` advances it.
    public var followsCommits: Bool { lock.withLock { observesCommits } }

    /// A storage over `store`. Unless `observesCommits` is false, every commit (from any writer or
    /// process) is followed: changes are computed and delivered on `queue` (by default a serial
    /// queue of the storage's own; pass `.main` for a view). Otherwise call ``refresh()`` to advance.
    public init(store: Store, queue: DispatchQueue? = nil, observesCommits: Bool = true) {
        self.store = store
        self.queue = queue ?? DispatchQueue(label: "lode.storage")
        self.group = LiveGroup(store: store)
        self.observesCommits = observesCommits
        super.init()
        headerModelProvider = { [weak self] section in self?.defaultHeader(section) }
        observationToken.onCancel { [weak self] in
            guard let self else { return }
            self.lock.withLock { self.observesCommits = false }
        }
    }

    // MARK: Data source

    /// The number of sections the view has applied.
    ///
    /// - Complexity: O(*m*) for *m* members; it never waits for an advance.
    public func numberOfSections() -> Int { lock.withLock { visible.reduce(0) { $0 + $1.sectionCount } } }

    /// The number of items in a section, as applied.
    ///
    /// - Complexity: O(*m*) for *m* members; it never waits for an advance.
    public func numberOfItems(inSection section: Int) -> Int {
        lock.withLock { locate(section).map { visible[$0.member].count($0.local) } ?? 0 }
    }

    /// The typed object at an index path, as applied.
    ///
    /// Every row shown was decoded when its member advanced, so reading it again succeeds; if it does
    /// not (the record changed under the same version, which LMDB rules out), the error goes to the
    /// delegate's `storageDidFail(_:)` and `updates`, never into a blank row unannounced.
    ///
    /// - Complexity: O(*m* + log *N*) for *m* members and *N* objects of the row's type, and one decode (the
    ///   row's member may keep it decoded).
    public func item(at indexPath: IndexPath) -> Any? {
        read(indexPath) { view, path in try view.item(path) }
    }

    /// The identity of the object at an index path, as applied (failures are reported as for
    /// ``item(at:)``).
    ///
    /// - Complexity: O(*m*) for *m* members, without decoding.
    public func objectID(at indexPath: IndexPath) -> ObjectID? {
        read(indexPath) { view, path in try view.objectID(path) }
    }

    /// Reads one row of the applied views (outside the lock: it may decode); a failure goes to the
    /// delegate and `updates`.
    private func read<T>(_ indexPath: IndexPath, _ body: (View, IndexPath) throws -> T?) -> T? {
        let located = lock.withLock { () -> (View, IndexPath)? in
            guard indexPath.count == 2, let (member, local) = locate(indexPath.section) else { return nil }
            return (visible[member], IndexPath(item: indexPath.item, section: local))
        }
        guard let (view, path) = located else { return nil }
        let found = Result { try body(view, path) }
        switch found {
        case .success(let value): return value
        case .failure(let error):
            report(error)
            return nil
        }
    }

    /// Delivers a failure met outside an advance (reading a row) on the storage's queue.
    func report(_ error: any Error) {
        queue.async { [weak self] in self?.deliverFailure(error) }
    }

    /// The identities of every section's objects as one diffable snapshot. Sections are named by the
    /// identifiers their members were given (`sectionIdentifier:` for plain results, a function of
    /// the key for sectioned results); by default a plain member's section is named by its type
    /// (`"Task"`) and a sectioned member's by type and key (`"Task.done"`), with `#2`, `#3`… appended
    /// to a default name already used. Throws when two sections have one identifier or an object
    /// shows in two sections: a diffable snapshot holds each identity once.
    ///
    /// - Complexity: O(*n*) for *n* objects in all sections, without decoding: identities are read from the
    ///   published results.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes.
    public func snapshot() throws -> ModelStorage.Snapshot<SectionIdentifier, ObjectID> {
        // The applied views, taken at once so that every section comes from one version.
        let views = lock.withLock { visible }
        var snapshot = ModelStorage.Snapshot<SectionIdentifier, ObjectID>()
        var used: [String: Int] = [:]
        for view in views {
            for local in 0..<view.sectionCount {
                var identifier = view.identifier(local)
                if let name = identifier.base as? DefaultSectionName {
                    used[name.text, default: 0] += 1
                    let count = used[name.text]!
                    identifier = SectionIdentifier(count > 1 ? "\(name.text)#\(count)" : name.text)
                }
                try snapshot.appendSections([identifier])
                try snapshot.appendItems(
                    try (0..<view.count(local)).compactMap {
                        try view.objectID(IndexPath(item: $0, section: local))
                    })
            }
        }
        return snapshot
    }

    private func locate(_ section: Int) -> (member: Int, local: Int)? {
        Self.locate(section, in: visible)
    }

    /// The member and its own section for a section of the views.
    private static func locate(_ section: Int, in views: [View]) -> (member: Int, local: Int)? {
        var start = 0
        for (index, view) in views.enumerated() {
            if section < start + view.sectionCount { return (index, section - start) }
            start += view.sectionCount
        }
        return nil
    }

    private func defaultHeader(_ section: Int) -> Any? {
        lock.withLock { locate(section).flatMap { visible[$0.member].header($0.local) } }
    }

    deinit { observationToken.cancel() }
}

/// The storage as a ``LiveSource``, held weakly by its observation so the storage can go.
final class StorageSource: LiveSource, @unchecked Sendable {
    // @unchecked: a weak reference set once; the storage is thread-safe.
    private weak var storage: LiveResultsStorage?
    package let store: Store

    init(storage: LiveResultsStorage) {
        self.storage = storage
        self.store = storage.store
    }

    package var version: Int { storage?.version ?? Int.max }

    package func advance(to snapshot: ReadSnapshot) throws -> StorageUpdate? {
        try storage?.advance(to: snapshot)
    }

    /// The view already shows the commit: the data source catches up without an update.
    package func advanceSilently(to snapshot: ReadSnapshot) throws {
        try storage?.advance(to: snapshot)?.applyDeferredDatasourceUpdates()
    }
}

extension Results {
    /// The identity of the object at `position`, or nil outside the results.
    func objectID(at position: Int) throws -> ObjectID? {
        let keys = try evaluation().keys
        guard position >= 0, position < keys.count else { return nil }
        return ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[position]))
    }
}
