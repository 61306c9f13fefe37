import Dispatch
import Foundation
import LMDB
import ModelStorage

/// What a table-like view reads: sections backed by live results — plain results (one section each,
/// of any types) and sectioned results (as many sections as they have keys) — that advance together,
/// one `StorageUpdate` per commit across all of them, computed from one version.
///
/// The data-source methods show the version the delegate has applied (an update's data changes when
/// the delegate calls `applyDeferredDatasourceUpdates()`; without a delegate, at once). Header
/// models default to the section keys of sectioned results; set `headerModelProvider` to override.
///
/// Observed commits are delivered on the storage's queue; member edits (`addSection`, …) and
/// ``refresh()`` deliver on the calling thread, so call them on that queue too (for a view: the main
/// queue) to keep updates in order. Updates are delivered outside the storage's lock: a delegate may
/// read the storage from any thread.
public final class LiveResultsStorage: BaseStorage, Storage, @unchecked Sendable {
    /// One member's sections at one version.
    struct View {
        var sectionCount: Int
        var count: (Int) -> Int
        var item: (IndexPath) -> Any?
        var objectID: (IndexPath) -> ObjectID?
        var header: (Int) -> Any?
        var identifier: (Int) -> String
    }

    /// A member: how to advance it, and its view at the version it is on.
    final class Member {
        let advance: (ReadSnapshot) throws -> (update: StorageUpdate?, view: View)
        var view: View

        init(view: View, advance: @escaping (ReadSnapshot) throws -> (update: StorageUpdate?, view: View)) {
            self.view = view
            self.advance = advance
        }
    }

    private let store: Store
    private let queue: DispatchQueue
    private let lock = NSRecursiveLock()
    private var members: [Member] = []
    private var visible: [View] = []
    private var token: ObservationToken?
    private var observation: StorageObservation?
    private var observesCommits: Bool

