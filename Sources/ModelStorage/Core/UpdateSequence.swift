import Foundation

/// Numbers the updates a storage delivers and follows which one its view applied last, so an update
/// applied out of order is noticed (and an old one never takes the view's data back).
struct UpdateSequence {
    /// How many updates were delivered.
    private(set) var delivered = 0
    /// The newest update whose data the view has applied (a reload applies them all).
    private(set) var applied = 0

    /// The number of the next delivered update.
    mutating func next() -> Int {
        delivered += 1
        return delivered
    }

    /// Records that the view applies update `number`: whether its data should become visible (not
    /// for an update older than one applied), and the anomaly when it was not the one due.
    mutating func apply(_ number: Int) -> (apply: Bool, anomaly: ListAnomaly?) {
        let expected = applied + 1
        if number == expected {
            applied = number
            return (true, nil)
        }
        let anomaly = ListAnomaly.updateAppliedOutOfOrder(update: number, expected: expected)
        guard number > applied else { return (false, anomaly) }
        applied = number
        return (true, anomaly)
    }

    /// A reload shows the view everything delivered so far.
    mutating func reloadAll() { applied = delivered }

    /// How many delivered updates the view has not applied.
    var pending: Int { delivered - applied }
}

/// The update sequence of a storage: numbers each update it delivers and makes the update's data
/// visible when the view applies it, in delivery order.
///
/// A storage edited and applied on one thread (``MemoryStorage``, ``SingleSectionStorage``,
/// ``SnapshotStorage``) passes no lock. A storage used from several threads passes the lock that
/// guards its visible data; it then calls ``enqueue(_:reportingTo:lock:show:)``, ``pending`` and
/// ``reloadAll()`` holding that lock, and `show` runs under it. Anomalies are reported after the lock
/// is released: the handler runs the app's code.
package final class AppliedUpdates {
    private var sequence = UpdateSequence()

    /// No update delivered yet.
    package init() {}

    /// Numbers `update` and makes `show` run when the view applies it — unless the view already
    /// applied a newer one (or a reload); an update applied out of order is reported to `handler`.
    package func enqueue(
        _ update: StorageUpdate, reportingTo handler: AnomalyHandler, lock: (any NSLocking)? = nil,
        show: @escaping () -> Void
    ) {
        let number = sequence.next()
        update.enqueueDatasourceUpdate { [weak self] _ in
            guard let self else { return }
            let decide = { () -> ListAnomaly? in
                let (apply, anomaly) = self.sequence.apply(number)
                if apply { show() }
                return anomaly
            }
            if let anomaly = lock.map({ $0.withLock(decide) }) ?? decide() { handler.report(anomaly) }
        }
    }

    /// How many delivered updates the view has not applied.
    package var pending: Int { sequence.pending }

    /// A reload shows the view everything delivered so far.
    package func reloadAll() { sequence.reloadAll() }
}
