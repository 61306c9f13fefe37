import Dispatch
import Foundation
import LMDB

/// Several live results — of any types, sectioned or not — that advance together, to one version,
/// so a table built from all of them never shows two versions at once (a row that leaves one query
/// and joins another moves in one step).
public final class LiveGroup: @unchecked Sendable {
    /// One member's change in a group refresh.
    public enum Change: Sendable {
        /// The member at `index` (in the order added) is plain live results.
        case results(index: Int, CollectionChange)
        /// The member at `index` is live sectioned results.
        case sectioned(index: Int, SectionedChange)
    }

    private let store: Store
    private let lock = NSLock()
    private var members: [(ReadSnapshot) throws -> Change?] = []
    private(set) var currentVersion = 0

    /// An empty group over `store`.
    public init(store: Store) { self.store = store }

    /// Adds live results; returns their index in the group's changes.
    @discardableResult
    public func add<Element>(_ live: LiveResults<Element>) -> Int {
        lock.withLock {
            let index = members.count
            members.append { snapshot in try live.refresh(to: snapshot).map { .results(index: index, $0) } }
            return index
        }
    }

    /// Adds live sectioned results; returns their index in the group's changes.
    @discardableResult
    public func add<Key, Element>(_ live: LiveSectionedResults<Key, Element>) -> Int {
        lock.withLock {
            let index = members.count
            members.append { snapshot in try live.refresh(to: snapshot).map { .sectioned(index: index, $0) } }
            return index
        }
    }

    /// Advances every member to the last committed version — the same one — and returns their
    /// changes (members that did not change are left out). Not allowed inside a transaction.
    @discardableResult
    public func refresh() throws -> [Change] {
        try store.checkNotInsideTransaction("refresh")
        let snapshot = try store.currentSnapshot()
        let current = lock.withLock { members }
        var changes: [Change] = []
        for member in current {
            if let change = try member(snapshot) { changes.append(change) }
        }
        lock.withLock { currentVersion = snapshot.transactionID }
        return changes
    }

    /// The version the group last advanced to.
    public var version: Int { lock.withLock { currentVersion } }

    /// Calls `handler` on `queue` with all members' changes after every commit that changes any of
    /// them — all at once, never inside a write transaction, coalesced while the queue is busy.
    public func observe(on queue: DispatchQueue = .main, _ handler: @escaping @Sendable ([Change]) -> Void)
        -> ObservationToken
    {
        let token = ObservationToken()
        let observation = GroupObservation(group: self, queue: queue, token: token, handler: handler)
        let notifier = store.makeNotifier()
        notifier.add(observation)
        token.onCancel { [weak notifier] in notifier?.remove(observation) }
        observation.storeDidCommit(version: 0)
        return token
    }
}

final class GroupObservation: CommitObserver, @unchecked Sendable {
    let group: LiveGroup
    let handler: @Sendable ([LiveGroup.Change]) -> Void
    let delivery: CoalescingDelivery

    init(
        group: LiveGroup, queue: DispatchQueue, token: ObservationToken,
        handler: @escaping @Sendable ([LiveGroup.Change]) -> Void
    ) {
        self.group = group
        self.handler = handler
        self.delivery = CoalescingDelivery(queue: queue, token: token)
    }

    func storeDidCommit(version: Int) {
        delivery.schedule { [self] in
            if let changes = try? group.refresh(), !changes.isEmpty { handler(changes) }
        }
    }
}
