import Dispatch
import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// Several live results — of any types, sectioned or not — that advance together, to one version,
/// so a table built from all of them never shows two versions at once (a row that leaves one query
/// and joins another moves in one step).
///
/// Lock order: the members advance in the group's turn (`AdvanceTurn`), with no lock held; the
/// group then takes each member's turn. `state` (the members and the version) is a leaf lock.
public final class LiveGroup: @unchecked Sendable {
    // @unchecked: `state` is guarded by its lock; `shown` and `needsResync` are used only by the
    // advancer whose turn it is.

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

    package let store: Store
    private let turn = AdvanceTurn()
    /// The members, the version the group last advanced to, and the shape of each member added since
    /// the last advance (what the consumer is shown of it until its first change).
    private let state = Locked<
        (members: [any LiveGroupMember], version: Int, added: [ObjectIdentifier: MemberShape])
    >(([], -1, [:]), name: "LiveGroup")
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
        // The member's shape when added is what the consumer is shown of it until its first change.
        let shape = member.shape
        return state.withLock { state in
            state.members.append(member)
            state.added[ObjectIdentifier(member)] = shape
            return state.members.count - 1
        }
    }

    /// Changes the members (a storage inserts, removes and replaces them) and advances every member to
    /// `snapshot`, under one lock hold: the changes returned are indexed by the new members.
    package func edit(
        to snapshot: ReadSnapshot, _ body: (inout [any LiveGroupMember]) throws -> Void
    ) throws -> [(member: any LiveGroupMember, change: Change)] {
        try turn.run {
            var edited = state.withLock { $0.members }
            try body(&edited)
            let members = edited
            state.withLock { $0.members = members }
            for member in members where shown[ObjectIdentifier(member)] == nil {
                shown[ObjectIdentifier(member)] = member.shape
            }
            return try advanceMembers(to: snapshot)
        }
    }

    /// Advances every member to the last committed version — the same one — and returns their
    /// changes (members that did not change are left out). Not allowed inside a transaction.
    ///
    /// - Complexity: each member advances at the cost of ``LiveResults/refresh()``, over versions read once
    ///   for all of them.
    /// - Throws: what advancing any member throws (``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes), or ``LodeError/insideTransaction(operation:)`` inside a transaction; the group stays on
    ///   its version.
    @discardableResult
    public func refresh() throws -> [Change] {
        try store.checkNotInsideTransaction("refresh")
        let snapshot = try store.currentSnapshot()
        return try turn.run { try advanceMembers(to: snapshot).map(\.change) }
    }

    /// The caller has the turn. A member that fails leaves the ones before it advanced: then the
    /// next advance reports every member as replaced whole, so the consumer is exact again.
    private func advanceMembers(to snapshot: ReadSnapshot) throws -> [(
        member: any LiveGroupMember, change: Change
    )] {
        let (members, currentVersion, added) = state.withLock { state in
            defer { state.added = [:] }
            return (state.members, state.version, state.added)
        }
        for (member, shape) in added where shown[member] == nil { shown[member] = shape }
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
        state.withLock { $0.version = snapshot.transactionID }
        shown = Dictionary(uniqueKeysWithValues: members.map { (ObjectIdentifier($0), $0.shape) })
        return changes
    }

    /// The version the group last advanced to (-1 before its first advance).
    public var version: Int { state.withLock { $0.version } }

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
package struct GroupUpdate: Sendable {
    package var version: Int
    var changes: [LiveGroup.Change]
}

extension LiveGroup: LiveSource {
    package func advance(to snapshot: ReadSnapshot) throws -> GroupUpdate? {
        let changes = try turn.run { try advanceMembers(to: snapshot).map(\.change) }
        return changes.isEmpty ? nil : GroupUpdate(version: snapshot.transactionID, changes: changes)
    }
}
