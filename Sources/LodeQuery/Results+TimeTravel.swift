import Foundation
import LodeCodec
import LodeStore

import class LMDB.ReadSnapshot

extension Results {
    /// The objects these results held after the commit that made `version` — the same filter, sort,
    /// offset and limit, answered as the store answered then — when the store keeps history (see
    /// ``StoreConfiguration/history``) back to that version.
    ///
    /// The query runs on the store as it is now; then each object a later commit changed leaves the
    /// answer and, when it existed at `version`, its record as it was then (the history's changes
    /// undone, newest first) is checked against the filter and sorted in.
    ///
    /// ```swift
    /// let before = try store.objects(Note.self).filter(#Predicate { $0.rank > 2 })
    ///     .sorted(by: \.title).limit(10).fetch(asOf: version)
    /// ```
    ///
    /// - Complexity: the query's cost now, plus O(*c*) for the *c* changes after `version` and a sort
    ///   of the objects kept.
    /// - Throws: ``LodeError/historyUnavailable(reason:)`` when the store keeps no history, the
    ///   history no longer reaches back to `version` (pruned, or begun again after a migration),
    ///   `version` is after the version read, or the results filter or sort through links or search
    ///   text (what those match at a past version is not kept); and what ``fetch()`` throws.
    public func fetch(asOf version: Int) throws -> [Element] {
        guard linkFilters.isEmpty, linkedSort == nil, textFilter == nil else {
            throw LodeError.historyUnavailable(
                reason:
                    "results as of a past version filter and sort on the type's own fields; "
                    + "a condition or sort through links, or a text search, is answered only now")
        }
        switch source {
        case .transaction(let transaction):
            return try objects(asOf: version, in: transaction)
        case .store(let store):
            let snapshot = try store.currentSnapshot()
            return try mapStorageErrors {
                try snapshot.read { txn in
                    try objects(asOf: version, in: Transaction(store: store, lmdb: txn))
                }
            }
        }
    }

    /// ``fetch(asOf:)`` in `transaction`.
    private func objects(asOf version: Int, in transaction: Transaction) throws -> [Element] {
        let past = try transaction.changedRecords(of: Element.schema.typeName, asOf: version)
        let now = copyingQuery(of: self, window: false).bound(to: transaction)
        let current = try now.fetch()
        let keys = try now.evaluation().keys
        var kept: [(key: [UInt8], object: Element)] = []
        kept.reserveCapacity(current.count + past.count)
        for index in current.indices {
            let key = Array(keys[index])
            if past[key] == nil { kept.append((key, current[index])) }
        }
        let reader = ObjectReader<Element>()
        for (key, record) in past {
            guard let record else { continue }
            let object = try record.withUnsafeBytes { record in
                try key.withUnsafeBytes { try reader.read(record, key: $0) }
            }
            var passes = true
            for predicate in predicates where try !predicate.evaluate(object) {
                passes = false
                break
            }
            if passes { kept.append((key, object)) }
        }
        let descriptors = sortDescriptors
        kept.sort { a, b in
            for descriptor in descriptors {
                switch descriptor.compare(a.object, b.object) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return a.key.lexicographicallyPrecedes(b.key)
        }
        let (lower, upper) = window(count: kept.count)
        return kept[lower..<upper].map(\.object)
    }
}
