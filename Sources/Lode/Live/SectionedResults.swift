import Dispatch
import Foundation
import LMDB
import ModelStorage

/// Results split into sections by a key: lazy like ``Results``, evaluated on first read on one
/// committed version. Sections are ordered by their key's encoded order (numbers and strings sort as
/// with `<`, enums with raw values by raw value) and exist only while non-empty; rows keep the
/// results' order within their section.
public struct SectionedResults<Key: Hashable & Encodable & Sendable, Element: Persistable>:
    RandomAccessCollection,
    @unchecked Sendable
{
    /// One section: its key and its objects.
    public struct Section: RandomAccessCollection, Identifiable, @unchecked Sendable {
        /// The section key.
        public let key: Key
        /// The section's objects, in order.
        public let objects: Results<Element>

        /// The key.
        public var id: Key { key }
        /// 0.
        public var startIndex: Int { 0 }
        /// The number of objects.
        public var endIndex: Int { objects.endIndex }
        /// The object at a position.
        public subscript(position: Int) -> Element { objects[position] }
    }

    let results: Results<Element>
    let keyFunction: @Sendable (Element) -> Key
    let cache: SectionsCache<Key, Element>

    init(results: Results<Element>, key: @escaping @Sendable (Element) -> Key, sections: [Section]? = nil) {
        self.results = results
        self.keyFunction = key
        self.cache = SectionsCache(sections)
    }

    /// The sections, evaluated once (throwing form).
    public func fetchSections() throws -> [Section] {
        try cache.value {
            let evaluation = try results.evaluation()
            let objects = try results.fetch()
            var groups: [[UInt8]: (key: Key, rows: [Int])] = [:]
            for (index, object) in objects.enumerated() {
                let key = keyFunction(object)
                let encoded = try KeyEncoder().encode(key)
                groups[encoded, default: (key, [])].rows.append(index)
            }
            return groups.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { _, group in
                let keys = KeyList(group.rows.map { Array(evaluation.keys[$0]) })
                let sectionEvaluation = Evaluation<Element>(
                    plan: evaluation.plan, keys: keys, objects: group.rows.map { objects[$0] },
                    snapshot: evaluation.snapshot)
                return Section(key: group.key, objects: results.withEvaluation(sectionEvaluation))
            }
        }
    }

    /// The sections.
    public var sections: [Section] {
        do { return try fetchSections() } catch { preconditionFailure("Lode sectioned results: \(error)") }
    }

    /// The section keys, in order.
    public var allKeys: [Key] { sections.map(\.key) }

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of sections.
    public var endIndex: Int { sections.count }
    /// The section at a position.
    public subscript(position: Int) -> Section { sections[position] }

    /// Live sectioned results that follow this query (see ``LiveSectionedResults``).
    public func live(keyPaths: [PartialKeyPath<Element>]? = nil) throws -> LiveSectionedResults<Key, Element>
    {
        try LiveSectionedResults(self, keyPaths: keyPaths)
    }
}

final class SectionsCache<Key: Hashable & Encodable & Sendable, Element: Persistable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [SectionedResults<Key, Element>.Section]?

    init(_ sections: [SectionedResults<Key, Element>.Section]?) { stored = sections }

    func value(
        _ make: () throws -> [SectionedResults<Key, Element>.Section]
    ) throws -> [SectionedResults<Key, Element>.Section] {
        lock.lock()
        defer { lock.unlock() }
        if let stored { return stored }
        let sections = try make()
        stored = sections
        return sections
    }
}

extension Results {
    /// The results split into sections by a property (see ``SectionedResults``).
    public func sectioned<Key: Hashable & Encodable & Sendable>(
        by keyPath: any KeyPath<Element, Key> & Sendable
    ) -> SectionedResults<Key, Element> {
        SectionedResults(results: self, key: { $0[keyPath: keyPath] })
    }

    /// The results split into sections by a computed key.
    public func sectioned<Key: Hashable & Encodable & Sendable>(
        by key: @escaping @Sendable (Element) -> Key
    ) -> SectionedResults<Key, Element> {
        SectionedResults(results: self, key: key)
    }
}

/// What changed in sectioned results between two versions: section deletions (old indices) and
/// insertions (new), then row changes as index paths — deletions at old paths, insertions at new
/// ones, modifications at old paths (new ones alongside), moves from old to new (also across
/// sections). Rows of deleted or inserted sections come and go with their section.
public struct SectionedChange: Equatable, Sendable, CustomStringConvertible {
    /// A row that moved.
    public struct Move: Equatable, Hashable, Sendable {
        /// Its old index path.
        public var from: IndexPath
        /// Its new index path.
        public var to: IndexPath
    }

