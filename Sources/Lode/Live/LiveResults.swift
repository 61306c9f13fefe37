import Dispatch
import Foundation
import LMDB
import ModelStorage

/// What an observer of live results receives.
public enum ResultsChange<Element: Persistable>: Sendable {
    /// The results when observation began.
    case initial(Results<Element>)
    /// The results at a new version, and what changed since the previous delivery.
    case update(Results<Element>, CollectionChange)
    /// Advancing failed (the store was closed, a record no longer decodes…); observation goes on.
    case error(LodeError)
}

/// Results that follow the store: pinned to one version, they advance — to the last committed
/// version, with the exact change from the version they had — when ``refresh()`` is called or, when
/// observed, after every commit of any process.
///
/// For each commit, the change log says which objects changed; only those are decoded and checked
/// against the query, and their old and new positions are found in an order-statistic structure over
/// the encoded sort keys, so a commit costs O(changed objects × log N), not a new query. Queries whose
/// order cannot be encoded (string comparators, enums' own `<`, several sort keys of which one cannot),
/// a log that no longer reaches back, and `deleteAll` are handled by evaluating again in full and
/// diffing; the change says so.
public final class LiveResults<Element: Persistable>: @unchecked Sendable {
    private let store: Store
    private let template: Results<Element>
    private let lock = NSLock()
    private let sortKey: ((Element) throws -> [UInt8])?
    private var snapshot: ReadSnapshot
    private var plan: QueryPlan
    private var ordered = RankedKeys()
    private var entryOfKey: [[UInt8]: [UInt8]] = [:]
    private var window: [[UInt8]] = []
    private var current: Results<Element>
    /// With key-path filters: the top-level fields whose changes count as modifications.
    private let observedFields: Set<String>?

    /// Makes live results for `results`' query (evaluated now, on the last committed version). With
    /// `keyPaths`, an object whose other fields change is not reported as modified (it is still
    /// reported when it joins, leaves or moves).
    public init(_ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil) throws {
        self.observedFields = keyPaths.map { paths in
            Set(paths.map { fieldName(of: $0).split(separator: ".").first.map(String.init) ?? "" })
        }
        guard case .store(let store) = results.source else {
            throw LodeError.schemaMismatch(
                type: Element.schema.typeName, reason: "live results follow the store: use store.objects(_:)")
        }
        self.store = store
        self.template = results
        self.sortKey = LiveResults.sortKeyEncoder(for: results.sortDescriptors)
        let fresh = Results<Element>(source: .store(store)).copyingQuery(of: results)
        let evaluation = try fresh.evaluation()
        self.snapshot = evaluation.snapshot!
        self.plan = evaluation.plan
        self.current = fresh
        try rebuild(from: fresh, evaluation: evaluation)
    }

    /// The results at the version the live results are on.
    public var results: Results<Element> { lock.withLock { current } }

    /// The version the live results are on.
    public var version: Int { lock.withLock { snapshot.transactionID } }

    /// Every row of the full (unwindowed) result, as entry keys: the sort key then the primary key.
    private func rebuild(from results: Results<Element>, evaluation: Evaluation<Element>) throws {
        ordered = RankedKeys()
        entryOfKey = [:]
        let full = Results<Element>(source: .store(store)).copyingQuery(of: template, window: false)
        // Evaluate the unwindowed query on the same snapshot.
        let fullEvaluation = try mapStorageErrors {
            try snapshot.read { txn in
                try full.evaluate(in: Transaction(store: store, lmdb: txn), snapshot: snapshot)
            }
        }
        if let sortKey {
            var entries: [[UInt8]] = []
            entries.reserveCapacity(fullEvaluation.keys.count)
            let objects = try fullEvaluation.objects ?? full.withEvaluation(fullEvaluation).fetch()
            for (index, object) in objects.enumerated() {
                let key = Array(fullEvaluation.keys[index])
                let entry = LiveResults.entry(sortKey: try sortKey(object), key: key)
                entries.append(entry)
                entryOfKey[key] = entry
            }
            entries.sort { $0.lexicographicallyPrecedes($1) }
            ordered = RankedKeys(sorted: entries)
        }
        window = (0..<evaluation.keys.count).map { Array(evaluation.keys[$0]) }
        current = results.withEvaluation(evaluation)
    }

