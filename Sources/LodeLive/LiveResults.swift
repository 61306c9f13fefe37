import Dispatch
import Foundation
import LodeCodec
import LodeQuery
import LodeStore
import LodeText

import class LMDB.ReadSnapshot

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
///
/// Lock order: an advance runs in a turn of its own (`AdvanceTurn`) with no lock held — it reads
/// LMDB and runs the app's predicates, sort keys and `Decodable` initializers on private state — and
/// publishes the results of the new version under `published`, a leaf lock. Reading the results never
/// waits for an advance; the live results call only down, never up to an observation or a storage.
public final class LiveResults<Element: Persistable>: @unchecked Sendable {
    // @unchecked: `engine`, `snapshot`, `plan` and `window` are used only by the advancer whose turn
    // it is (or during init); what readers see is in `published`, under its lock.
    package let store: Store
    private let context: LiveContext
    private let template: Results<Element>
    private let turn = AdvanceTurn()
    /// Keeps the change log from being pruned past the version the live results are on.
    private let pin: VersionPin
    /// The incremental engine, or nil when the order cannot be encoded (then every commit that
    /// touches the type evaluates the query again and diffs).
    private let engine: LiveQueryEngine<Element>?
    /// For a full-text search in order of relevance: the search that follows commits by their
    /// changed objects (see ``RankedSearch``).
    private let rankedSearch: RankedSearch<Element>?
    private var snapshot: ReadSnapshot
    private var plan: QueryPlan
    private var window: [[UInt8]] = []
    /// For a ranked search: the window as the search's match numbers (what its diff compares).
    private var rankedWindow: [Int] = []
    /// What readers see: the evaluation of the current version, the results made from it when first
    /// asked for (they register as a holder of the version only then), its version and row count.
    private let published: Locked<(evaluation: Evaluation<Element>, results: Results<Element>?, rows: Int)>
    /// With key-path filters: the top-level fields whose changes count as modifications.
    private let observedFields: Set<String>?
    /// The links whose objects the rows depend on.
    private let dependencies: [LinkDependency]

    /// Makes live results for `results`' query (evaluated now, on the last committed version). With
    /// `keyPaths`, an object whose other fields change is not reported as modified (it is still
    /// reported when it joins, leaves or moves).
    ///
    /// - Throws: ``LodeError/liveQueryUnsupported(type:reason:)`` for results of a transaction, and what
    ///   evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed and
    ///   ``LodeError/storage(_:)`` when LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)``
    ///   for a stored record that no longer decodes.
    public init(
        _ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        linkedKeyPaths: [LinkedKeyPath<Element>] = []
    ) throws {
        guard case .store(let store) = results.source else {
            throw LodeError.liveQueryUnsupported(
                type: Element.schema.typeName,
                reason: "results of a transaction cannot follow the store: use store.objects(_:)")
        }
        self.store = store
        self.context = LiveContext.of(store)
        self.template = Results<Element>(source: .store(store)).copyingQuery(of: results)
        self.observedFields = keyPaths.map { paths in
            Set(paths.map { fieldName(of: $0).split(separator: ".").first.map(String.init) ?? "" })
        }
        let snapshot = try store.currentSnapshot()
        self.snapshot = snapshot
        self.pin = store.pins.pin(
            at: snapshot.transactionID, owner: "LiveResults<\(Element.schema.typeName)>", needsChangeLog: true
        )
        self.dependencies = LinkDependency.of(
            results, keyPathsGiven: keyPaths != nil, linked: linkedKeyPaths)
        if results.isRankedByRelevance && results.linkFilters.isEmpty {
            let ranked = try RankedSearch(
                store: store, context: context, template: template, snapshot: snapshot)
            self.rankedSearch = ranked
            self.engine = nil
            self.plan = ranked.plan
        } else if let sortKey = LiveResults.sortKeyEncoder(for: results) {
            let engine = try LiveQueryEngine(
                store: store, context: context, template: template, sortKey: sortKey, sectionKey: nil,
                observedFields: observedFields, dependencies: dependencies, snapshot: snapshot)
            self.engine = engine
            self.rankedSearch = nil
            self.plan = engine.plan
        } else {
            self.engine = nil
            self.rankedSearch = nil
            self.plan = QueryPlan(access: .fullScan, ordering: .inMemory, rechecksPredicate: true)
        }
        self.published = Locked(
            (Evaluation(plan: plan, keys: KeyList(), objects: nil, snapshot: snapshot), nil, 0),
            name: "LiveResults")
        if let rankedSearch {
            rankedWindow = windowOf(rankedSearch.order)
            window = rankedWindow.map(rankedSearch.key)
        } else if engine == nil {
            let evaluation = try evaluate(on: snapshot)
            plan = evaluation.plan
            window = (0..<evaluation.keys.count).map { Array(evaluation.keys[$0]) }
        } else if windowed {
            window = windowKeys()
        }
        publish()
    }

    /// The results at the version the live results are on (immutable, `Sendable`).
    ///
    /// - Complexity: O(1); it never waits for an advance in progress.
    public var results: Results<Element> {
        published.withLock { published in
            if let results = published.results { return results }
            let made = template.withEvaluation(published.evaluation)
            published.results = made
            return made
        }
    }

    /// The results at the version the live results are on, as an immutable, `Sendable` value that
    /// never changes.
    public func freeze() -> Results<Element> { results }

    /// The version the live results are on.
    public var version: Int { published.withLock { $0.evaluation.snapshot!.transactionID } }

