import Dispatch
import Foundation
import LodeLive
import ModelStorage

import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

extension LiveResultsStorage {
    // MARK: Advancing

    /// Changes the members, advances every one to one version through the group, and delivers one
    /// update: section inserts and deletes for members that came and went, the members' own changes
    /// for the rest.
    @discardableResult
    func change(_ edit: (inout [Member]) throws -> Void) throws -> StorageUpdate? {
        try store.checkNotInsideTransaction("LiveResultsStorage")
        let update = try turn.run { () -> StorageUpdate? in
            let snapshot = try store.currentSnapshot()
            var new = members
            try edit(&new)
            let edited = new
            let changes = try group.edit(to: snapshot) { groupMembers in groupMembers = edited }
            return compose(old: members, new: edited, changes: changes)
        }
        startObservingIfNeeded()
        LockWatch.check(entering: "the storage's delegate")
        if let update { deliver(update) }
        return update
    }

    /// Builds the update from the members before and after and the group's changes (indexed by the new
    /// members) — reading the models of reloaded rows with no lock held — and makes the new views
    /// visible when the update is applied. The caller has the turn.
    func compose(
        old: [Member], new: [Member], changes: [(member: any LiveGroupMember, change: LiveGroup.Change)]
    ) -> StorageUpdate? {
        let update = StorageUpdate()
        var oldStarts: [ObjectIdentifier: Int] = [:]
        var oldStart = 0
        // The old side is what the previous update led to (`composedSections`), whether or not the
        // delegate has applied it yet.
        for member in old {
            oldStarts[ObjectIdentifier(member)] = oldStart
            oldStart += member.composedSections
        }
        let kept = Set(new.map(ObjectIdentifier.init))
        for member in old where !kept.contains(ObjectIdentifier(member)) {
            let start = oldStarts[ObjectIdentifier(member)]!
            for section in 0..<member.composedSections {
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
                        storageUpdate(change, view: view), into: update, oldStart: start,
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
        for member in new { member.composedSections = member.view.sectionCount }
        let views = new.map(\.view)
        let handler = anomalyHandler
        return lock.withLock { () -> StorageUpdate? in
            guard !update.objectChanges.isEmpty || !update.sectionChanges.isEmpty else {
                // Nothing the view shows changed. While it still holds an update, that update's views
                // stay until it is applied (the view has not seen it yet).
                if applied.pending == 0 { visible = views }
                return nil
            }
            applied.enqueue(update, reportingTo: handler, lock: lock) { [weak self] in
                self?.visible = views
            }
            return update
        }
    }

    /// A member's change as its own update, with the models of reloaded rows from its new view (a
    /// model that cannot be read is reported, not silently left out).
    func storageUpdate(_ change: LiveGroup.Change, view: View) -> StorageUpdate {
        let model = { (path: IndexPath) -> Any? in
            do {
                return try view.item(path)
            } catch {
                self.report(error)
                return nil
            }
        }
        switch change {
        case .results(_, let change): return change.storageUpdate { model(IndexPath(item: $0, section: 0)) }
        case .sectioned(_, let change): return change.storageUpdate(model: model)
        }
    }

    /// Advances every member to the last committed version and delivers the combined update (nil when
    /// nothing changed). Called by the observation after commits; callable directly (tests, tools).
    ///
    /// - Complexity: each member advances at the cost of ``LiveResults/refresh()``; composing the update is
    ///   O(*c* + *s*) for *c* changed rows and *s* sections.
    /// - Throws: what advancing a member throws (``LodeError/storeClosed(path:)`` after the store closed and
    ///   ``LodeError/storage(_:)`` when LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)``
    ///   for a stored record that no longer decodes), and ``LodeError/insideTransaction(operation:)`` inside
    ///   a transaction; the storage stays on its version.
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

    func startObservingIfNeeded() {
        let start = lock.withLock { () -> Bool in
            guard observesCommits, !observing, !observationToken.isCancelled else { return false }
            observing = true
            return true
        }
        guard start else { return }
        let driver = ObservationDriver(
            source: StorageSource(storage: self), queue: queue, token: observationToken
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
        lock.withLock { observesCommits = false }
        observationToken.cancel()
    }

    /// The group's version (the storage advances with it).
    package var version: Int { group.version }

    /// Advances to `snapshot` and returns the combined update, for the observation.
    func advance(to snapshot: ReadSnapshot) throws -> StorageUpdate? {
        try turn.run {
            let current = members
            let changes = try group.edit(to: snapshot) { _ in }
            return compose(old: current, new: current, changes: changes)
        }
    }
}
