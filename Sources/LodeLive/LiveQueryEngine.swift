import Foundation
import LodeCodec
import LodeQuery
import LodeStore
import LodeText

import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// The incremental core shared by ``LiveResults`` and ``LiveSectionedResults``: the rows of a query
/// (without limit and offset) kept in an order-statistic structure of entries — the section key (for
/// sectioned results), the encoded sort values, the primary key — advanced commit by commit from the
/// change log. Used under the lock of the live results that own it.
final class LiveQueryEngine<Element: Persistable> {
    /// One object that changed between two versions: its entry and rank before and after (nil when
    /// outside the result).
    struct Row {
        var key: [UInt8]
        var oldEntry: [UInt8]?
        var newEntry: [UInt8]?
        var oldRank: Int?
        var newRank: Int?
        var modified: Bool
    }

    let store: Store
    let context: LiveContext
    let template: Results<Element>
    /// The encoded sort values of an object (reading linked objects through the resolver).
    let sortKey: (Element, LinkResolver) throws -> [UInt8]
    let sectionKey: ((Element, LinkResolver) throws -> [UInt8])?
    let observedFields: Set<String>?
    /// The links whose objects' changes move rows (see ``LinkDependency``).
    let dependencies: [LinkDependency]
    /// For sections keyed by a linked object's value: the encoded section key from the linked
    /// object's primary key.
    let sectionFromTarget: (([UInt8], LinkResolver) throws -> [UInt8])?
    /// The one link that places rows, when a row reached only through it can be placed again without
    /// decoding it: no sort through a link, every condition across a link on it, the section keyed by
    /// it or by the row alone. Such a row keeps its sort values; only its section and membership can
    /// change, and both follow from the linked object.
    private let placingLink: String?
    /// Per condition across a link: the keys of the linked objects that match at the current version,
    /// kept up to date from the linked type's changes.
    private var linkMatches: [Set<[UInt8]>] = []
    /// True for a full-text search in order of relevance: every object's score depends on the whole
    /// index (how many objects hold each term, their average length), so any commit to the type
    /// evaluates the search again — O(postings of its terms) — and compares the ranks.
    private let ranked: Bool
    private(set) var snapshot: ReadSnapshot
    private(set) var plan: QueryPlan
    private(set) var ordered = RankedKeys()
    /// Each row's entry by primary key.
    private var entryOfKey = EntryTable()
    /// For sectioned results: the number of rows per encoded section key.
    private(set) var sectionCounts: [[UInt8]: Int] = [:]
    /// When the query reads an index: its name, the key ranges that hold every match, and the index
    /// key of an object — so a commit's changed objects are matched to the query by binary search,
    /// not by evaluating the predicate on each.
    private var indexAccess: (name: String, ranges: [KeyRange], keyBytes: (Element) throws -> [UInt8])?

    init(
        store: Store, context: LiveContext, template: Results<Element>,
        sortKey: @escaping (Element, LinkResolver) throws -> [UInt8],
        sectionKey: ((Element, LinkResolver) throws -> [UInt8])?, observedFields: Set<String>?,
        dependencies: [LinkDependency], sectionThrough: String? = nil,
        sectionFromTarget: (([UInt8], LinkResolver) throws -> [UInt8])? = nil, snapshot: ReadSnapshot
    ) throws {
        self.store = store
        self.context = context
        self.template = template
        self.sortKey = sortKey
        self.sectionKey = sectionKey
        self.observedFields = observedFields
        self.dependencies = dependencies
        self.sectionFromTarget = sectionFromTarget
        let placing = Set(dependencies.filter(\.places).map(\.field))
        if template.linkedSort == nil, placing.count == 1, let field = placing.first,
            template.linkFilters.allSatisfy({ $0.field == field }),
            sectionThrough.map({ $0 == field }) ?? true,
            sectionThrough == nil || sectionFromTarget != nil
        {
            placingLink = field
        } else {
            placingLink = nil
        }
        self.ranked = template.isRankedByRelevance
        self.snapshot = snapshot
        self.plan = QueryPlan(access: .fullScan, ordering: .inMemory, rechecksPredicate: true)
        let (entries, plan, matches) = try fullEntries(on: snapshot)
        self.plan = plan
        self.linkMatches = matches
        install(entries)
        indexAccess = try findIndexAccess(on: snapshot)
    }