    /// Old indices of sections that emptied.
    public var sectionDeletions: [Int] = []
    /// New indices of sections that appeared.
    public var sectionInsertions: [Int] = []
    /// Old index paths of rows that left.
    public var deletions: [IndexPath] = []
    /// New index paths of rows that joined.
    public var insertions: [IndexPath] = []
    /// Old index paths of rows that changed in place.
    public var modifications: [IndexPath] = []
    /// Their new index paths.
    public var modificationsNew: [IndexPath] = []
    /// Rows that moved.
    public var moves: [Move] = []
    /// New index paths of moved rows whose content changed too.
    public var modifiedMoves: [IndexPath] = []
    /// The version the consumer had.
    public var fromVersion: Int
    /// The version the change leads to.
    public var toVersion: Int
    /// True when the query was evaluated again in full to compute the change.
    public var wasFullyReevaluated = false

    /// True when nothing changed.
    public var isEmpty: Bool {
        sectionDeletions.isEmpty && sectionInsertions.isEmpty && deletions.isEmpty && insertions.isEmpty
            && modifications.isEmpty && moves.isEmpty
    }

    /// The change as a ModelStorage update (sections offset by `firstSection`); moved rows whose content
    /// changed become a delete and an insert.
    public func storageUpdate(firstSection: Int = 0, model: (IndexPath) -> Any? = { _ in nil })
        -> StorageUpdate
    {
        func shift(_ path: IndexPath) -> IndexPath {
            IndexPath(item: path.item, section: path.section + firstSection)
        }
        let update = StorageUpdate()
        for index in sectionDeletions { update.sectionChanges.append((.delete, [index + firstSection])) }
        for index in sectionInsertions { update.sectionChanges.append((.insert, [index + firstSection])) }
        let reloaded = Set(modifiedMoves)
        var deletes = deletions
        var inserts = insertions
        var plain: [Move] = []
        for move in moves {
            if reloaded.contains(move.to) {
                deletes.append(move.from)
                inserts.append(move.to)
            } else {
                plain.append(move)
            }
        }
        for path in deletes.sorted() { update.objectChanges.append((.delete, [shift(path)])) }
        for path in inserts.sorted() { update.objectChanges.append((.insert, [shift(path)])) }
        for move in plain { update.objectChanges.append((.move, [shift(move.from), shift(move.to)])) }
        for (old, new) in zip(modifications, modificationsNew) {
            update.objectChanges.append((.update, [shift(old)]))
            if let object = model(new) { update.updatedObjects[shift(old)] = object }
        }
        return update
    }

    /// A one-line summary.
    public var description: String {
        func text(_ path: IndexPath) -> String { "[\(path.section), \(path.item)]" }
        var parts: [String] = []
        if !sectionDeletions.isEmpty { parts.append("delete sections \(sectionDeletions)") }
        if !sectionInsertions.isEmpty { parts.append("insert sections \(sectionInsertions)") }
        if !deletions.isEmpty { parts.append("delete " + deletions.map(text).joined(separator: " ")) }
        if !insertions.isEmpty { parts.append("insert " + insertions.map(text).joined(separator: " ")) }
        if !modifications.isEmpty { parts.append("modify " + modifications.map(text).joined(separator: " ")) }
        if !moves.isEmpty {
            parts.append("move " + moves.map { text($0.from) + "→" + text($0.to) }.joined(separator: " "))
        }
        return "v\(fromVersion)→v\(toVersion): "
            + (parts.isEmpty ? "no changes" : parts.joined(separator: ", "))
    }
}

