import Foundation
import LMDB
import Synchronization

/// The objects of one type that match a query, in order: lazy, typed and consistent.
///
/// Results are built by chaining (`filter`, `sorted`, `limit`, `offset`) and evaluated when first
/// read, on one committed version: results from ``Store/objects(_:)`` pin the version that was last
/// committed at that moment (every later read of the same results sees that version, never half of
/// a write); results from ``Transaction/objects(_:)`` read the transaction's version and are used
/// inside it. Evaluation finds the primary keys with the best plan (see ``explain()``); objects are
/// decoded when they are read.
///
/// The collection accessors (`count`, subscripts, iteration) cannot throw: if the store fails or a
/// record no longer decodes they stop the program with the error's description. Use the throwing
/// ``fetch()``, ``object(at:)`` and ``evaluatedCount()`` where that can happen.
public struct Results<Element: Persistable>: RandomAccessCollection, @unchecked Sendable {
    // @unchecked: an immutable value — predicates and sort descriptors over a non-Sendable `Element`
    // are not marked Sendable but never change; the evaluation cache is locked; results bound to a
    // transaction are documented as usable only inside it.
    enum Source {
        case store(Store)
        case transaction(Transaction)
    }

    let source: Source
    var predicates: [Predicate<Element>] = []
    var sortDescriptors: [SortDescriptor<Element>] = []
    var limitCount: Int?
    var offsetCount = 0
    let cache = EvaluationCache<Element>()

    init(source: Source) { self.source = source }

    /// The same query, already evaluated (live results hand out their current version this way).
    func withEvaluation(_ evaluation: Evaluation<Element>) -> Results {
        let next = copy { _ in }
        next.cache.store(pinned(evaluation))
        return next
    }

    /// `evaluation`, holding a place among the store's held versions when it holds a snapshot.
    private func pinned(_ evaluation: Evaluation<Element>) -> Evaluation<Element> {
        guard case .store(let store) = source, let snapshot = evaluation.snapshot, evaluation.pin == nil
        else {
            return evaluation
        }
        var pinned = evaluation
        pinned.pin = store.pins.pin(
            at: snapshot.transactionID, owner: "Results<\(Element.schema.typeName)>", needsChangeLog: false)
        return pinned
    }

    private func copy(_ change: (inout Results) -> Void) -> Results {
        var next = Results(source: source)
        next.predicates = predicates
        next.sortDescriptors = sortDescriptors
        next.limitCount = limitCount
        next.offsetCount = offsetCount
        change(&next)
        return next
    }

    /// The same query, not evaluated yet: its first read evaluates it on the last committed version
    /// (or, bound to a transaction, on that transaction), whatever version this one was read on.
    public func reevaluated() -> Results { copy { _ in } }

    // MARK: Building queries

    /// The results that also match `predicate` (a Foundation `#Predicate`).
    public func filter(_ predicate: Predicate<Element>) -> Results {
        copy { $0.predicates.append(predicate) }
    }

    /// The results sorted by `descriptors` (the first one decides, later ones break ties; objects
    /// that compare equal stay in primary-key order).
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> Results {
        copy { $0.sortDescriptors = descriptors }
    }

    /// The results sorted by one property.
    public func sorted<Value: Comparable>(
        by keyPath: any KeyPath<Element, Value> & Sendable, ascending: Bool = true
    ) -> Results {
        sorted(by: [SortDescriptor(keyPath, order: ascending ? .forward : .reverse)])
    }

    /// At most `count` results (applied after sorting and `offset`).
    public func limit(_ count: Int) -> Results { copy { $0.limitCount = Swift.max(0, count) } }

    /// The results after skipping the first `count`.
    public func offset(_ count: Int) -> Results { copy { $0.offsetCount = Swift.max(0, count) } }

    /// The same query, read in `transaction`.
    func bound(to transaction: Transaction) -> Results {
        var next = copy { _ in }
        next = Results(source: .transaction(transaction)).copyQuery(from: next)
        return next
    }