    /// Makes the advancer's version what readers see. Its keys share the engine's rows, which the
    /// next advance copies (a chunk and its group) before changing them.
    private func publish() {
        let keys = currentKeyList()
        let evaluation = Evaluation<Element>(plan: plan, keys: keys, objects: nil, snapshot: snapshot)
        published.withLock { $0 = (evaluation, nil, keys.count) }
    }

    private func evaluate(on snapshot: ReadSnapshot) throws -> Evaluation<Element> {
        try mapStorageErrors {
            try snapshot.read { txn in
                try template.evaluate(in: Transaction(store: store, lmdb: txn), snapshot: snapshot)
            }
        }
    }

    private var windowed: Bool { template.limitCount != nil || template.offsetCount > 0 }

    /// The keys the current results show: the engine's rows themselves (shared, nothing copied), or
    /// the window's keys.
    private func currentKeyList() -> KeyList {
        if let engine, !windowed { return .rows(engine.ordered, 0..<engine.ordered.count) }
        return KeyList(window)
    }

    /// The part of `ordered` the offset and limit keep.
    private func windowOf<Key>(_ ordered: [Key]) -> [Key] {
        let count = ordered.count
        let lower = Swift.min(template.offsetCount, count)
        let upper = template.limitCount.map { $0 >= count - lower ? count : lower + $0 } ?? count
        return lower == 0 && upper == count ? ordered : Array(ordered[lower..<upper])
    }

    /// The primary keys of the window (limit and offset) from the engine's rows.
    private func windowKeys() -> [[UInt8]] {
        guard let engine else { return window }
        let count = engine.ordered.count
        let lower = Swift.min(template.offsetCount, count)
        let upper = template.limitCount.map { $0 >= count - lower ? count : lower + $0 } ?? count
        return engine.keys(lower..<upper)
    }

    /// An encoder of the sort values of `results` — a sort through a link, then the descriptors —
    /// whose byte order is their order, or nil when one of them cannot be encoded that way.
    static func sortKeyEncoder(for results: Results<Element>) -> ((Element, LinkResolver) throws -> [UInt8])?
    {
        guard let local = sortKeyEncoder(for: results.sortDescriptors) else { return nil }
        guard let linked = results.linkedSort else { return { object, _ in try local(object) } }
        guard linked.encode != nil else { return nil }
        return { object, resolver in
            try (linked.sortBytes(of: object, resolver: resolver) ?? []) + local(object)
        }
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
    ///
    /// - Complexity: from the change log, O(*c* log *n*) for *c* objects changed since the last
    ///   version, whatever the size *n* of the results; a full evaluation when the log does not
    ///   reach back (``CollectionChange/wasFullyReevaluated``).
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes, and ``LodeError/insideTransaction(operation:)`` inside a transaction; the results
    ///   stay on their version.
    @discardableResult
    public func refresh() throws -> CollectionChange? {
        try store.checkNotInsideTransaction("refresh")
        return try refresh(to: try store.currentSnapshot())
    }

    /// Advances to the version of `next` (a group advances its members to one snapshot) and returns
    /// the change, or nil when `next` is the version they are on.
    func refresh(to next: ReadSnapshot) throws -> CollectionChange? {
        try turn.run { try advanceIfNewer(to: next) }
    }

    /// The caller has the turn.
    private func advanceIfNewer(to next: ReadSnapshot) throws -> CollectionChange? {
        guard next.transactionID != snapshot.transactionID else { return nil }
        context.hooks.advancing()
        let change = try advanceInTurn(to: next)
        publish()
        return change
    }

    /// The number of rows at the current version.
    var rowCount: Int { published.withLock { $0.rows } }

    /// The caller has the turn.
    private func advanceInTurn(to next: ReadSnapshot) throws -> CollectionChange {
        var change = CollectionChange(fromVersion: snapshot.transactionID, toVersion: next.transactionID)
        let oldWindow = window
        if let rankedSearch {
            let (modified, full) = try rankedSearch.advance(to: next, observing: observedFields)
            let oldRanked = rankedWindow
            rankedWindow = windowOf(rankedSearch.order)
            window = rankedWindow.map(rankedSearch.key)
            change.apply(diffingNumbers: oldRanked, rankedWindow, modified: modified)
            change.wasFullyReevaluated = full
            plan = rankedSearch.plan
        } else if let engine {
            let (rows, full) = try engine.advance(to: next)
            change.wasFullyReevaluated = full
            if windowed {
                window = windowKeys()
                let modified = Set(rows.filter(\.modified).map(\.key))
                change.apply(diffing: oldWindow, window, modified: modified)
            } else {
                change.record(rows)
            }
            plan = engine.plan
        } else {
            let changes = try context.changes(
                of: Element.schema.typeName, from: snapshot.transactionID, to: next, in: store)
            let evaluation = try evaluate(on: next)
            plan = evaluation.plan
            window = (0..<evaluation.keys.count).map { Array(evaluation.keys[$0]) }
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
            change.apply(diffing: oldWindow, window, modified: modified)
            change.wasFullyReevaluated = true
        }
        snapshot = next
        pin.move(to: next.transactionID)
        return change
    }
}

/// One delivery of observed live results: the results at the new version and the change leading there.
package struct ResultsUpdate<Element: Persistable>: Sendable {
    var results: Results<Element>
    var change: CollectionChange
}

extension LiveResults: LiveSource {
    package func advance(to snapshot: ReadSnapshot) throws -> ResultsUpdate<Element>? {
        try turn.run {
            guard let change = try advanceIfNewer(to: snapshot), !change.isEmpty || change.wasFullyReevaluated
            else { return nil }
            return ResultsUpdate(results: results, change: change)
        }
    }
}

extension KeyList {
    init(_ keys: [[UInt8]]) {
        self.init()
        for key in keys { append(key) }
    }
}
