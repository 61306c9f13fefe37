import Foundation

/// Numbers the updates a storage delivers and follows which one its view applied last, so an update
/// applied out of order is noticed (and an old one never takes the view's data back).
package struct UpdateSequence {
    /// No update delivered yet.
    package init() {}

    /// How many updates were delivered.
    package private(set) var delivered = 0
    /// The newest update whose data the view has applied (a reload applies them all).
    package private(set) var applied = 0

    /// The number of the next delivered update.
    package mutating func next() -> Int {
        delivered += 1
        return delivered
    }

    /// Records that the view applies update `number`: whether its data should become visible (not
    /// for an update older than one applied), and the anomaly when it was not the one due.
    package mutating func apply(_ number: Int) -> (apply: Bool, anomaly: ListAnomaly?) {
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
    package mutating func reloadAll() { applied = delivered }

    /// How many delivered updates the view has not applied.
    package var pending: Int { delivered - applied }
}

/// The update sequence of a storage that is edited and applied on one thread (``MemoryStorage``,
/// ``SingleSectionStorage``, ``SnapshotStorage``): numbers each update and makes its data visible
/// when the view applies it, in delivery order.
package final class AppliedUpdates {
    private var sequence = UpdateSequence()

    /// No update delivered yet.
    package init() {}

    /// Numbers `update` and makes `show` run when the view applies it — unless the view already
    /// applied a newer one (or a reload); an update applied out of order is reported to `handler`.
    package func enqueue(
        _ update: StorageUpdate, reportingTo handler: AnomalyHandler, show: @escaping () -> Void
    ) {
        let number = sequence.next()
        update.enqueueDatasourceUpdate { [weak self] _ in
            guard let self else { return }
            let (apply, anomaly) = self.sequence.apply(number)
            if apply { show() }
            if let anomaly { handler.report(anomaly) }
        }
    }

    /// How many delivered updates the view has not applied.
    package var pending: Int { sequence.pending }

    /// A reload shows the view everything delivered so far.
    package func reloadAll() { sequence.reloadAll() }
}