    /// This source with `other`'s query (without its limit and offset when `window` is false).
    func copyingQuery(of other: Results, window: Bool = true) -> Results {
        copy {
            $0.predicates = other.predicates
            $0.sortDescriptors = other.sortDescriptors
            $0.limitCount = window ? other.limitCount : nil
            $0.offsetCount = window ? other.offsetCount : 0
        }
    }

    private func copyQuery(from other: Results) -> Results {
        copy {
            $0.predicates = other.predicates
            $0.sortDescriptors = other.sortDescriptors
            $0.limitCount = other.limitCount
            $0.offsetCount = other.offsetCount
        }
    }

    // MARK: Evaluation

    /// Evaluates (once) and returns the keys, plan and version.
    func evaluation() throws -> Evaluation<Element> {
        try cache.value {
            switch source {
            case .transaction(let transaction):
                return try evaluate(in: transaction, snapshot: nil)
            case .store(let store):
                try store.prepareForResults(Element.self)
                let snapshot = try store.currentSnapshot()
                return pinned(
                    try mapStorageErrors {
                        try snapshot.read { txn in
                            try evaluate(in: Transaction(store: store, lmdb: txn), snapshot: snapshot)
                        }
                    })
            }
        }
    }

    func evaluate(in transaction: Transaction, snapshot: ReadSnapshot?) throws -> Evaluation<Element> {
        let state = try transaction.typeState(Element.self)
        let conditions = predicates.flatMap { PredicateAnalysis.conditions(of: $0.expression) }
        let execution = try QueryPlanner.plan(state: state, conditions: conditions, sort: sortDescriptors)
        var evaluation = Evaluation<Element>(
            plan: execution.plan, keys: KeyList(), objects: nil, snapshot: snapshot)
        guard let records = state.records else { return evaluation }
        let lmdb = transaction.lmdb

        // 1. Candidates, in the access path's order; group boundaries of equal index keys.
        var candidates = KeyList()
        var groupStarts: [Int] = []
        var lossy = false
        var previousIndexKey: [UInt8]?
        switch execution.source {
        case .primaryKeys(let keys):
            for key in keys where key.count <= IndexKeyLimit.maximum {
                if try lmdb.contains(key, in: records) { candidates.append(key) }
            }
        case .records(let ranges):
            for range in ranges {
                let (range, widened) = range.normalized()
                lossy = lossy || widened
                try scan(lmdb, records, range) { key, _ in
                    candidates.append(key)
                    return true
                }
            }
        case .index(let database, let ranges):
            for range in ranges {
                let (range, widened) = range.normalized()
                lossy = lossy || widened
                try scan(lmdb, database, range) { key, value in
                    if IndexKeyLimit.mayBeTruncated(key) { lossy = true }
                    if previousIndexKey.map({ !$0.elementsEqual(key) }) ?? true {
                        groupStarts.append(candidates.count)
                        previousIndexKey = Array(key)
                    }
                    candidates.append(value)
                    return true
                }
            }
        }

        // 2. The per-object check.
        var objects: [Element]?
        var keys = candidates
        if lossy { evaluation.plan.rechecksPredicate = true }
        if !execution.covered || lossy {
            var kept = KeyList()
            var keptObjects: [Element] = []
            var keptGroups: [Int] = []
            var group = 0
            for index in 0..<candidates.count {
                while group < groupStarts.count && groupStarts[group] == index {
                    keptGroups.append(kept.count)
                    group += 1
                }
                let key = Array(candidates[index])
                guard let object = try transaction.object(Element.self, keyBytes: key, state: state) else {
                    continue
                }
                if try predicates.allSatisfy({ try $0.evaluate(object) }) {
                    kept.append(key)
                    keptObjects.append(object)
                }
            }
            keys = kept
            objects = keptObjects
            groupStarts = keptGroups
        }

        // 3. Order.
        var ordering = execution.plan.ordering
        if case .index = ordering, lossy { ordering = .inMemory }
        switch ordering {
        case .primaryKey(let reversed):
            if case .records = execution.source {} else { (keys, objects) = sortedByKey(keys, objects) }
            if reversed { (keys, objects) = reverse(keys, objects, groups: nil) }
        case .index(_, let reversed):
            if reversed { (keys, objects) = reverse(keys, objects, groups: groupStarts) }
        case .inMemory:
            if objects == nil {
                objects = try (0..<keys.count).map { index in
                    let key = Array(keys[index])
                    guard let object = try transaction.object(Element.self, keyBytes: key, state: state)
                    else {
                        throw LodeError.objectNotFound(
                            type: Element.schema.typeName, key: KeyDescription.describe(key))
                    }
                    return object
                }
            }
            let all = objects!
            let descriptors = sortDescriptors
            let permutation = Array(0..<keys.count).sorted { a, b in
                for descriptor in descriptors {
                    switch descriptor.compare(all[a], all[b]) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return keys[a].lexicographicallyPrecedes(keys[b])
            }
            keys = keys.reordered(permutation)
            objects = permutation.map { all[$0] }
        }
        if execution.plan.ordering != ordering { evaluation.plan.ordering = ordering }

        // 4. Offset and limit.
        let lower = Swift.min(offsetCount, keys.count)
        let upper = limitCount.map { $0 >= keys.count - lower ? keys.count : lower + $0 } ?? keys.count
        if lower != 0 || upper != keys.count {
            keys = keys.slice(lower..<upper)
            objects = objects.map { Array($0[lower..<upper]) }
        }
        evaluation.keys = keys
        evaluation.objects = objects
        return evaluation
    }

    /// Calls `visit` for each entry of `range` in `database`, in key order, until it returns false.
    private func scan(
        _ lmdb: LMDB.Transaction, _ database: Database, _ range: KeyRange,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try lmdb.withCursor(in: database) { cursor in
            // Entries are read in place (a scan may pass a million of them).
            func consider(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                switch range.position(of: key) {
                case .before: return true
                case .after: return false
                case .inside: return try visit(key, value)
                }
            }
            guard (range.start.isEmpty ? try cursor.first() : try cursor.seek(atLeast: range.start)) != nil,
                try cursor.withCurrent(consider) == true
            else { return }
            while try cursor.withNext(consider) == true {}
        }
    }

    private func sortedByKey(_ keys: KeyList, _ objects: [Element]?) -> (KeyList, [Element]?) {
        let permutation = Array(0..<keys.count).sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        return (keys.reordered(permutation), objects.map { list in permutation.map { list[$0] } })
    }

    /// Reverses the order of groups (runs of equal sort keys), keeping each group's own order.
    private func reverse(_ keys: KeyList, _ objects: [Element]?, groups: [Int]?) -> (KeyList, [Element]?) {
        let starts = groups ?? Array(0..<keys.count)
        var permutation: [Int] = []
        permutation.reserveCapacity(keys.count)
        var end = keys.count
        for start in starts.reversed() where start < end {
            permutation.append(contentsOf: start..<end)
            end = start
        }
        if end > 0 { permutation.insert(contentsOf: 0..<end, at: 0) }
        return (keys.reordered(permutation), objects.map { list in permutation.map { list[$0] } })
    }

    // MARK: Reading

    /// The plan the query runs with.
    public func explain() throws -> QueryPlan { try evaluation().plan }

    /// The version (transaction id) the results were evaluated on.
    public func version() throws -> Int {
        let evaluation = try evaluation()
        if let snapshot = evaluation.snapshot { return snapshot.transactionID }
        if case .transaction(let transaction) = source { return transaction.version }
        return 0
    }

    /// How many objects match (throwing form of `count`).
    public func evaluatedCount() throws -> Int { try evaluation().keys.count }

    /// The object at `position`.
    public func object(at position: Int) throws -> Element {
        let evaluation = try evaluation()
        if let objects = evaluation.objects { return objects[position] }
        let key = Array(evaluation.keys[position])
        return try read(at: evaluation) { transaction in
            let state = try transaction.typeState(Element.self)
            guard let object = try transaction.object(Element.self, keyBytes: key, state: state) else {
                throw LodeError.objectNotFound(
                    type: Element.schema.typeName, key: KeyDescription.describe(key))
            }
            return object
        }
    }

    /// Every object, decoded.
    ///
    /// - Complexity: the evaluation's plan (see ``explain()``) plus O(*n*) decodes for *n* objects;
    ///   evaluated once, later calls reuse it.
    public func fetch() throws -> [Element] {
        let evaluation = try evaluation()
        if let objects = evaluation.objects { return objects }
        // One transaction and one type lookup for all of them.
        let keys = evaluation.keys
        let ascending = evaluation.plan.ordering == .primaryKey(reversed: false)
        return try read(at: evaluation) { transaction in
            try transaction.objects(Element.self, keys: keys, ascending: ascending)
        }
    }

    /// Runs `body` on the version the results were evaluated on: inside the transaction they came
    /// from, or on their pinned snapshot.
    private func read<R>(at evaluation: Evaluation<Element>, _ body: (Transaction) throws -> R) throws -> R {
        switch source {
        case .transaction(let transaction):
            return try body(transaction)
        case .store(let store):
            return try mapStorageErrors {
                try evaluation.snapshot!.read { txn in try body(Transaction(store: store, lmdb: txn)) }
            }
        }
    }

    /// The identities of the objects, in order.
    public var objectIDs: [ObjectID] {
        let keys = unwrap { try evaluation().keys }
        return (0..<keys.count).map {
            ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[$0]))
        }
    }

    private func unwrap<R>(_ body: () throws -> R) -> R {
        do { return try body() } catch {
            preconditionFailure("Lode results of \(Element.schema.typeName): \(error)")
        }
    }

    // MARK: RandomAccessCollection

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of results.
    public var endIndex: Int { unwrap { try evaluation().keys.count } }
    /// The object at `position`.
    public subscript(position: Int) -> Element { unwrap { try object(at: position) } }

    // MARK: Aggregates

    /// The smallest value of a property among the results.
    public func min<Value: Comparable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try fetch().lazy.map { $0[keyPath: keyPath] }.min()
    }

    /// The largest value of a property among the results.
    public func max<Value: Comparable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try fetch().lazy.map { $0[keyPath: keyPath] }.max()
    }

    /// The sum of a numeric property over the results.
    public func sum<Value: AdditiveArithmetic>(of keyPath: KeyPath<Element, Value>) throws -> Value {
        try fetch().reduce(.zero) { $0 + $1[keyPath: keyPath] }
    }

    /// The mean of a numeric property over the results, or nil when there are none.
    public func average<Value: BinaryInteger>(of keyPath: KeyPath<Element, Value>) throws -> Double? {
        let values = try fetch().map { Double($0[keyPath: keyPath]) }
        return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }

    /// The mean of a floating-point property over the results, or nil when there are none.
    public func average<Value: BinaryFloatingPoint>(of keyPath: KeyPath<Element, Value>) throws -> Double? {
        let values = try fetch().map { Double($0[keyPath: keyPath]) }
        return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }
}

/// What evaluating a query produced.
struct Evaluation<Element> {
    var plan: QueryPlan
    var keys: KeyList
    /// The decoded objects, when evaluation had to decode them anyway.
    var objects: [Element]?
    /// The pinned version, for results read outside a transaction.
    var snapshot: ReadSnapshot?
    /// The snapshot's place among the store's held versions (released with the evaluation).
    var pin: VersionPin?
}

/// Evaluates once and remembers the outcome, for every copy of the same results.
final class EvaluationCache<Element>: @unchecked Sendable {
    // @unchecked: `stored` is read and written under `lock` only; an evaluation is immutable.
    private let lock = NSLock()
    private var stored: Evaluation<Element>?

    func store(_ evaluation: Evaluation<Element>) {
        lock.lock()
        stored = evaluation
        lock.unlock()
    }

    func value(_ evaluate: () throws -> Evaluation<Element>) throws -> Evaluation<Element> {
        lock.lock()
        defer { lock.unlock() }
        if let stored { return stored }
        let evaluation = try evaluate()
        stored = evaluation
        return evaluation
    }
}