    /// An encoder of sort values whose byte order is the descriptors' order, or nil when one of them
    /// cannot be encoded that way.
    static func sortKeyEncoder(for descriptors: [SortDescriptor<Element>]) -> ((Element) throws -> [UInt8])? {
        var paths: [(AnyKeyPath, Bool)] = []
        for descriptor in descriptors {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath else { return nil }
            let valueType = type(of: keyPath as AnyKeyPath).valueType
            guard keyOrderMatchesComparable(valueType) else { return nil }
            paths.append((keyPath, descriptor.order == .reverse))
        }
        return { object in
            var bytes: [UInt8] = []
            for (keyPath, reverse) in paths {
                guard let value = object[keyPath: keyPath] as? any Encodable else { continue }
                let encoded = try KeyEncoder().encode(value)
                bytes += reverse ? encoded.map { ~$0 } : encoded
            }
            return bytes
        }
    }

    /// Advances to the last committed version and returns what changed, or nil when nothing
    /// committed since. Not allowed inside a transaction of this store on this thread.
    @discardableResult
    public func refresh() throws -> CollectionChange? {
        let environment = try store.environment()
        guard !environment.currentThreadHasTransaction else {
            throw LodeError.storage(
                LMDBError(
                    .nestedWrite, operation: "refresh",
                    message: "live results cannot advance inside a transaction of their store"))
        }
        lock.lock()
        defer { lock.unlock() }
        guard environment.info.lastTransactionID != snapshot.transactionID else { return nil }
        let next = try store.currentSnapshot()
        guard next.transactionID != snapshot.transactionID else { return nil }
        return try advance(to: next)
    }

    private func advance(to next: ReadSnapshot) throws -> CollectionChange {
        let from = snapshot.transactionID
        var change = CollectionChange(fromVersion: from, toVersion: next.transactionID)
        let changes: TypeChanges = try mapStorageErrors {
            try next.read { txn in
                guard let log = store.changeLog else {
                    var unknown = TypeChanges()
                    unknown.needsFullEvaluation = true
                    return unknown
                }
                return try TypeChanges.read(
                    Element.schema.typeName, from: from, to: next.transactionID, in: txn, log: log,
                    meta: store.meta)
            }
        }
        let oldWindow = window
        if changes.needsFullEvaluation || sortKey == nil
            || changes.keys.count > Swift.max(64, ordered.count / 2)
        {
            try reevaluate(on: next, changes: changes, into: &change, oldWindow: oldWindow)
            return change
        }
        guard !changes.keys.isEmpty else {
            snapshot = next
            current = template.withEvaluation(
                Evaluation(plan: plan, keys: KeyList(window), objects: nil, snapshot: next))
            return change
        }
        // Decode each changed object at the new version and find its old and new entries.
        var items: [ChangedRow] = []
        let predicates = template.predicates
        let encodeSortKey = sortKey!
        try mapStorageErrors {
            try next.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let state = try transaction.typeState(Element.self)
                for (key, operation) in changes.keys {
                    var newEntry: [UInt8]?
                    if operation != .delete,
                        let object = try transaction.object(Element.self, keyBytes: key, state: state),
                        try predicates.allSatisfy({ try $0.evaluate(object) })
                    {
                        newEntry = LiveResults.entry(sortKey: try encodeSortKey(object), key: key)
                    }
                    let oldEntry = entryOfKey[key]
                    if oldEntry == nil && newEntry == nil { continue }
                    items.append(
                        ChangedRow(
                            key: key, old: oldEntry, new: newEntry,
                            modified: operation == .update && changes.modifies(key, observing: observedFields)
                        ))
                }
            }
        }
        let windowed = template.limitCount != nil || template.offsetCount > 0
        // Old positions first, then remove, insert, and read the new positions.
        var oldRanks: [Int?] = items.map { $0.old.flatMap { ordered.rank(of: $0) } }
        for item in items { if let old = item.old { ordered.remove(old) } }
        for item in items {
            if let new = item.new {
                ordered.insert(new)
                entryOfKey[item.key] = new
            } else {
                entryOfKey[item.key] = nil
            }
        }
        var newRanks: [Int?] = items.map { $0.new.flatMap { ordered.rank(of: $0) } }
        snapshot = next
        if windowed {
            let newWindow = currentKeys()
            // Inside a window, an object whose sort key changed may still keep its place: any changed
            // object that the diff does not move is a modification.
            let modified = Set(items.filter(\.modified).map(\.key))
            change.apply(diffing: oldWindow, newWindow, modified: modified, modifiedMoves: modified)
            window = newWindow
        } else {
            for (position, item) in items.enumerated() {
                switch (oldRanks[position], newRanks[position]) {
                case (let old?, nil): change.deletions.append(old)
                case (nil, let new?): change.insertions.append(new)
                case (let old?, let new?):
                    if item.old == item.new {
                        if item.modified {
                            change.modifications.append(old)
                            change.modificationsNew.append(new)
                        }
                    } else {
                        change.moves.append(.init(from: old, to: new))
                        if item.modified { change.modifiedMoves.append(new) }
                    }
                default: break
                }
            }
            change.sort()
            window = currentKeys()
        }
        oldRanks.removeAll()
        newRanks.removeAll()
        current = template.withEvaluation(
            Evaluation(plan: plan, keys: KeyList(window), objects: nil, snapshot: next))
        return change
    }

    /// An entry of the ordered rows: the sort key, the primary key (both self-delimiting, so entries
    /// sort by sort key, then primary key), then the primary key's length in two bytes.
    static func entry(sortKey: [UInt8], key: [UInt8]) -> [UInt8] {
        sortKey + key + [UInt8(key.count >> 8), UInt8(key.count & 0xff)]
    }

    /// The primary key inside an entry.
    static func primaryKey(of entry: [UInt8]) -> [UInt8] {
        let length = Int(entry[entry.count - 2]) << 8 | Int(entry[entry.count - 1])
        return Array(entry[(entry.count - 2 - length)..<(entry.count - 2)])
    }

    /// The primary keys of the current (windowed) result, from the ordered entries.
    private func currentKeys() -> [[UInt8]] {
        let lower = Swift.min(template.offsetCount, ordered.count)
        let upper =
            template.limitCount.map { $0 >= ordered.count - lower ? ordered.count : lower + $0 }
            ?? ordered.count
        return (lower..<upper).map { LiveResults.primaryKey(of: ordered.key(at: $0)) }
    }

    private func reevaluate(
        on next: ReadSnapshot, changes: TypeChanges, into change: inout CollectionChange, oldWindow: [[UInt8]]
    ) throws {
        let fresh = Results<Element>(source: .store(store)).copyingQuery(of: template)
        let evaluation = try mapStorageErrors {
            try next.read { txn in
                try fresh.evaluate(in: Transaction(store: store, lmdb: txn), snapshot: next)
            }
        }
        snapshot = next
        plan = evaluation.plan
        try rebuild(from: fresh, evaluation: evaluation)
        let modified: Set<[UInt8]>
        if changes.needsFullEvaluation {
            modified = Set(oldWindow).intersection(window)
        } else {
            modified = Set(
                changes.keys.filter {
                    $0.value == .update && changes.modifies($0.key, observing: observedFields)
                }
                .map(\.key))
        }
        change.apply(diffing: oldWindow, window, modified: modified, modifiedMoves: modified)
        change.wasFullyReevaluated = true
    }
}