/// Sectioned results that follow the store, maintained incrementally like ``LiveResults``: section
/// inserts and deletes, rows moving between sections reported as moves. The results must be sorted
/// by properties whose order can be encoded (numbers, strings with `<`, dates, booleans) and cannot
/// have a limit or offset.
public final class LiveSectionedResults<Key: Hashable & Encodable & Sendable, Element: Persistable>:
    @unchecked Sendable
{
    private let store: Store
    private let sectioned: SectionedResults<Key, Element>
    private let engine: LiveQueryEngine<Element>
    private let lock = NSLock()
    private let keys: SectionKeyBox<Key>
    private var current: SectionedResults<Key, Element>

    /// Makes live sectioned results (evaluated now, on the last committed version).
    public init(_ sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil)
        throws
    {
        let results = sectioned.results
        guard case .store(let store) = results.source else {
            throw LodeError.schemaMismatch(
                type: Element.schema.typeName, reason: "live results follow the store: use store.objects(_:)")
        }
        guard results.limitCount == nil && results.offsetCount == 0,
            let sortKey = LiveResults<Element>.sortKeyEncoder(for: results.sortDescriptors)
        else {
            throw LodeError.schemaMismatch(
                type: Element.schema.typeName,
                reason:
                    "live sectioned results need sort properties of encodable order and no limit or offset")
        }
        self.store = store
        self.sectioned = sectioned
        let keys = SectionKeyBox<Key>()
        self.keys = keys
        let keyFunction = sectioned.keyFunction
        try store.prepareForResults(Element.self)
        let snapshot = try store.currentSnapshot()
        engine = try LiveQueryEngine(
            store: store, template: Results<Element>(source: .store(store)).copyingQuery(of: results),
            sortKey: sortKey,
            sectionKey: { object in
                let key = keyFunction(object)
                let encoded = try KeyEncoder().encode(key)
                keys.remember(key, for: encoded)
                return encoded
            }, observedFields: keyPaths.map { Set($0.map { fieldName(of: $0) }) }, snapshot: snapshot)
        current = sectioned
        current = makeSections()
    }

    /// The sections at the version the live results are on (immutable, `Sendable`).
    public var sections: SectionedResults<Key, Element> { lock.withLock { current } }

    /// The version the live results are on.
    public var version: Int { lock.withLock { engine.snapshot.transactionID } }

    private func makeSections() -> SectionedResults<Key, Element> {
        var rank = 0
        let template = Results<Element>(source: .store(store)).copyingQuery(of: sectioned.results)
        let sections = engine.sortedSections.map { encoded -> SectionedResults<Key, Element>.Section in
            let count = engine.sectionCounts[encoded] ?? 0
            let rows = KeyList.rows(engine.ordered, rank..<(rank + count))
            rank += count
            let evaluation = Evaluation<Element>(
                plan: engine.plan, keys: rows, objects: nil, snapshot: engine.snapshot)
            return .init(key: keys.value(for: encoded)!, objects: template.withEvaluation(evaluation))
        }
        return SectionedResults(results: sectioned.results, key: sectioned.keyFunction, sections: sections)
    }

    /// Advances to the last committed version and returns what changed, or nil when nothing committed.
    @discardableResult
    public func refresh() throws -> SectionedChange? {
        try store.checkNotInsideTransaction("refresh")
        return try refresh(to: try store.currentSnapshot())
    }

    /// Advances to the version of `next` (a group advances its members to one snapshot).
    func refresh(to next: ReadSnapshot) throws -> SectionedChange? {
        lock.lock()
        defer { lock.unlock() }
        guard next.transactionID != engine.snapshot.transactionID else { return nil }
        var change = SectionedChange(
            fromVersion: engine.snapshot.transactionID, toVersion: next.transactionID)
        let oldLayout = SectionLayout(sections: engine.sortedSections, counts: engine.sectionCounts)
        let (rows, full) = try engine.advance(to: next)
        let newLayout = SectionLayout(sections: engine.sortedSections, counts: engine.sectionCounts)
        change.wasFullyReevaluated = full
        let oldIndex = Dictionary(uniqueKeysWithValues: oldLayout.sections.enumerated().map { ($1, $0) })
        let newIndex = Dictionary(uniqueKeysWithValues: newLayout.sections.enumerated().map { ($1, $0) })
        let deletedSections = Set(oldLayout.sections.filter { newIndex[$0] == nil })
        let insertedSections = Set(newLayout.sections.filter { oldIndex[$0] == nil })
        change.sectionDeletions = deletedSections.map { oldIndex[$0]! }.sorted()
        change.sectionInsertions = insertedSections.map { newIndex[$0]! }.sorted()
        for row in rows {
            let oldPath = row.oldRank.map { oldLayout.indexPath(ofRank: $0) }
            let newPath = row.newRank.map { newLayout.indexPath(ofRank: $0) }
            let oldSurvives =
                row.oldEntry.map { !deletedSections.contains(LiveQueryEngine<Element>.sectionKey(of: $0)) }
                ?? false
            let newSurvives =
                row.newEntry.map { !insertedSections.contains(LiveQueryEngine<Element>.sectionKey(of: $0)) }
                ?? false
            switch (oldPath, newPath) {
            case (let old?, let new?) where oldSurvives && newSurvives:
                if row.oldEntry == row.newEntry {
                    if row.modified {
                        change.modifications.append(old)
                        change.modificationsNew.append(new)
                    }
                } else {
                    change.moves.append(.init(from: old, to: new))
                    if row.modified { change.modifiedMoves.append(new) }
                }
            default:
                if let old = oldPath, oldSurvives { change.deletions.append(old) }
                if let new = newPath, newSurvives { change.insertions.append(new) }
            }
        }
        change.deletions.sort()
        change.insertions.sort()
        let pairs = zip(change.modifications, change.modificationsNew).sorted { $0.0 < $1.0 }
        change.modifications = pairs.map(\.0)
        change.modificationsNew = pairs.map(\.1)
        change.moves.sort { $0.from < $1.from }
        change.modifiedMoves.sort()
        current = makeSections()
        return change
    }
}

