import Dispatch
import Foundation
import LMDB
import ModelStorage

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
/// Lock order: `lock` is held while the members advance (through the group, whose lock and the
/// members' come below it); the delegate and `updates` are called after it is released.
public final class LiveResultsStorage: BaseStorage, Storage, @unchecked Sendable {
    // @unchecked: `members`, `visible`, `observation` and `observesCommits` are guarded by `lock`;
    // the group has its own lock.

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
        var objectID: (IndexPath) -> ObjectID?
        var header: (Int) -> Any?
        var identifier: (Int) -> SectionIdentifier
    }

    /// A member: its live results (a member of the storage's group) and its view at the version it is
    /// on.
    final class Member: LiveGroupMember {
        private let live: any LiveGroupMember
        /// The view at the member's version, made after each advance.
        private let makeView: () -> View
        private(set) var view: View

        init(live: any LiveGroupMember, makeView: @escaping () -> View) {
            self.live = live
            self.makeView = makeView
            self.view = makeView()
        }

        var shape: MemberShape { live.shape }

        func advanceMember(to snapshot: ReadSnapshot, index: Int) throws -> LiveGroup.Change? {
            let change = try live.advanceMember(to: snapshot, index: index)
            view = makeView()
            return change
        }
    }

    private let store: Store
    private let queue: DispatchQueue
    private let group: LiveGroup
    private let lock = NSRecursiveLock()
    private var members: [Member] = []
    private var visible: [View] = []
    private var token: ObservationToken?
    private var observesCommits: Bool

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
    }

    // MARK: Data source

    /// The number of sections the view has applied.
    public func numberOfSections() -> Int { lock.withLock { visible.reduce(0) { $0 + $1.sectionCount } } }

    /// The number of items in a section, as applied.
    public func numberOfItems(inSection section: Int) -> Int {
        lock.withLock { locate(section).map { visible[$0.member].count($0.local) } ?? 0 }
    }

    /// The typed object at an index path, as applied.
    ///
    /// Every row shown was decoded when its member advanced, so reading it again succeeds; if it does
    /// not (the record changed under the same version, which LMDB rules out), the error goes to the
    /// delegate's `storageDidFail(_:)` and `updates`, never into a blank row unannounced.
    public func item(at indexPath: IndexPath) -> Any? {
        let found = lock.withLock { () -> Result<Any?, any Error> in
            guard indexPath.count == 2, let (member, local) = locate(indexPath.section) else {
                return .success(nil)
            }
            return Result { try visible[member].item(IndexPath(item: indexPath.item, section: local)) }
        }
        switch found {
        case .success(let item): return item
        case .failure(let error):
            queue.async { [weak self] in self?.deliverFailure(error) }
            return nil
        }
    }

    /// The identity of the object at an index path, as applied.
    public func objectID(at indexPath: IndexPath) -> ObjectID? {
        lock.withLock {
            guard indexPath.count == 2, let (member, local) = locate(indexPath.section) else { return nil }
            return visible[member].objectID(IndexPath(item: indexPath.item, section: local))
        }
    }

    /// The identities of every section's objects as one diffable snapshot. Sections are named by the
    /// identifiers their members were given (`sectionIdentifier:` for plain results, a function of
    /// the key for sectioned results); by default a plain member's section is named by its type
    /// (`"Task"`) and a sectioned member's by type and key (`"Task.done"`), with `#2`, `#3`… appended
    /// to a default name already used. Throws when two sections have one identifier or an object
    /// shows in two sections: a diffable snapshot holds each identity once.
    public func snapshot() throws -> ModelStorage.Snapshot<SectionIdentifier, ObjectID> {
        try lock.withLock {
            var snapshot = ModelStorage.Snapshot<SectionIdentifier, ObjectID>()
            var used: [String: Int] = [:]
            for section in 0..<numberOfSections() {
                guard let (member, local) = locate(section) else { break }
                var identifier = visible[member].identifier(local)
                if let name = identifier.base as? DefaultSectionName {
                    used[name.text, default: 0] += 1
                    let count = used[name.text]!
                    identifier = SectionIdentifier(count > 1 ? "\(name.text)#\(count)" : name.text)
                }
                try snapshot.appendSections([identifier])
                try snapshot.appendItems(
                    (0..<numberOfItems(inSection: section)).compactMap {
                        objectID(at: IndexPath(item: $0, section: section))
                    })
            }
            return snapshot
        }
    }

    private func locate(_ section: Int) -> (member: Int, local: Int)? {
        var start = 0
        for (index, view) in visible.enumerated() {
            if section < start + view.sectionCount { return (index, section - start) }
            start += view.sectionCount
        }
        return nil
    }

    private func defaultHeader(_ section: Int) -> Any? {
        lock.withLock { locate(section).flatMap { visible[$0.member].header($0.local) } }
    }

    // MARK: Sections

    /// Adds a section showing `results` (of any type), at the end. With `keyPaths`, only changes to
    /// those fields count as modifications (joining, leaving and moving always count).
    /// `sectionIdentifier` names the section in ``snapshot()``.
    public func addSection<Element: Persistable>(
        with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members.append(member) }
    }

    /// Inserts a section showing `results` before the member at `memberIndex` (each plain results is one
    /// member; sectioned results are one member of many sections).
    public func insertSection<Element: Persistable>(
        with results: Results<Element>, at memberIndex: Int, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in
            guard (0...members.count).contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.insert(member, at: memberIndex)
        }
    }

    /// Removes the member at `memberIndex` and its sections.
    public func removeSection(at memberIndex: Int) throws {
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.remove(at: memberIndex)
        }
    }

    /// Replaces the member at `memberIndex` by a section showing `results`, in one update.
    public func replaceSection<Element: Persistable>(
        at memberIndex: Int, with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members[memberIndex] = member
        }
    }

    /// Shows `sectioned` as the storage's only member: its sections, their keys as header models.
    /// `sectionIdentifier` names each section in ``snapshot()`` from its key.
    public func setSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members = [member] }
    }

    /// Adds sectioned results after the current members.
    public func addSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members.append(member) }
    }

    /// Inserts sectioned results before the member at `memberIndex`.
    public func insertSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, at memberIndex: Int,
        keyPaths: [PartialKeyPath<Element>]? = nil, sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in
            guard (0...members.count).contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.insert(member, at: memberIndex)
        }
    }

    static func member<Element>(
        _ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]?, identifier: SectionIdentifier?
    ) throws -> Member {
        let live = try LiveResults(results, keyPaths: keyPaths)
        let name = identifier ?? SectionIdentifier(DefaultSectionName(text: Element.schema.typeName))
        return Member(live: live) { view(of: live.results, identifier: name) }
    }

    static func member<Key, Element>(
        _ sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]?,
        identifier: ((Key) -> SectionIdentifier)?
    ) throws -> Member {
        let live = try LiveSectionedResults(sectioned, keyPaths: keyPaths)
        let name =
            identifier ?? { key in
                SectionIdentifier(DefaultSectionName(text: "\(Element.schema.typeName).\(key)"))
            }
        return Member(live: live) { view(of: live.sections, identifier: name) }
    }

    static func view<Element>(of results: Results<Element>, identifier: SectionIdentifier) -> View {
        let count = results.count
        return View(
            sectionCount: 1, count: { _ in count },
            item: { path in (0..<count).contains(path.item) ? try results.object(at: path.item) : nil },
            objectID: { path in results.objectID(at: path.item) }, header: { _ in nil },
            identifier: { _ in identifier })
    }

    static func view<Key, Element>(
        of sectioned: SectionedResults<Key, Element>, identifier: @escaping (Key) -> SectionIdentifier
    ) -> View {
        let sections = sectioned.sections
        return View(
            sectionCount: sections.count, count: { sections[$0].objects.endIndex },
            item: { path in
                sections.indices.contains(path.section)
                    && (0..<sections[path.section].objects.endIndex).contains(path.item)
                    ? try sections[path.section].objects.object(at: path.item) : nil
            },
            objectID: { path in
                sections.indices.contains(path.section)
                    ? sections[path.section].objects.objectID(at: path.item) : nil
            },
            header: { sections[$0].key }, identifier: { identifier(sections[$0].key) })
    }

    // MARK: Advancing

    /// Changes the members, advances every one to one version through the group, and delivers one
    /// update: section inserts and deletes for members that came and went, the members' own changes
    /// for the rest.
    @discardableResult
    private func change(_ edit: (inout [Member]) throws -> Void) throws -> StorageUpdate? {
        try store.checkNotInsideTransaction("LiveResultsStorage")
        let update = try lock.withLock { () -> StorageUpdate? in
            let snapshot = try store.currentSnapshot()
            var new = members
            try edit(&new)
            let edited = new
            let changes = try group.edit(to: snapshot) { groupMembers in groupMembers = edited }
            return compose(old: members, new: edited, changes: changes)
        }
        startObservingIfNeeded()
        if let update { deliver(update) }
        return update
    }

    /// Builds the update from the members before and after and the group's changes (indexed by the new
    /// members), and makes the new views visible when the update is applied. The caller holds `lock`.
    private func compose(
        old: [Member], new: [Member], changes: [(member: any LiveGroupMember, change: LiveGroup.Change)]
    ) -> StorageUpdate? {
        let update = StorageUpdate()
        var oldStarts: [ObjectIdentifier: Int] = [:]
        var oldStart = 0
        for (index, member) in old.enumerated() {
            oldStarts[ObjectIdentifier(member)] = oldStart
            oldStart += visible[index].sectionCount
        }
        let kept = Set(new.map(ObjectIdentifier.init))
        for (index, member) in old.enumerated() where !kept.contains(ObjectIdentifier(member)) {
            let start = oldStarts[ObjectIdentifier(member)]!
            for section in 0..<visible[index].sectionCount {
                update.sectionChanges.append((.delete, [start + section]))
            }
        }
        var changeOf: [ObjectIdentifier: LiveGroup.Change] = [:]
        for (member, change) in changes { changeOf[ObjectIdentifier(member)] = change }
        var newStart = 0
        for member in new {
            let view = member.view
            if let start = oldStarts[ObjectIdentifier(member)] {
                if let change = changeOf[ObjectIdentifier(member)] {
                    Self.merge(
                        Self.storageUpdate(change, view: view), into: update, oldStart: start,
                        newStart: newStart)
                }
            } else {
                for section in 0..<view.sectionCount {
                    update.sectionChanges.append((.insert, [newStart + section]))
                }
            }
            newStart += view.sectionCount
        }
        members = new
        let views = new.map(\.view)
        guard !update.objectChanges.isEmpty || !update.sectionChanges.isEmpty else {
            visible = views
            return nil
        }
        update.enqueueDatasourceUpdate { [weak self] _ in self?.lock.withLock { self?.visible = views } }
        return update
    }

    /// A member's change as its own update, with the models of reloaded rows from its new view.
    static func storageUpdate(_ change: LiveGroup.Change, view: View) -> StorageUpdate {
        let model = { (path: IndexPath) in try? view.item(path) }
        switch change {
        case .results(_, let change): return change.storageUpdate { model(IndexPath(item: $0, section: 0)) }
        case .sectioned(_, let change): return change.storageUpdate(model: model)
        }
    }

    /// Advances every member to the last committed version and delivers the combined update (nil when
    /// nothing changed). Called by the observation after commits; callable directly (tests, tools).
    @discardableResult
    public func refresh() throws -> StorageUpdate? {
        try change { _ in }
    }

    /// Shifts a member's update by its first section, old side and new side.
    static func merge(_ local: StorageUpdate, into update: StorageUpdate, oldStart: Int, newStart: Int) {
        func old(_ path: IndexPath) -> IndexPath {
            IndexPath(item: path.item, section: path.section + oldStart)
        }
        func new(_ path: IndexPath) -> IndexPath {
            IndexPath(item: path.item, section: path.section + newStart)
        }
        for (type, payload) in local.sectionChanges {
            switch type {
            case .delete, .update: update.sectionChanges.append((type, [payload[0] + oldStart]))
            case .insert: update.sectionChanges.append((type, [payload[0] + newStart]))
            case .move: update.sectionChanges.append((type, [payload[0] + oldStart, payload[1] + newStart]))
            }
        }
        for (type, payload) in local.objectChanges {
            switch type {
            case .delete, .update: update.objectChanges.append((type, [old(payload[0])]))
            case .insert: update.objectChanges.append((type, [new(payload[0])]))
            case .move: update.objectChanges.append((type, [old(payload[0]), new(payload[1])]))
            }
        }
        for (path, model) in local.updatedObjects { update.updatedObjects[old(path)] = model }
    }

    private func startObservingIfNeeded() {
        let start = lock.withLock { () -> ObservationToken? in
            guard observesCommits, token == nil else { return nil }
            let token = ObservationToken()
            self.token = token
            return token
        }
        guard let start else { return }
        let driver = ObservationDriver(
            store: store, source: StorageSource(storage: self), queue: queue, token: start
        ) { [weak self] result in
            switch result {
            case .success(let update): self?.deliver(update)
            case .failure(let error): self?.deliverFailure(error)
            }
        }
        driver.start()
    }

    /// Stops following the store: the storage keeps its version until ``refresh()`` is called.
    public func stopObserving() {
        let token = lock.withLock { () -> ObservationToken? in
            observesCommits = false
            defer { self.token = nil }
            return self.token
        }
        token?.cancel()
    }

    /// The group's version (the storage advances with it).
    fileprivate var version: Int { group.version }

    /// Advances to `snapshot` and returns the combined update, for the observation.
    fileprivate func advance(to snapshot: ReadSnapshot) throws -> StorageUpdate? {
        try lock.withLock {
            let current = members
            let changes = try group.edit(to: snapshot) { _ in }
            return compose(old: current, new: current, changes: changes)
        }
    }

    deinit { token?.cancel() }
}