/// One changed object of a live query: its entry before and after (nil when outside the result).
struct ChangedRow {
    var key: [UInt8]
    var old: [UInt8]?
    var new: [UInt8]?
    var modified: Bool
}

extension CollectionChange {
    /// Fills the change by diffing two lists of primary keys (Heckel, minimal moves).
    mutating func apply(
        diffing old: [[UInt8]], _ new: [[UInt8]], modified: Set<[UInt8]>, modifiedMoves: Set<[UInt8]>
    ) {
        var newIndex: [[UInt8]: Int] = [:]
        for (index, key) in new.enumerated() { newIndex[key] = index }
        for operation in HeckelDiffer().diff(old, new) {
            switch operation {
            case .delete(let index): deletions.append(index)
            case .insert(let index): insertions.append(index)
            case .move(let from, let to):
                moves.append(.init(from: from, to: to))
                if modifiedMoves.contains(new[to]) { self.modifiedMoves.append(to) }
            case .update: break
            }
        }
        // Objects that kept their place and changed.
        let movedOrGone = Set(deletions).union(moves.map(\.from))
        for (index, key) in old.enumerated() where !movedOrGone.contains(index) && modified.contains(key) {
            if let target = newIndex[key] {
                modifications.append(index)
                modificationsNew.append(target)
            }
        }
        sort()
    }

    mutating func sort() {
        deletions.sort()
        insertions.sort()
        let pairs = zip(modifications, modificationsNew).sorted { $0.0 < $1.0 }
        modifications = pairs.map(\.0)
        modificationsNew = pairs.map(\.1)
        moves.sort { $0.from < $1.from }
        modifiedMoves.sort()
    }
}

extension KeyList {
    init(_ keys: [[UInt8]]) {
        self.init()
        for key in keys { append(key) }
    }
}
