import Dispatch
import Foundation
import LMDB

/// Several live results — of any types, sectioned or not — that advance together, to one version,
/// so a table built from all of them never shows two versions at once (a row that leaves one query
/// and joins another moves in one step).
///
/// Lock order: `lock` is held while the members advance; under it the group calls only its members
/// (whose locks come below it) and the store.
public final class LiveGroup: @unchecked Sendable {
    // @unchecked: `members` and `currentVersion` are read and written under `lock`.

    /// One member's change in a group refresh.
    public enum Change: Sendable, Equatable {
        /// The member at `index` (in the order added) is plain live results.
        case results(index: Int, CollectionChange)
        /// The member at `index` is live sectioned results.
        case sectioned(index: Int, SectionedChange)

        /// The member's index in the group.
        public var index: Int {
            switch self {
            case .results(let index, _), .sectioned(let index, _): return index
            }
        }
    }

    let store: Store
    private let lock = NSLock()
    private var members: [any LiveGroupMember] = []
    private var currentVersion = -1
    /// What the consumer was last shown of each member (by identity), for a resynchronization.
    private var shown: [ObjectIdentifier: MemberShape] = [:]
    /// An advance failed after some members had moved: their changes never reached the consumer, so
    /// the next advance replaces every member whole.
    private var needsResync = false

    /// An empty group over `store`.
    public init(store: Store) { self.store = store }

    /// Adds live results; returns their index in the group's changes.
    @discardableResult
    public func add<Element>(_ live: LiveResults<Element>) -> Int { add(member: live) }

    /// Adds live sectioned results; returns their index in the group's changes.
    @discardableResult
    public func add<Key, Element>(_ live: LiveSectionedResults<Key, Element>) -> Int { add(member: live) }

    private func add(member: any LiveGroupMember) -> Int {
        lock.withLock {
            members.append(member)
            shown[ObjectIdentifier(member)] = member.shape
            return members.count - 1
        }
    }

    /// Changes the members (a storage inserts, removes and replaces them) and advances every member to
    /// `snapshot`, under one lock hold: the changes returned are indexed by the new members.
    func edit(
        to snapshot: ReadSnapshot, _ body: (inout [any LiveGroupMember]) throws -> Void
    ) throws -> [(member: any LiveGroupMember, change: Change)] {
        try lock.withLock {
            var edited = members
            try body(&edited)
            members = edited
            for member in members where shown[ObjectIdentifier(member)] == nil {
                shown[ObjectIdentifier(member)] = member.shape
            }
            return try advanceMembers(to: snapshot)
        }
    }

    /// Advances every member to the last committed version — the same one — and returns their
    /// changes (members that did not change are left out). Not allowed inside a transaction.
    @discardableResult
    public func refresh() throws -> [Change] {
        try store.checkNotInsideTransaction("refresh")
        let snapshot = try store.currentSnapshot()
        return try lock.withLock { try advanceMembers(to: snapshot).map(\.change) }
    }

    /// The caller holds `lock`. A member that fails leaves the ones before it advanced: then the
    /// next advance reports every member as replaced whole, so the consumer is exact again.
    private func advanceMembers(to snapshot: ReadSnapshot) throws -> [(
        member: any LiveGroupMember, change: Change
    )] {
        var changes: [(member: any LiveGroupMember, change: Change)] = []
        do {
            for (index, member) in members.enumerated() {
                if let change = try member.advanceMember(to: snapshot, index: index) {
                    changes.append((member, change))
                }
            }
        } catch {
            needsResync = true
            throw error
        }
        if needsResync {
            needsResync = false
            changes = members.enumerated().map { index, member in
                let from = shown[ObjectIdentifier(member)] ?? member.shape
                return (
                    member,
                    member.shape.replacing(
                        from, index: index, from: currentVersion, to: snapshot.transactionID)
                )
            }
        }
        currentVersion = snapshot.transactionID
        shown = Dictionary(uniqueKeysWithValues: members.map { (ObjectIdentifier($0), $0.shape) })
        return changes
    }

    /// The version the group last advanced to (-1 before its first advance).
    public var version: Int { lock.withLock { currentVersion } }

    /// Calls `handler` on `queue` (by default a serial queue of the observation's own) with all
    /// members' changes after every commit that changes any of them — all at once, never inside a
    /// write transaction, coalesced while the queue is busy — and with every error.
    public func observe(
        on queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (LiveGroupChange) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let driver = ObservationDriver(
            source: self, queue: queue ?? DispatchQueue(label: "lode.observation"), token: token
        ) { result in
            switch result {
            case .success(let update): handler(.update(version: update.version, update.changes))
            case .failure(let error): handler(.error(error))
            }
        }
        driver.start()
        return token
    }
}

/// What an observer of a ``LiveGroup`` receives.
public enum LiveGroupChange: Sendable {
    /// The members' changes leading to `version` (members that did not change are left out).
    case update(version: Int, [LiveGroup.Change])
    /// Advancing failed (a record no longer decodes, the store was closed…); observation goes on.
    case error(LodeError)
}

/// One delivery of an observed group.
struct GroupUpdate: Sendable {
    var version: Int
    var changes: [LiveGroup.Change]
}

extension LiveGroup: LiveSource {
    func advance(to snapshot: ReadSnapshot) throws -> GroupUpdate? {
        let changes = try lock.withLock { try advanceMembers(to: snapshot).map(\.change) }
        return changes.isEmpty ? nil : GroupUpdate(version: snapshot.transactionID, changes: changes)
    }
}