/// The storage as a ``LiveSource``, held weakly by its observation so the storage can go.
final class StorageSource: LiveSource, @unchecked Sendable {
    // @unchecked: a weak reference set once; the storage is thread-safe.
    private weak var storage: LiveResultsStorage?

    init(storage: LiveResultsStorage) { self.storage = storage }

    var version: Int { storage?.version ?? Int.max }

    func advance(to snapshot: ReadSnapshot) throws -> StorageUpdate? {
        try storage?.advance(to: snapshot)
    }
}

/// The identifier of a ``LiveResultsStorage`` section in its ``LiveResultsStorage/snapshot()``: any
/// hashable, sendable value (a string, an enum case, a group key), compared by value and type.
public struct SectionIdentifier: Hashable, @unchecked Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    // @unchecked: the only initializer takes a Sendable value; AnyHashable just erases its type.
    /// The value, type-erased.
    public let base: AnyHashable

    /// An identifier holding `value`.
    public init<Value: Hashable & Sendable>(_ value: Value) { base = AnyHashable(value) }

    /// An identifier holding a string.
    public init(stringLiteral value: String) { self.init(value) }

    /// The value's description.
    public var description: String { "\(base)" }
}

/// The name a member's section has in a snapshot when none was given: numbered if used twice.
struct DefaultSectionName: Hashable, Sendable {
    var text: String
}

extension Results {
    /// The identity of the object at `position`, or nil.
    func objectID(at position: Int) -> ObjectID? {
        guard let keys = try? evaluation().keys, position >= 0, position < keys.count else { return nil }
        return ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[position]))
    }
}
