import Foundation
import LodeCodec
import LodeStore
import LodeText
import Synchronization

import struct LMDB.Database
import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// The objects of one type that match a query, in order: lazy, typed and consistent.
///
/// Results are built by chaining (`filter`, `sorted`, `limit`, `offset`) and evaluated when first
/// read, on one committed version: results from ``Store/objects(_:)`` pin the version that was last
/// committed at that moment (every later read of the same results sees that version, never half of
/// a write); results from ``Transaction/objects(_:)`` read the transaction's version and are used
/// inside it. Evaluation finds the primary keys with the best plan (see ``explain()``); objects are
/// decoded when they are read.
///
/// Every read throws: a storage failure, or a record that no longer decodes as `Element` (written
/// by another version of the app, or damaged), reaches the caller as a ``LodeError`` it can handle —
/// it never stops the program. Read with `try`: ``fetch()`` for every object, ``count``,
/// `results[i]`, ``first``, ``forEach(_:)``, ``map(_:)``, or a ``ResultsCursor`` (``makeCursor()``)
/// to decode one object at a time. A failed read changes nothing: the same results read again
/// throw again (their evaluation is kept once it succeeded), and fresh results
/// (``reevaluated()``) see the store as it is now.
///
/// Results are not a Swift `Collection`, whose accessors cannot throw; ``fetch()`` gives an array.
public struct Results<Element: Persistable>: @unchecked Sendable {
    // @unchecked: an immutable value — predicates and sort descriptors over a non-Sendable `Element`
    // are not marked Sendable but never change; the evaluation cache is locked; results bound to a
    // transaction are documented as usable only inside it.
    package enum Source {
        case store(Store)
        case transaction(Transaction)
    }

    package let source: Source
    package var predicates: [Predicate<Element>] = []
    package var sortDescriptors: [SortDescriptor<Element>] = []
    /// Conditions across links (see `filter(_:matches:)`).
    package var linkFilters: [LinkFilter<Element>] = []
    /// A sort by a linked object's value, before `sortDescriptors` (see `sorted(through:by:)`).
    package var linkedSort: LinkedSort<Element>?
    /// A full-text search (see `matching(_:in:)`).
    package var textFilter: TextFilter?
    package var limitCount: Int?
    package var offsetCount = 0
    let cache = EvaluationCache<Element>()

    package init(source: Source) { self.source = source }

    /// How many objects results made by ``withEvaluation(_:)`` (a section's) hold: known without a
    /// read, so it cannot fail.
    package var evaluatedKeyCount: Int { cache.stored?.keys.count ?? 0 }