    /// A storage over `store`. Unless `observesCommits` is false, every commit (from any writer or
    /// process) is followed: changes are computed and delivered on `queue`. Otherwise call
    /// ``refresh()`` to advance.
    public init(store: Store, queue: DispatchQueue = .main, observesCommits: Bool = true) {
        self.store = store
        self.queue = queue
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
    public func item(at indexPath: IndexPath) -> Any? {
        lock.withLock {
            guard indexPath.count == 2, let (member, local) = locate(indexPath.section) else { return nil }
            return visible[member].item(IndexPath(item: indexPath.item, section: local))
        }
    }

    /// The identity of the object at an index path, as applied.
    public func objectID(at indexPath: IndexPath) -> ObjectID? {
        lock.withLock {
            guard indexPath.count == 2, let (member, local) = locate(indexPath.section) else { return nil }
            return visible[member].objectID(IndexPath(item: indexPath.item, section: local))
        }
    }

    /// The identities of every section's objects as one diffable snapshot. A plain member's section is
    /// named by its type (`Task`), a sectioned member's by type and key (`Task.done`); a name already
    /// used gets `#2`, `#3`… appended. Throws when an object shows in two sections: a diffable
    /// snapshot holds each identity once.
    public func snapshot() throws -> ModelStorage.Snapshot<String, ObjectID> {
        try lock.withLock {
            var snapshot = ModelStorage.Snapshot<String, ObjectID>()
            var used: [String: Int] = [:]
            for section in 0..<numberOfSections() {
                guard let (member, local) = locate(section) else { break }
                var name = visible[member].identifier(local)
                used[name, default: 0] += 1
                if let count = used[name], count > 1 { name += "#\(count)" }
                try snapshot.appendSections([name])
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
    public func addSection<Element: Persistable>(
        with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths)
        try change { members in members.append(member) }
    }

    /// Inserts a section showing `results` before the member at `memberIndex` (each plain results is one
    /// member; sectioned results are one member of many sections).
    public func insertSection<Element: Persistable>(
        with results: Results<Element>, at memberIndex: Int, keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths)
        try change { members in
            guard (0...members.count).contains(memberIndex) else {
                throw LodeError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.insert(member, at: memberIndex)
        }
    }

    /// Removes the member at `memberIndex` and its sections.
    public func removeSection(at memberIndex: Int) throws {
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LodeError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.remove(at: memberIndex)
        }
    }

    /// Replaces the member at `memberIndex` by a section showing `results`, in one update.
    public func replaceSection<Element: Persistable>(
        at memberIndex: Int, with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths)
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LodeError.noSuchMember(index: memberIndex, count: members.count)
            }
            members[memberIndex] = member
        }
    }

    /// Shows `sectioned` as the storage's only member: its sections, their keys as header models.
    public func setSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths)
        try change { members in members = [member] }
    }

    /// Adds sectioned results after the current members.
    public func addSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths)
        try change { members in members.append(member) }
    }

    /// Inserts sectioned results before the member at `memberIndex`.
    public func insertSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, at memberIndex: Int,
        keyPaths: [PartialKeyPath<Element>]? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths)
        try change { members in
            guard (0...members.count).contains(memberIndex) else {
                throw LodeError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.insert(member, at: memberIndex)
        }
    }

    static func member<Element>(_ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]?) throws
        -> Member
    {
        let live = try LiveResults(results, keyPaths: keyPaths)
        return Member(view: view(of: live.results)) { snapshot in
            let change = try live.refresh(to: snapshot)
            let current = live.results
            let update = change.map { change in change.storageUpdate { try? current.object(at: $0) } }
            return (update, view(of: current))
        }
    }

    static func member<Key, Element>(
        _ sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]?
    ) throws -> Member {
        let live = try LiveSectionedResults(sectioned, keyPaths: keyPaths)
        return Member(view: view(of: live.sections)) { snapshot in
            let change = try live.refresh(to: snapshot)
            let current = live.sections
            let update = change.map { change in
                change.storageUpdate { path in
                    try? current.fetchSections()[path.section].objects.object(at: path.item)
                }
            }
            return (update, view(of: current))
        }
    }

    static func view<Element>(of results: Results<Element>) -> View {
        let count = (try? results.evaluatedCount()) ?? 0
        return View(
            sectionCount: 1, count: { _ in count },
            item: { path in (0..<count).contains(path.item) ? try? results.object(at: path.item) : nil },
            objectID: { path in results.objectID(at: path.item) }, header: { _ in nil },
            identifier: { _ in Element.schema.typeName })
    }

    static func view<Key, Element>(of sectioned: SectionedResults<Key, Element>) -> View {
        let sections = (try? sectioned.fetchSections()) ?? []
        return View(
            sectionCount: sections.count, count: { sections[$0].objects.endIndex },
            item: { path in
                sections.indices.contains(path.section)
                    && (0..<sections[path.section].objects.endIndex).contains(path.item)
                    ? try? sections[path.section].objects.object(at: path.item) : nil
            },
            objectID: { path in
                sections.indices.contains(path.section)
                    ? sections[path.section].objects.objectID(at: path.item) : nil
            },
            header: { sections[$0].key }, identifier: { "\(Element.schema.typeName).\(sections[$0].key)" })
    }

    // MARK: Advancing

    /// Changes the members, advances every one to one version, and delivers one update: section
    /// inserts and deletes for members that came and went, the members' own changes for the rest.
    @discardableResult
    private func change(_ edit: (inout [Member]) throws -> Void) throws -> StorageUpdate? {
        try store.checkNotInsideTransaction("LiveResultsStorage")
        var delivered: StorageUpdate?
        try lock.withLock {
            let old = members
            var new = members
            try edit(&new)
            let snapshot = try store.currentSnapshot()
            let update = StorageUpdate()
            var oldStart = 0
            var oldStarts: [ObjectIdentifier: Int] = [:]
            for member in old {
                oldStarts[ObjectIdentifier(member)] = oldStart
                oldStart += member.view.sectionCount
            }
            var newStart = 0
            var views: [View] = []
            let kept = Set(new.map(ObjectIdentifier.init))
            for member in old where !kept.contains(ObjectIdentifier(member)) {
                let start = oldStarts[ObjectIdentifier(member)]!
                for section in 0..<member.view.sectionCount {
                    update.sectionChanges.append((.delete, [start + section]))
                }
            }
            for member in new {
                let (local, view) = try member.advance(snapshot)
                if let start = oldStarts[ObjectIdentifier(member)] {
                    if let local { Self.merge(local, into: update, oldStart: start, newStart: newStart) }
                } else {
                    for section in 0..<view.sectionCount {
                        update.sectionChanges.append((.insert, [newStart + section]))
                    }
                }
                member.view = view
                views.append(view)
                newStart += view.sectionCount
            }
            members = new
            startObservingIfNeeded()
            guard !update.objectChanges.isEmpty || !update.sectionChanges.isEmpty else {
                visible = views
                return
            }
            update.enqueueDatasourceUpdate { [weak self] _ in self?.lock.withLock { self?.visible = views } }
            delivered = update
        }
        if let delivered { deliver(delivered) }
        return delivered
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
        guard observesCommits, observation == nil else { return }
        let token = ObservationToken()
        let observation = StorageObservation(storage: self, queue: queue, token: token)
        let notifier = store.makeNotifier()
        notifier.add(observation)
        token.onCancel { [weak notifier] in notifier?.remove(observation) }
        self.token = token
        self.observation = observation
    }

    /// Stops following the store: the storage keeps its version until ``refresh()`` is called.
    public func stopObserving() {
        lock.withLock {
            observesCommits = false
            token?.cancel()
            token = nil
            observation = nil
        }
    }

    deinit { token?.cancel() }
}

final class StorageObservation: CommitObserver, @unchecked Sendable {
    weak var storage: LiveResultsStorage?
    let delivery: CoalescingDelivery

    init(storage: LiveResultsStorage, queue: DispatchQueue, token: ObservationToken) {
        self.storage = storage
        self.delivery = CoalescingDelivery(queue: queue, token: token)
    }

    func storeDidCommit(version: Int) {
        delivery.schedule { [weak self] in _ = try? self?.storage?.refresh() }
    }
}

extension Results {
    /// The identity of the object at `position`, or nil.
    func objectID(at position: Int) -> ObjectID? {
        guard let keys = try? evaluation().keys, position >= 0, position < keys.count else { return nil }
        return ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[position]))
    }
}