    /// The index (and ranges) the query's conditions narrow to, if any.
    private func findIndexAccess(
        on snapshot: ReadSnapshot
    ) throws -> (name: String, ranges: [KeyRange], keyBytes: (Element) throws -> [UInt8])? {
        let conditions = template.predicates.flatMap { PredicateAnalysis.conditions(of: $0.expression) }
        guard !conditions.isEmpty else { return nil }
        let state = try mapStorageErrors {
            try snapshot.read { txn in try Transaction(store: store, lmdb: txn).typeState(Element.self) }
        }
        let execution = try QueryPlanner.plan(state: state, conditions: conditions, sort: [])
        guard case .index(_, let ranges) = execution.source else { return nil }
        let name: String
        switch execution.plan.access {
        case .indexLookup(let index, _), .indexRange(let index), .indexPrefix(let index): name = index
        default: return nil
        }
        guard let definition = state.index(named: name)?.definition else { return nil }
        return (
            name, ranges.map { $0.normalized().range }, { IndexKeyLimit.stored(try definition.keyBytes($0)) }
        )
    }

    // MARK: Entries

    func entry(for object: Element, key: [UInt8], resolver: LinkResolver) throws -> [UInt8] {
        LiveRow.make(
            section: try sectionKey?(object, resolver) ?? [], sort: try sortKey(object, resolver), key: key)
    }