    /// The same query, already evaluated (live results hand out their current version this way).
    package func withEvaluation(_ evaluation: Evaluation<Element>) -> Results {
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

    func copy(_ change: (inout Results) -> Void) -> Results {
        var next = Results(source: source)
        next.predicates = predicates
        next.sortDescriptors = sortDescriptors
        next.linkFilters = linkFilters
        next.linkedSort = linkedSort
        next.textFilter = textFilter
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
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func filter(_ predicate: Predicate<Element>) -> Results {
        copy { $0.predicates.append(predicate) }
    }

    /// The results sorted by `descriptors` (the first one decides, later ones break ties; objects
    /// that compare equal stay in primary-key order). A sort through a link set before is replaced.
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> Results {
        copy {
            $0.sortDescriptors = descriptors
            $0.linkedSort = nil
        }
    }

    /// The results sorted by one property.
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
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
    package func copyingQuery(of other: Results, window: Bool = true) -> Results {
        copy {
            $0.predicates = other.predicates
            $0.sortDescriptors = other.sortDescriptors
            $0.linkFilters = other.linkFilters
            $0.linkedSort = other.linkedSort
            $0.textFilter = other.textFilter
            $0.limitCount = window ? other.limitCount : nil
            $0.offsetCount = window ? other.offsetCount : 0
        }
    }

    private func copyQuery(from other: Results) -> Results {
        copy {
            $0.predicates = other.predicates
            $0.sortDescriptors = other.sortDescriptors
            $0.linkFilters = other.linkFilters
            $0.linkedSort = other.linkedSort
            $0.textFilter = other.textFilter
            $0.limitCount = other.limitCount
            $0.offsetCount = other.offsetCount
        }
    }

    // MARK: Evaluation

    /// Evaluates (once) and returns the keys, plan and version.
    package func evaluation() throws -> Evaluation<Element> {
        try cache.value { try evaluateUncached(visiting: nil).evaluation }
    }

    package func evaluate(in transaction: Transaction, snapshot: ReadSnapshot?) throws -> Evaluation<Element>
    {
        try evaluate(in: transaction, snapshot: snapshot, visiting: nil).evaluation
    }

    /// What sees each object's key and record during an evaluation's own walk of the records.
    package typealias RecordVisitor = (Transaction, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws ->
        Void

    /// Evaluates as ``evaluation()`` does; when the results are not evaluated yet and their plan walks
    /// the records in key order with nothing left to check, sort or cut, calls `visit` with each
    /// object's key and record during that walk. Returns whether it did: then `visit` saw every object
    /// of the kept evaluation, in order, and the caller needs no second walk.
    ///
    /// Before such a walk of every record of the type, `expect` is told how many there are (to make
    /// room for them at once). A walk of every record runs `walker` instead of calling `visit`, when
    /// one is given and the store's records can be walked that way (a read transaction's, in clear):
    /// the loop compiled for the model (``RecordWalking``) collects what `visit` would have.
    package func evaluation(
        visiting visit: RecordVisitor, expecting expect: (Int) -> Void = { _ in },
        walking walker: RecordWalker? = nil
    ) throws
        -> (evaluation: Evaluation<Element>, visited: Bool)
    {
        if let stored = cache.stored { return (stored, false) }
        // The evaluation keeps no closure: `visit` and `expect` are called only during it.
        let made = try withoutActuallyEscaping(visit) { visit in
            try withoutActuallyEscaping(expect) { expect in
                try evaluateUncached(visiting: (visit, expect, walker))
            }
        }
        // Another reader of the same results may have kept its evaluation first: then `visit` saw
        // another version's objects, and the caller reads the kept one.
        let (kept, ours) = cache.keep(made.evaluation)
        return (kept, made.visited && ours)
    }

    /// Evaluates in the results' transaction, or in a snapshot of the store pinned by the evaluation;
    /// `visit` (when given) sees each record of a key-order walk.
    private func evaluateUncached(visiting visit: (RecordVisitor, (Int) -> Void, RecordWalker?)?) throws -> (
        evaluation: Evaluation<Element>, visited: Bool
    ) {
        let made: (evaluation: Evaluation<Element>, visited: Bool)
        switch source {
        case .transaction(let transaction):
            made = try evaluate(in: transaction, snapshot: nil, visiting: visit)
        case .store(let store):
            let snapshot = try store.currentSnapshot()
            let evaluated = try mapStorageErrors {
                try snapshot.read { txn in
                    try evaluate(
                        in: Transaction(store: store, lmdb: txn), snapshot: snapshot, visiting: visit)
                }
            }
            made = (pinned(evaluated.evaluation), evaluated.visited)
        }
        return made
    }

    /// Whether `object` passes every predicate and every link filter (`linkMatches` holds each
    /// filter's matching targets). Plain loops: `allSatisfy` over a `zip` looked up generic type
    /// metadata for every object (a fifth of an encrypted scan's instructions).
    private func accepts(_ object: Element, linkMatches: [Set<[UInt8]>]) throws -> Bool {
        for predicate in predicates {
            if try !predicate.evaluate(object) { return false }
        }
        for index in linkFilters.indices {
            if !linkFilters[index].accepts(object, matching: linkMatches[index]) { return false }
        }
        return true
    }

    private func evaluate(
        in transaction: Transaction, snapshot: ReadSnapshot?,
        visiting visitor: (RecordVisitor, (Int) -> Void, RecordWalker?)?
    ) throws -> (evaluation: Evaluation<Element>, visited: Bool) {
        LockWatch.check(entering: "the predicates and sort descriptors of results of \(Element.self)")
        let state = try transaction.typeState(Element.self)
        let conditions = predicates.flatMap { PredicateAnalysis.conditions(of: $0.expression) }
        var execution = try QueryPlanner.plan(
            state: state, conditions: conditions, sort: linkedSort == nil ? sortDescriptors : [])
        // Conditions a generated model's reader checks on the fields before an object is decoded.
        let filter = RecordFilter(conditions: conditions, codec: state.schema.recordCodec)
        // Across links: the linked objects that match, found once; the inverse index of the most
        // selective link may give the candidates.
        let resolver = LinkResolver(transaction)
        var linkMatches: [Set<[UInt8]>] = []
        var linkedQueries: [String: QueryPlan?] = [:]
        for filter in linkFilters {
            let (keys, plan) = try filter.matchingTargets(transaction)
            linkMatches.append(keys)
            linkedQueries[filter.field] = plan
        }
        if let records = state.records, !linkFilters.isEmpty {
            try chooseLinkAccess(
                &execution, state: state, matches: linkMatches, records: records, in: transaction)
        }
        execution.plan.linkedQueries = linkedQueries
        // A full-text search gives the candidates (in order of relevance when ranked); the other
        // conditions are checked per object.
        var textScores: [Double]?
        if let (textIndex, search) = try textSearch(state) {
            let covered = predicates.isEmpty && linkFilters.isEmpty
            let keep = covered && isRankedByRelevance ? limitCount.map { $0 + offsetCount } : nil
            let found = try textCandidates(index: textIndex, search: search, in: transaction, keep: keep)
            let name = textIndex.definition.name
            var plan = QueryPlan(
                access: .textSearch(index: name, matches: found.matches),
                ordering: isRankedByRelevance ? .relevance(index: name) : .inMemory,
                rechecksPredicate: !covered)
            plan.linkedQueries = linkedQueries
            execution = ExecutionPlan(plan: plan, source: .text(found.keys), covered: covered)
            textScores = found.scores
        }
        if let linkedSort {
            execution.plan.ordering = .inMemory
            execution.plan.sortedThroughLinks = [linkedSort.field]
        }
        var evaluation = Evaluation<Element>(
            plan: execution.plan, keys: KeyList(), objects: nil, snapshot: snapshot)
        evaluation.linkMatches = linkMatches
        guard let records = state.records else { return (evaluation, false) }
        let lmdb = transaction.lmdb

        // 1. Candidates, in the access path's order; group boundaries of equal index keys.
        var candidates = KeyList()
        var groupStarts: [Int] = []
        var lossy = false
        var previousIndexKey: [UInt8]?
        // Set when the walk of the records already did the per-object check of step 2.
        var checkedObjects: [Element]?
        var visited = false
        // An in-memory sort cut by an offset or a limit, of a model of the macro: the sort values
        // are read from the records' fields (during the walk of the records when there is one) and
        // only the objects kept are decoded.
        let plannedColumns =
            execution.plan.ordering == .inMemory && linkedSort == nil
            ? SortColumns(sortDescriptors, codec: state.schema.recordCodec) : nil
        let sortsRecords = plannedColumns?.readsRecords == true && (offsetCount > 0 || limitCount != nil)
        // The records the walk read the sort values of, in the candidates' order.
        var sortedRecords: [UnsafeRawBufferPointer]?
        switch execution.source {
        case .primaryKeys(let keys):
            for key in keys where key.count <= IndexKeyLimit.maximum {
                if try lmdb.contains(key, in: records) { candidates.append(key) }
            }
        case .text(let keys):
            candidates.reserve(keys.count)
            for key in keys { candidates.append(key) }
        case .records(let ranges):
            let normalized = ranges.map { $0.normalized() }
            lossy = normalized.contains { $0.lossy }
            // Every record: the walk makes room for all of them at once, instead of growing by copies.
            let everyRecord =
                normalized.count == 1 && normalized[0].range.isWhole ? try lmdb.count(in: records) : nil
            // Records under hashed keys (an encrypted store) come in hash order and are sorted after:
            // each is decoded where the walk finds it (opened once), not read again by key.
            if !execution.covered || lossy || !linkFilters.isEmpty || !records.isOrdered {
                // The per-object check decodes each record where the walk finds it (no second read by
                // key), unless the record's fields already fail a condition.
                let kept = ObjectCollector<Element>()
                let reader = ObjectReader<Element>()
                let checks = !predicates.isEmpty || !linkFilters.isEmpty
                if !checks, let everyRecord {
                    candidates.reserve(everyRecord)
                    kept.reserve(everyRecord)
                }
                for (range, _) in normalized {
                    try scan(lmdb, records, range) { key, value in
                        if let filter, filter.rejects(value) { return true }
                        guard checks else {
                            // Nothing to check: decoded straight into the collector's memory.
                            try reader.read(value, key: key, appendingTo: kept)
                            candidates.append(key)
                            return true
                        }
                        let object = try reader.read(value, key: key)
                        if try !checks || accepts(object, linkMatches: linkMatches) {
                            candidates.append(key)
                            kept.append(object)
                        }
                        return true
                    }
                }
                checkedObjects = kept.take()
            } else {
                // Nothing to check: the walk is the results when they are in key order and whole.
                let visitor =
                    execution.plan.ordering == .primaryKey(reversed: false) && linkedSort == nil
                        && offsetCount == 0 && limitCount == nil && records.isOrdered ? visitor : nil
                let visit = visitor?.0
                // A sealed record opens into the cursor's buffer, valid until its next step: those
                // are read again by key (into memory that lasts) for the sorted window.
                var walked: [UnsafeRawBufferPointer]? =
                    sortsRecords && records.sealingMode == .clear ? [] : nil
                // Every record, walked by the loop compiled for the model when it can be (it makes its
                // own keys: the candidates' room is made only for the walk here).
                let compiled =
                    visit != nil && walked == nil && normalized.count == 1 && normalized[0].range.isWhole
                    ? visitor?.2 : nil
                if let everyRecord {
                    if compiled == nil { candidates.reserve(everyRecord) }
                    visitor?.1(everyRecord)
                }
                if let compiled,
                    let keys = try walkEveryRecord(lmdb, records, compiled, expecting: everyRecord)
                {
                    candidates = keys
                } else {
                    if compiled != nil, let everyRecord { candidates.reserve(everyRecord) }
                    for (range, _) in normalized {
                        try scan(lmdb, records, range) { key, value in
                            candidates.append(key)
                            if walked != nil {
                                if plannedColumns!.append(record: value) {
                                    walked!.append(value)
                                } else {
                                    // A record whose sort fields do not read: objects decide.
                                    plannedColumns!.removeAll()
                                    walked = nil
                                }
                            }
                            try visit?(transaction, key, value)
                            return true
                        }
                    }
                }
                sortedRecords = walked
                visited = visit != nil
            }
        case .index(let database, let ranges):
            for range in ranges {
                let (range, widened) = range.normalized()
                lossy = lossy || widened
                try scan(lmdb, database, range) { key, value in
                    if IndexKeyLimit.mayBeTruncated(key) { lossy = true }
                    if previousIndexKey.map({ KeyRange.compare(key, $0) != 0 }) ?? true {
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
        if !linkFilters.isEmpty { evaluation.plan.rechecksPredicate = true }
        if checkedObjects != nil {
            // Taken, not shared: a sort below moves the objects in place.
            objects = checkedObjects.take()
        } else if !execution.covered || lossy || !linkFilters.isEmpty {
            var kept = KeyList()
            let keptObjects = ObjectCollector<Element>()
            let reader = ObjectReader<Element>()
            var keptGroups: [Int] = []
            var keptScores: [Double] = []
            var group = 0
            for index in 0..<candidates.count {
                while group < groupStarts.count && groupStarts[group] == index {
                    keptGroups.append(kept.count)
                    group += 1
                }
                let key = Array(candidates[index])
                // The record's fields first: its object is decoded only when they pass.
                guard
                    let record = try key.withUnsafeBytes({ try lmdb.transientValue(forKey: $0, in: records) })
                else { continue }
                if let filter, filter.rejects(record) { continue }
                let object = try key.withUnsafeBytes { try reader.read(record, key: $0) }
                if try accepts(object, linkMatches: linkMatches) {
                    kept.append(key)
                    keptObjects.append(object)
                    if let textScores { keptScores.append(textScores[index]) }
                }
            }
            keys = kept
            objects = keptObjects.take()
            groupStarts = keptGroups
            if textScores != nil { textScores = keptScores }
        }

        // 3. Order.
        var windowed = false
        var ordering = execution.plan.ordering
        if case .index = ordering, lossy { ordering = .inMemory }
        switch ordering {
        case .primaryKey(let reversed):
            if case .records = execution.source, records.isOrdered {
            } else {
                sortByKey(&keys, &objects)
            }
            if reversed { reverse(&keys, &objects, groups: nil) }
        case .index(_, let reversed):
            if reversed { reverse(&keys, &objects, groups: groupStarts) }
        case .relevance:
            // The candidates came ranked.
            break
        case .inMemory:
            let descriptors = sortDescriptors
            // Each object's sort values are read once, not in every comparison; from the records'
            // fields for a model of the macro whose sorted objects are cut by an offset or a limit:
            // then only the objects kept are decoded.
            let columns =
                plannedColumns
                ?? (linkedSort == nil ? SortColumns(descriptors, codec: state.schema.recordCodec) : nil)
            if objects == nil, let columns, columns.readsRecords, offsetCount > 0 || limitCount != nil,
                let sorted = try sortedWindow(
                    keys, records: sortedRecords, in: records, columns: columns, lmdb: lmdb)
            {
                (keys, objects) = sorted
                windowed = true
                break
            }
            if objects == nil {
                // Candidates from an index come in its order, not the keys'.
                objects = try transaction.objects(Element.self, keys: keys, ascending: false)
            }
            let all = objects!
            if let columns {
                for object in all { columns.append(object) }
                let permutation = columns.order(tiesBy: keys)
                keys = keys.reordered(permutation)
                objects = permutation.map { all[$0] }
                break
            }
            // A sort through a link decides first: each object's linked value, read once per link.
            let linkedValues = try linkedSort.map { sort in
                try all.map { try sort.value(sort.targetKey($0), resolver) }
            }
            let linkedSort = self.linkedSort
            let permutation = Array(0..<keys.count).sorted { a, b in
                if let linkedSort, let values = linkedValues {
                    switch linkedSort.compare(values[a], values[b]) {
                    case .orderedAscending: return linkedSort.ascending
                    case .orderedDescending: return !linkedSort.ascending
                    case .orderedSame: break
                    }
                }
                for descriptor in descriptors {
                    switch descriptor.compare(all[a], all[b]) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return keys.precedes(a, b)
            }
            keys = keys.reordered(permutation)
            objects = permutation.map { all[$0] }
        }
        if execution.plan.ordering != ordering { evaluation.plan.ordering = ordering }

        // 4. Offset and limit (unless the sort kept only its window).
        let (lower, upper) = window(count: keys.count)
        if !windowed && (lower != 0 || upper != keys.count) {
            keys = keys.slice(lower..<upper)
            objects = objects.map { Array($0[lower..<upper]) }
            textScores = textScores.map { Array($0[lower..<upper]) }
        }
        // Scores stay beside their keys only in the order of relevance.
        if case .relevance = ordering { evaluation.scores = textScores }
        evaluation.keys = keys
        evaluation.objects = objects
        return (evaluation, visited)
    }

    /// The positions offset and limit keep of `count` sorted objects.
    func window(count: Int) -> (lower: Int, upper: Int) {
        let lower = Swift.min(offsetCount, count)
        return (lower, limitCount.map { $0 >= count - lower ? count : lower + $0 } ?? count)
    }

    /// The objects under `keys` sorted by `columns` (ties in key order), cut to the offset and limit,
    /// with their keys: the sort values read from the records' fields and only the objects kept
    /// decoded. `walked` are the records when a walk already read their values into `columns`; else
    /// each is looked up in `database`. Nil when a record's sort fields do not read (the caller sorts
    /// decoded objects).
    private func sortedWindow(
        _ keys: KeyList, records walked: [UnsafeRawBufferPointer]?, in database: Database,
        columns: SortColumns<Element>, lmdb: LMDBTransaction
    ) throws -> (KeyList, [Element])? {
        var found: [UnsafeRawBufferPointer] = walked ?? []
        found.reserveCapacity(keys.count)
        for index in (walked == nil ? 0 : keys.count)..<keys.count {
            let key = Array(keys[index])
            guard let record = try key.withUnsafeBytes({ try lmdb.valueInPlace(forKey: $0, in: database) })
            else {
                throw LodeError.objectNotFound(
                    type: Element.schema.typeName, key: KeyDescription.describe(key))
            }
            guard columns.append(record: record) else {
                columns.removeAll()
                return nil
            }
            found.append(record)
        }
        let permutation = columns.order(tiesBy: keys)
        let (lower, upper) = window(count: keys.count)
        let kept = Array(permutation[lower..<upper])
        let objects = ObjectCollector<Element>(capacity: kept.count)
        let reader = ObjectReader<Element>()
        for index in kept {
            try Array(keys[index]).withUnsafeBytes {
                try reader.read(found[index], key: $0, appendingTo: objects)
            }
        }
        return (keys.reordered(kept), objects.take())
    }

    /// Calls `visit` for each entry of `range` in `database`, in key order, until it returns false.
    private func scan(
        _ lmdb: LMDBTransaction, _ database: Database, _ range: KeyRange,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        if !database.isOrdered && !range.isWhole {
            // Keys stored hashed: the planner asks only for whole keys, found exactly (each value
            // opened once, where it lies).
            guard range.lower == nil, range.upper == nil else { return }
            try range.prefix.withUnsafeBytes { key in
                var going = true
                try lmdb.forEachValue(forKey: key, in: database) { value in
                    if going { going = try visit(key, value) }
                }
            }
            return
        }
        try lmdb.withCursor(in: database) { cursor in
            // Entries are read in place (a scan may pass a million of them).
            guard (range.start.isEmpty ? try cursor.first() : try cursor.seek(atLeast: range.start)) != nil
            else { return }
            var entry = try cursor.entryInPlace(.current)
            while let (key, value) = entry {
                switch range.position(of: key) {
                case .before: break
                case .after: return
                case .inside: guard try visit(key, value) else { return }
                }
                entry = try cursor.entryInPlace(.next)
            }
        }
    }

    /// The keys of every record of `database`, walked from the first by `walker` (which collects
    /// what it reads); nil, with nothing walked, when the database's cursor cannot be walked that way
    /// (a write transaction's, or sealed records).
    private func walkEveryRecord(
        _ lmdb: LMDBTransaction, _ database: Database, _ walker: RecordWalker, expecting count: Int?
    ) throws -> KeyList? {
        try lmdb.withCursor(in: database) { cursor in
            // A read transaction's cursor over records in clear (so in key order), or none.
            guard let walk = cursor.walk() else { return nil }
            // The walk starts from the entry the cursor is on: the first.
            guard try cursor.first() != nil else { return KeyList() }
            let keys = WalkedKeys(expecting: count ?? 16)
            try walker(walk, keys)
            let (bytes, ends) = keys.take()
            return KeyList(bytes: bytes, ends: ends)
        }
    }

    private func sortByKey(_ keys: inout KeyList, _ objects: inout [Element]?) {
        let permutation = keys.keyOrder()
        keys = keys.reordered(permutation)
        if objects != nil { Self.permute(&objects!, permutation) }
    }

    /// Puts `list` in the order of `permutation` (element *i* becomes the former
    /// `list[permutation[i]]`), each element swapped into place along its cycle: moves, not copies
    /// (a copy of a decoded object retains each of its strings and arrays; copying them was a tenth
    /// of an encrypted scan).
    static func permute(_ list: inout [Element], _ permutation: [Int]) {
        precondition(permutation.count == list.count, "a permutation of the whole list")
        var placed = [Bool](repeating: false, count: list.count)
        list.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for start in permutation.indices where !placed[start] {
                // The cycle through `start`: each place takes the element its permutation names,
                // and the last one the element taken out of `start` first.
                let first = (base + start).move()
                var position = start
                placed[position] = true
                while permutation[position] != start {
                    (base + position).moveInitialize(from: base + permutation[position], count: 1)
                    position = permutation[position]
                    placed[position] = true
                }
                (base + position).initialize(to: first)
            }
        }
    }

    /// Reverses the order of groups (runs of equal sort keys), keeping each group's own order.
    private func reverse(_ keys: inout KeyList, _ objects: inout [Element]?, groups: [Int]?) {
        let starts = groups ?? Array(0..<keys.count)
        var permutation: [Int] = []
        permutation.reserveCapacity(keys.count)
        var end = keys.count
        for start in starts.reversed() where start < end {
            permutation.append(contentsOf: start..<end)
            end = start
        }
        if end > 0 { permutation.insert(contentsOf: 0..<end, at: 0) }
        keys = keys.reordered(permutation)
        if objects != nil { Self.permute(&objects!, permutation) }
    }

    // MARK: Reading

    /// The plan the query runs with.
    ///
    /// - Complexity: the query's evaluation, once (see the plan it returns); O(1) after.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func explain() throws -> QueryPlan { try evaluation().plan }

    /// The version (transaction id) the results were evaluated on.
    ///
    /// - Complexity: the query's evaluation, once; O(1) after.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func version() throws -> Int {
        let evaluation = try evaluation()
        if let snapshot = evaluation.snapshot { return snapshot.transactionID }
        if case .transaction(let transaction) = source { return transaction.version }
        return 0
    }

    /// How many objects match.
    ///
    /// - Complexity: the evaluation (see ``explain()``) the first time, O(1) after.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public var count: Int {
        get throws { try evaluation().keys.count }
    }

    /// True when no object matches.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(1).
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public var isEmpty: Bool {
        get throws { try count == 0 }
    }

    /// The object at `position` (from 0 to `count - 1`).
    ///
    /// - Complexity: O(1) once evaluated, plus one decode.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` and storage failures;
    ///   ``LodeError/positionOutOfRange(type:position:count:)`` outside the results.
    public subscript(position: Int) -> Element {
        get throws { try object(at: position) }
    }

    /// The first object, or nil when there is none.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then as the subscript.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public var first: Element? {
        get throws { try isEmpty ? nil : try object(at: 0) }
    }

    /// The last object, or nil when there is none.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then as the subscript.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public var last: Element? {
        get throws {
            let count = try count
            return count == 0 ? nil : try object(at: count - 1)
        }
    }

    /// The object at `position`.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(log *N*) to find the record among the *N* objects of the type, and one decode.
    /// - Throws: ``LodeError/positionOutOfRange(type:position:count:)`` for a position outside the results,
    ///   and what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed and
    ///   ``LodeError/storage(_:)`` when LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)``
    ///   for a stored record that no longer decodes.
    public func object(at position: Int) throws -> Element {
        let evaluation = try evaluation()
        guard position >= 0, position < evaluation.keys.count else {
            throw LodeError.positionOutOfRange(
                type: Element.schema.typeName, position: position, count: evaluation.keys.count)
        }
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
    ///
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func fetch() throws -> [Element] {
        // A walk of the records in key order decodes them as it finds them.
        let walked = ObjectCollector<Element>()
        let reader = ObjectReader<Element>()
        let (evaluation, visited) = try evaluation(
            visiting: { _, key, record in try reader.read(record, key: key, appendingTo: walked) },
            expecting: { walked.reserve($0) }, walking: Element.schema.recordWalker(into: walked))
        if visited { return walked.take() }
        if let objects = evaluation.objects { return objects }
        // One transaction and one type lookup for all of them.
        let keys = evaluation.keys
        let ascending = evaluation.plan.ordering == .primaryKey(reversed: false)
        return try read(at: evaluation) { transaction in
            try transaction.objects(Element.self, keys: keys, ascending: ascending)
        }
    }

    /// Calls `body` with each object in order, decoding one batch at a time (see ``ResultsCursor``).
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects, a batch at a time, in O(batch) memory.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes, and whatever `body` throws (the walk stops there).
    public func forEach(_ body: (Element) throws -> Void) throws {
        var cursor = try makeCursor()
        while let object = try cursor.next() { try body(object) }
    }

    /// The objects transformed by `transform`, in order.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes, and whatever `transform` throws.
    public func map<T>(_ transform: (Element) throws -> T) throws -> [T] {
        var mapped: [T] = []
        mapped.reserveCapacity(try count)
        try forEach { mapped.append(try transform($0)) }
        return mapped
    }

    /// A cursor over the objects, in order, decoding a batch at a time on the results' version: for
    /// reading many objects without holding them all (`while let object = try cursor.next()`).
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then each `next()` is O(1) amortized: a decode, a batch read at a time.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func makeCursor() throws -> ResultsCursor<Element> {
        ResultsCursor(results: self, evaluation: try evaluation())
    }

    /// The objects at `range`, decoded in one read of the results' version.
    package func objects(in range: Range<Int>, of evaluation: Evaluation<Element>) throws -> [Element] {
        if let objects = evaluation.objects { return Array(objects[range]) }
        let keys = evaluation.keys.slice(range)
        let ascending = evaluation.plan.ordering == .primaryKey(reversed: false)
        return try read(at: evaluation) { transaction in
            try transaction.objects(Element.self, keys: keys, ascending: ascending)
        }
    }

    /// Runs `body` on the version the results were evaluated on: inside the transaction they came
    /// from, or on their pinned snapshot.
    package func read<R>(at evaluation: Evaluation<Element>, _ body: (Transaction) throws -> R) throws -> R {
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
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*), without decoding.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public var objectIDs: [ObjectID] {
        get throws {
            let keys = try evaluation().keys
            return (0..<keys.count).map {
                ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[$0]))
            }
        }
    }

    // MARK: Aggregates

    /// The smallest value of a property among the results.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func min<Value: Comparable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try fetch().lazy.map { $0[keyPath: keyPath] }.min()
    }

    /// The largest value of a property among the results.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func max<Value: Comparable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try fetch().lazy.map { $0[keyPath: keyPath] }.max()
    }

    /// The sum of a numeric property over the results.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func sum<Value: AdditiveArithmetic>(of keyPath: KeyPath<Element, Value>) throws -> Value {
        try fetch().reduce(.zero) { $0 + $1[keyPath: keyPath] }
    }

    /// The mean of a numeric property over the results, or nil when there are none.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func average<Value: BinaryInteger>(of keyPath: KeyPath<Element, Value>) throws -> Double? {
        let values = try fetch().map { Double($0[keyPath: keyPath]) }
        return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }

    /// The mean of a floating-point property over the results, or nil when there are none.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) decodes for *n* objects.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func average<Value: BinaryFloatingPoint>(of keyPath: KeyPath<Element, Value>) throws -> Double? {
        let values = try fetch().map { Double($0[keyPath: keyPath]) }
        return values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }
}