/// The encoded section keys and their values.
final class SectionKeyBox<Key>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [[UInt8]: Key] = [:]

    func remember(_ key: Key, for encoded: [UInt8]) { lock.withLock { values[encoded] = key } }
    func value(for encoded: [UInt8]) -> Key? { lock.withLock { values[encoded] } }
}

/// Sections in order with their row counts: turns a flat rank into an index path.
struct SectionLayout {
    let sections: [[UInt8]]
    private let starts: [Int]

    init(sections: [[UInt8]], counts: [[UInt8]: Int]) {
        self.sections = sections
        var starts: [Int] = []
        var total = 0
        for section in sections {
            starts.append(total)
            total += counts[section] ?? 0
        }
        self.starts = starts
    }

    func indexPath(ofRank rank: Int) -> IndexPath {
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= rank { low = middle + 1 } else { high = middle }
        }
        let section = low - 1
        return IndexPath(item: rank - starts[section], section: section)
    }
}

/// What an observer of sectioned results receives.
public enum SectionedResultsChange<Key: Hashable & Encodable & Sendable, Element: Persistable>: Sendable {
    /// The sections when observation began.
    case initial(SectionedResults<Key, Element>)
    /// The sections at a new version and what changed since the previous delivery.
    case update(SectionedResults<Key, Element>, SectionedChange)
    /// Advancing failed; observation goes on.
    case error(LodeError)
}

final class SectionedObservation<Key: Hashable & Encodable & Sendable, Element: Persistable>: CommitObserver,
    @unchecked Sendable
{
    let live: LiveSectionedResults<Key, Element>
    let handler: @Sendable (SectionedResultsChange<Key, Element>) -> Void
    let delivery: CoalescingDelivery

    init(
        live: LiveSectionedResults<Key, Element>, queue: DispatchQueue, token: ObservationToken,
        handler: @escaping @Sendable (SectionedResultsChange<Key, Element>) -> Void
    ) {
        self.live = live
        self.handler = handler
        self.delivery = CoalescingDelivery(queue: queue, token: token)
    }

    func storeDidCommit(version: Int) {
        delivery.schedule { [self] in
            do {
                if let change = try live.refresh(), !change.isEmpty || change.wasFullyReevaluated {
                    handler(.update(live.sections, change))
                }
            } catch {
                handler(.error(observationError(error, Element.self)))
            }
        }
    }
}

extension SectionedResults {
    /// Observes the sections: `.initial`, then `.update` after every commit that changes them, on
    /// `queue`, never inside a write transaction, coalesced while the queue is busy.
    public func observe(
        keyPaths: [PartialKeyPath<Element>]? = nil, on queue: DispatchQueue = .main,
        _ handler: @escaping @Sendable (SectionedResultsChange<Key, Element>) -> Void
    ) -> ObservationToken {
        let token = ObservationToken()
        let sectioned = self
        let paths = UncheckedKeyPaths(keyPaths)
        queue.async {
            guard !token.isCancelled else { return }
            do {
                let live = try LiveSectionedResults(sectioned, keyPaths: paths.value)
                guard case .store(let store) = sectioned.results.source else { return }
                let observation = SectionedObservation(
                    live: live, queue: queue, token: token, handler: handler)
                let notifier = store.makeNotifier()
                notifier.add(observation)
                token.onCancel { [weak notifier] in notifier?.remove(observation) }
                handler(.initial(live.sections))
                observation.storeDidCommit(version: live.version)
            } catch {
                handler(.error(observationError(error, Element.self)))
            }
        }
        return token
    }
}