    /// Evaluates the query (without its window) on `snapshot` and returns every row's entry, the plan
    /// and the linked objects that match each condition across a link.
    private func fullEntries(on snapshot: ReadSnapshot) throws -> (EntryTable, QueryPlan, [Set<[UInt8]>]) {
        let full = Results<Element>(source: .store(store)).copyingQuery(of: template, window: false)
        return try mapStorageErrors {
            try snapshot.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let evaluation = try full.evaluate(in: transaction, snapshot: snapshot)
                if ranked, let scores = evaluation.scores {
                    // Ranked by score, then primary key: the object is read only for its section.
                    let objects =
                        sectionKey == nil
                        ? nil
                        : try evaluation.objects
                            ?? transaction.objects(Element.self, keys: evaluation.keys, ascending: false)
                    let resolver = LinkResolver(transaction)
                    var entries = EntryTable()
                    for index in 0..<evaluation.keys.count {
                        let section = try objects.map { try sectionKey!($0[index], resolver) } ?? []
                        entries.set(
                            LiveRow.make(
                                section: section, sort: Self.relevanceBytes(scores[index]),
                                key: Array(evaluation.keys[index])))
                    }
                    entries.shrinkToFit()
                    return (entries, evaluation.plan, evaluation.linkMatches)
                }
                let objects =
                    try evaluation.objects
                    ?? transaction.objects(
                        Element.self, keys: evaluation.keys,
                        ascending: evaluation.plan.ordering == .primaryKey(reversed: false))
                let resolver = LinkResolver(transaction)
                var entries = EntryTable()
                for (index, object) in objects.enumerated() {
                    entries.set(
                        try entry(for: object, key: Array(evaluation.keys[index]), resolver: resolver))
                }
                entries.shrinkToFit()
                return (entries, evaluation.plan, evaluation.linkMatches)
            }
        }
    }

    /// The sort bytes of a relevance score: higher scores first.
    static func relevanceBytes(_ score: Double) -> [UInt8] {
        var bits = score.bitPattern
        // Order-preserving bits of a double (sign flipped, negatives inverted), then inverted.
        bits = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        bits = ~bits
        return withUnsafeBytes(of: bits.bigEndian) { Array($0) }
    }

    private func install(_ entries: EntryTable) {
        entryOfKey = entries
        ordered = RankedKeys(sorted: entries.entries.sorted { RankedKeys.precedes($0, $1) })
        sectionCounts = [:]
        if sectionKey != nil {
            for entry in entries { sectionCounts[LiveRow.sectionKey(in: Array(entry)), default: 0] += 1 }
        }
    }

    /// The primary keys in order, from `lower` (inclusive) to `upper` (exclusive) rank.
    func keys(_ range: Range<Int>) -> [[UInt8]] {
        range.map { Array(LiveRow.primaryKey(in: ordered.slice(at: $0))) }
    }

    /// The encoded section keys in order.
    var sortedSections: [[UInt8]] { sectionCounts.keys.sorted { $0.lexicographicallyPrecedes($1) } }

    // MARK: Advancing

    /// Moves to `next` and returns the rows that changed, and whether the query was evaluated again
    /// in full.
    func advance(to next: ReadSnapshot) throws -> (rows: [Row], fullyReevaluated: Bool) {
        LockWatch.check(entering: "the predicates, sort and section keys of live results of \(Element.self)")
        let from = snapshot.transactionID
        let changes = try context.changes(of: Element.schema.typeName, from: from, to: next, in: store)
        // The changes of the linked types the rows depend on.
        var linkedChanges: [String: TypeChanges] = [:]
        for dependency in dependencies where linkedChanges[dependency.targetTypeName] == nil {
            linkedChanges[dependency.targetTypeName] = try context.changes(
                of: dependency.targetTypeName, from: from, to: next, in: store)
        }
        // The engine moves to `next` only when the whole advance succeeded: a record that fails to
        // decode leaves it on its version, and the next advance covers the same commits again.
        if changes.needsFullEvaluation || linkedChanges.values.contains(where: \.needsFullEvaluation) {
            let rows = try reevaluate(on: next, changes: changes)
            snapshot = next
            return (rows, true)
        }
        if ranked {
            // Scores follow the whole index: any change evaluates the search again (not counted as a
            // full re-evaluation: it is this query's way).
            let changed = !changes.keys.isEmpty || linkedChanges.values.contains { !$0.keys.isEmpty }
            let rows = changed ? try reevaluate(on: next, changes: changes) : []
            snapshot = next
            return (rows, false)
        }
        var rows: [Row] = []
        var matches = linkMatches
        let predicates = template.predicates
        let filters = template.linkFilters
        let needsFull: Bool = try mapStorageErrors {
            try next.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let state = try transaction.typeState(Element.self)
                let resolver = LinkResolver(transaction)
                // A full-text search (sorted by fields): a changed object's own text decides.
                let textMatches = try template.textMatcher(state)
                // The linked objects that match each condition across a link, for those that changed.
                for (position, filter) in filters.enumerated() where !filter.isFixed {
                    for target in (linkedChanges[filter.targetTypeName]?.keys ?? [:]).keys {
                        if try filter.targetMatches(target, resolver) {
                            matches[position].insert(target)
                        } else {
                            matches[position].remove(target)
                        }
                    }
                }
                // The rows linking to a changed linked object, from each link's inverse index: whether
                // that change counts as their modification, and through which placing links and
                // linked objects they were reached. A row reached through the one placing to-one link
                // alone is placed again right here, from the linked object.
                var linked: [[UInt8]: Bool] = [:]
                var reached: [[UInt8]: [(field: String, target: [UInt8], toMany: Bool)]] = [:]
                var sectionOfTarget: [[UInt8]: [UInt8]] = [:]
                func section(of target: [UInt8]) throws -> [UInt8]? {
                    guard let sectionFromTarget else { return nil }
                    if let known = sectionOfTarget[target] { return known }
                    let made = try sectionFromTarget(target, resolver)
                    sectionOfTarget[target] = made
                    return made
                }
                for dependency in dependencies {
                    guard let targetChanges = linkedChanges[dependency.targetTypeName],
                        !targetChanges.keys.isEmpty
                    else { continue }
                    // A link without an inverse index (not declared in the schema): no way to find
                    // its rows but evaluating again.
                    guard let link = state.link(named: dependency.field) else { return true }
                    let direct =
                        dependencies.count == 1 && placingLink == dependency.field
                        && !link.definition.isToMany
                    for (target, operation) in targetChanges.keys {
                        let counts =
                            operation != .update
                            || (dependency.observed.map { !$0.isEmpty } ?? true
                                && targetChanges.modifies(target, observing: dependency.observed))
                        let member = direct && matches.allSatisfy { $0.contains(target) }
                        for source in try txn.values(forKey: target, in: link.database) {
                            if direct && changes.keys[source] == nil {
                                if let old = entryOfKey[source].map({ Array($0) }) {
                                    let new =
                                        try member
                                        ? section(of: target).map {
                                            LiveRow.replacingSection(of: old, with: $0)
                                        } ?? old
                                        : nil
                                    if new != old || counts {
                                        rows.append(
                                            Row(key: source, oldEntry: old, newEntry: new, modified: counts))
                                    }
                                    continue
                                }
                                // Not a row: it joins only through a condition on the linked object.
                                if !member || filters.isEmpty { continue }
                            }
                            linked[source] = (linked[source] ?? false) || counts
                            if dependency.places {
                                reached[source, default: []].append(
                                    (dependency.field, target, link.definition.isToMany))
                            }
                        }
                    }
                }
                // Live results of one store advancing to the same version share the decoded objects.
                let decoded = context.decodedObjects(of: Element.schema.typeName, at: next.transactionID)
                let load: ([UInt8]) throws -> Element? = { key in
                    try decoded.object(key, as: Element.self) {
                        try transaction.object(Element.self, keyBytes: key, state: state)
                    }
                }
                var candidates = Set(try candidates(changes, next: next, load: load))
                candidates.formUnion(linked.keys)
                for key in candidates {
                    // A row reached only through linked objects is itself unchanged: when it can be
                    // placed from the linked object alone, it is, without decoding it.
                    if changes.keys[key] == nil, let modified = linked[key] {
                        let oldEntry = entryOfKey[key].map { Array($0) }
                        let via = reached[key] ?? []
                        if via.isEmpty {
                            // Only observed, not placed: same entry, maybe modified.
                            if let oldEntry, modified {
                                rows.append(
                                    Row(key: key, oldEntry: oldEntry, newEntry: oldEntry, modified: true))
                            }
                            continue
                        }
                        if let placingLink, via.count == 1, via[0].field == placingLink, !via[0].toMany {
                            let target = via[0].target
                            let member = matches.allSatisfy { $0.contains(target) }
                            if oldEntry == nil && (!member || filters.isEmpty) { continue }
                            if let oldEntry {
                                var newEntry: [UInt8]?
                                if member {
                                    newEntry =
                                        try section(of: target).map {
                                            LiveRow.replacingSection(of: oldEntry, with: $0)
                                        } ?? oldEntry
                                }
                                rows.append(
                                    Row(key: key, oldEntry: oldEntry, newEntry: newEntry, modified: modified))
                                continue
                            }
                        }
                    }
                    // A row reached only through a linked object is itself unchanged.
                    let operation = changes.keys[key] ?? (linked[key] != nil ? .update : nil)
                    guard let operation else { continue }
                    var newEntry: [UInt8]?
                    if operation != .delete, let object = try load(key),
                        try predicates.allSatisfy({ try $0.evaluate(object) }),
                        textMatches?(object) ?? true,
                        zip(filters, matches).allSatisfy({ $0.accepts(object, matching: $1) })
                    {
                        newEntry = try entry(for: object, key: key, resolver: resolver)
                    }
                    let oldEntry = entryOfKey[key].map { Array($0) }
                    if oldEntry == nil && newEntry == nil { continue }
                    let modified =
                        (changes.keys[key] == .update && changes.modifies(key, observing: observedFields))
                        || linked[key] == true
                    rows.append(Row(key: key, oldEntry: oldEntry, newEntry: newEntry, modified: modified))
                }
                return false
            }
        }
        if needsFull {
            let rows = try reevaluate(on: next, changes: changes)
            snapshot = next
            return (rows, true)
        }
        linkMatches = matches
        apply(&rows)
        snapshot = next
        return (rows, false)
    }

    /// The changed objects that may be in the result before or after: those it held, and those whose
    /// new index key falls in the query's ranges (every changed object when the query reads no index).
    private func candidates(
        _ changes: TypeChanges, next: ReadSnapshot, load: ([UInt8]) throws -> Element?
    ) throws -> [[UInt8]] {
        guard let indexAccess else { return Array(changes.keys.keys) }
        var result = Set<[UInt8]>()
        if changes.keys.count <= entryOfKey.count {
            for key in changes.keys.keys where entryOfKey.contains(key) { result.insert(key) }
        } else {
            for entry in entryOfKey {
                let key = Array(LiveRow.primaryKey(in: entry))
                if changes.keys[key] != nil { result.insert(key) }
            }
        }
        let sorted = try context.changedIndexKeys(
            of: Element.schema.typeName, index: indexAccess.name, from: snapshot.transactionID,
            to: next.transactionID
        ) {
            var pairs: [(key: [UInt8], primaryKey: [UInt8])] = []
            for (key, operation) in changes.keys where operation != .delete {
                if let object = try load(key) { pairs.append((try indexAccess.keyBytes(object), key)) }
            }
            return pairs.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
        for range in indexAccess.ranges {
            let start = range.start
            var low = 0
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if sorted[middle].key.lexicographicallyPrecedes(start) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            var index = low
            scan: while index < sorted.count {
                switch range.position(of: sorted[index].key) {
                case .after: break scan
                case .inside: result.insert(sorted[index].primaryKey)
                case .before: break
                }
                index += 1
            }
        }
        return Array(result)
    }

    /// Reads old ranks, moves the entries, reads new ranks. Old entries leave together and new ones
    /// join together, each batch in ascending order: the rows of a renamed section are neighbours
    /// before and after, and move as one run (a search and a move per chunk, not per row).
    private func apply(_ rows: inout [Row]) {
        // A few rows (one object written) move one by one, in place: a batch rebuilds the chunks it
        // touches, which pays only for runs of rows.
        if rows.count <= Self.rowsMovedOneByOne {
            for index in 0..<rows.count {
                rows[index].oldRank = rows[index].oldEntry.flatMap { ordered.rank(of: $0) }
            }
            for index in 0..<rows.count {
                if let old = rows[index].oldEntry {
                    ordered.remove(old)
                    if sectionKey != nil { countSection(of: old, -1) }
                }
            }
            for index in 0..<rows.count {
                if let new = rows[index].newEntry {
                    ordered.insert(new)
                    entryOfKey.set(new)
                    if sectionKey != nil { countSection(of: new, 1) }
                } else {
                    entryOfKey.remove(rows[index].key)
                }
            }
            for index in 0..<rows.count {
                rows[index].newRank = rows[index].newEntry.flatMap { ordered.rank(of: $0) }
            }
            return
        }
        func sortedRows(old: Bool) -> (rows: [Int], entries: [[UInt8]]) {
            var chosen: [Int] = []
            var entries: [[UInt8]] = []
            for index in rows.indices {
                if let entry = old ? rows[index].oldEntry : rows[index].newEntry {
                    chosen.append(index)
                    entries.append(entry)
                }
            }
            guard let order = RankedKeys.ascendingOrder(of: entries) else { return (chosen, entries) }
            var sortedRows: [Int] = []
            var sortedEntries: [[UInt8]] = []
            sortedRows.reserveCapacity(order.count)
            sortedEntries.reserveCapacity(order.count)
            for position in 0..<order.count {
                sortedRows.append(chosen[order[position]])
                sortedEntries.append(entries[order[position]])
            }
            return (sortedRows, sortedEntries)
        }
        // Index loops, not `enumerated()`: in this generic code it stays unspecialized.
        let leaving = sortedRows(old: true)
        let oldRanks = ordered.remove(sorted: leaving.entries)
        for position in 0..<oldRanks.count { rows[leaving.rows[position]].oldRank = oldRanks[position] }
        // Section counts change by runs: the rows of one linked object leave one section and join
        // another together, so consecutive rows are counted once per run, not looked up one by one.
        var run: (section: [UInt8], delta: Int)?
        func count(_ entry: [UInt8], _ delta: Int) {
            let section = LiveRow.sectionSlice(in: entry)
            if let current = run, current.section.elementsEqual(section) {
                run!.delta += delta
                return
            }
            settle()
            run = (Array(section), delta)
        }
        func settle() {
            guard let (section, delta) = run, delta != 0 else { return }
            let total = (sectionCounts[section] ?? 0) + delta
            sectionCounts[section] = total == 0 ? nil : total
        }
        if sectionKey != nil {
            for row in rows {
                if let old = row.oldEntry { count(old, -1) }
            }
        }
        let joining = sortedRows(old: false)
        ordered.insert(sorted: joining.entries)
        for row in rows {
            if let new = row.newEntry {
                entryOfKey.set(new)
                if sectionKey != nil { count(new, 1) }
            } else {
                entryOfKey.remove(row.key)
            }
        }
        settle()
        let newRanks = ordered.ranks(ofSorted: joining.entries)
        for position in 0..<newRanks.count { rows[joining.rows[position]].newRank = newRanks[position] }
    }

    /// The most rows a change moves one by one (more move in batches; see `apply`).
    static var rowsMovedOneByOne: Int { 8 }

    /// Counts a row of `entry` in or out (`delta`) of its section.
    private func countSection(of entry: [UInt8], _ delta: Int) {
        let section = LiveRow.sectionKey(in: entry)
        let total = (sectionCounts[section] ?? 0) + delta
        sectionCounts[section] = total == 0 ? nil : total
    }

    /// Evaluates the query again and compares entries: the rows whose entry changed, or that the log
    /// says were modified (all surviving ones when the log cannot say).
    private func reevaluate(on next: ReadSnapshot, changes: TypeChanges) throws -> [Row] {
        let (entries, plan, matches) = try fullEntries(on: next)
        self.plan = plan
        self.linkMatches = matches
        var rows: [Row] = []
        for oldSlice in entryOfKey {
            let old = Array(oldSlice)
            let key = Array(LiveRow.primaryKey(in: old))
            let new = entries[key].map { Array($0) }
            let modified: Bool
            if new == nil {
                modified = false
            } else if changes.needsFullEvaluation {
                modified = true
            } else {
                modified = changes.keys[key] == .update && changes.modifies(key, observing: observedFields)
            }
            if new != old || modified {
                rows.append(Row(key: key, oldEntry: old, newEntry: new, modified: modified))
            }
        }
        for new in entries {
            let key = Array(LiveRow.primaryKey(in: new))
            if !entryOfKey.contains(key) {
                rows.append(Row(key: key, oldEntry: nil, newEntry: Array(new), modified: false))
            }
        }
        for index in rows.indices {
            rows[index].oldRank = rows[index].oldEntry.flatMap { ordered.rank(of: $0) }
        }
        install(entries)
        for index in rows.indices {
            rows[index].newRank = rows[index].newEntry.flatMap { ordered.rank(of: $0) }
        }
        return rows
    }
}
