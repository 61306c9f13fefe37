import Dispatch
import Foundation
import LodeCodec
import LodeQuery
import LodeStore
import ModelStorage
import Synchronization

import class LMDB.ReadSnapshot

/// Sectioned results that follow the store, maintained incrementally like ``LiveResults``: section
/// inserts and deletes, rows moving between sections reported as moves. The results must be sorted
/// by properties whose order can be encoded (numbers, strings with `<`, dates, booleans) and cannot
/// have a limit or offset.
///
/// Lock order: as ``LiveResults``: an advance runs in a turn of its own with no lock held and
/// publishes the sections under `published`, a leaf lock; reading them never waits for an advance.
public final class LiveSectionedResults<Key: Hashable & Encodable & Sendable, Element: Persistable>:
    @unchecked Sendable
{
    // @unchecked: the engine is used only by the advancer whose turn it is (or during init); what
    // readers see is in `published`, under its lock.
    package let store: Store
    private let context: LiveContext
    private let pin: VersionPin
    private let sectioned: SectionedResults<Key, Element>
    private let engine: LiveQueryEngine<Element>
    private let turn = AdvanceTurn()
    private let keys: SectionKeyBox<Key>
    /// What readers see: the sections of the current version, its version and section count.
    private let published: Locked<(sections: SectionedResults<Key, Element>, version: Int, count: Int)>

    /// Makes live sectioned results (evaluated now, on the last committed version).
    ///
    /// - Throws: ``LodeError/liveQueryUnsupported(type:reason:)`` for sections of a transaction's results,
    ///   ``LodeError/appCodeFailed(_:)`` when the section key throws, and what evaluating the results throws:
    ///   ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when LMDB
    ///   fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public init(
        _ sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        linkedKeyPaths: [LinkedKeyPath<Element>] = []
    ) throws {
        let results = sectioned.results
        guard case .store(let store) = results.source else {
            throw LodeError.liveQueryUnsupported(
                type: Element.schema.typeName,
                reason: "results of a transaction cannot follow the store: use store.objects(_:)")
        }
        guard results.limitCount == nil && results.offsetCount == 0,
            let sortKey = LiveResults<Element>.sortKeyEncoder(for: results)
        else {
            throw LodeError.liveQueryUnsupported(
                type: Element.schema.typeName,
                reason:
                    "live sectioned results need sort properties of encodable order and no limit or offset")
        }
        self.store = store
        let context = LiveContext.of(store)
        self.context = context
        self.sectioned = sectioned
        let keys = SectionKeyBox<Key>()
        self.keys = keys
        let keyFunction = sectioned.keyFunction
        let snapshot = try store.currentSnapshot()
        pin = store.pins.pin(
            at: snapshot.transactionID, owner: "LiveSectionedResults<\(Element.schema.typeName)>",
            needsChangeLog: true)
        engine = try LiveQueryEngine(
            store: store, context: context,
            template: Results<Element>(source: .store(store)).copyingQuery(of: results),
            sortKey: sortKey,
            sectionKey: { object, resolver in
                let key = try keyFunction.key(of: object, resolver: resolver)
                let encoded = try KeyEncoder().encode(key)
                keys.remember(key, for: encoded)
                return encoded
            }, observedFields: keyPaths.map { Set($0.map { fieldName(of: $0) }) },
            dependencies: LinkDependency.of(
                results, section: keyFunction.dependency, keyPathsGiven: keyPaths != nil,
                linked: linkedKeyPaths),
            sectionThrough: keyFunction.dependency?.field,
            sectionFromTarget: Self.sectionFromTarget(keyFunction, keys: keys),
            snapshot: snapshot)
        published = Locked((sectioned, snapshot.transactionID, 0), name: "LiveSectionedResults")
        publish()
    }

    /// For sections keyed across a link: the encoded section key from the linked object's key (its
    /// value remembered for the section's header).
    static func sectionFromTarget(_ keying: SectionKeying<Key, Element>, keys: SectionKeyBox<Key>) -> (
        ([UInt8], LinkResolver) throws -> [UInt8]
    )? {
        guard let fromTarget = keying.targetKey else { return nil }
        return { target, resolver in
            let key = try fromTarget(target, resolver)
            let encoded = try KeyEncoder().encode(key)
            keys.remember(key, for: encoded)
            return encoded
        }
    }

    /// Makes the sections of the engine's version what readers see.
    @discardableResult
    private func publish() -> SectionedResults<Key, Element> {
        let sections = makeSections()
        let version = engine.snapshot.transactionID
        let count = engine.sectionCounts.count
        published.withLock { $0 = (sections, version, count) }
        return sections
    }

    /// The sections at the version the live results are on (immutable, `Sendable`).
    ///
    /// - Complexity: O(1); it never waits for an advance in progress.
    public var sections: SectionedResults<Key, Element> { published.withLock { $0.sections } }

    /// The number of sections at the current version.
    var sectionCount: Int { published.withLock { $0.count } }

    /// The version the live results are on.
    public var version: Int { published.withLock { $0.version } }

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
    ///
    /// - Complexity: as ``LiveResults/refresh()``, plus O(*c* log *s*) to place *c* changed objects among *s*
    ///   sections.
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no
    ///   longer decodes, ``LodeError/appCodeFailed(_:)`` when the section key throws, and
    ///   ``LodeError/insideTransaction(operation:)`` inside a transaction; the sections stay on their
    ///   version.
    @discardableResult
    public func refresh() throws -> SectionedChange? {
        try store.checkNotInsideTransaction("refresh")
        return try refresh(to: try store.currentSnapshot())?.change
    }

    /// Advances to the version of `next` (a group advances its members to one snapshot) and returns
    /// the change with the sections it leads to, or nil when `next` is the version they are on.
    func refresh(to next: ReadSnapshot) throws -> (
        change: SectionedChange, sections: SectionedResults<Key, Element>
    )? {
        try turn.run { try advanceInTurn(to: next) }
    }

    /// The caller has the turn.
    private func advanceInTurn(to next: ReadSnapshot) throws -> (
        change: SectionedChange, sections: SectionedResults<Key, Element>
    )? {
        guard next.transactionID != engine.snapshot.transactionID else { return nil }
        context.hooks.advancing()
        var change = SectionedChange(
            fromVersion: engine.snapshot.transactionID, toVersion: next.transactionID)
        let oldLayout = SectionLayout(sections: engine.sortedSections, counts: engine.sectionCounts)
        let (rows, full) = try engine.advance(to: next)
        pin.move(to: next.transactionID)
        let newLayout = SectionLayout(sections: engine.sortedSections, counts: engine.sectionCounts)
        change.wasFullyReevaluated = full
        let oldIndex = Dictionary(uniqueKeysWithValues: oldLayout.sections.enumerated().map { ($1, $0) })
        let newIndex = Dictionary(uniqueKeysWithValues: newLayout.sections.enumerated().map { ($1, $0) })
        let deletedSections = Set(oldLayout.sections.filter { newIndex[$0] == nil })
        let insertedSections = Set(newLayout.sections.filter { oldIndex[$0] == nil })
        change.sectionDeletions = deletedSections.map { oldIndex[$0]! }.sorted()
        change.sectionInsertions = insertedSections.map { newIndex[$0]! }.sorted()
        typealias Engine = LiveQueryEngine<Element>
        // Loops over indices, not `map` and `enumerated()`: in this generic code those stay unspecialized
        // (a metadata lookup per row); section keys are compared in place.
        var placements: [RowPlacement.Row] = []
        placements.reserveCapacity(rows.count)
        for index in 0..<rows.count {
            let row = rows[index]
            placements.append(
                .init(
                    oldRank: row.oldRank, newRank: row.newRank, keyChanged: row.oldEntry != row.newEntry,
                    sameSection: LiveRow.sameSection(row.oldEntry, row.newEntry)))
        }
        let staying = RowPlacement.staying(placements)
        func survives(_ entry: [UInt8]?, unless sections: Set<[UInt8]>) -> Bool {
            guard let entry else { return false }
            return sections.isEmpty || !sections.contains(LiveRow.sectionKey(in: entry))
        }
        for index in 0..<rows.count {
            let row = rows[index]
            let oldPath = row.oldRank.map { oldLayout.indexPath(ofRank: $0) }
            let newPath = row.newRank.map { newLayout.indexPath(ofRank: $0) }
            let oldSurvives = survives(row.oldEntry, unless: deletedSections)
            let newSurvives = survives(row.newEntry, unless: insertedSections)
            switch (oldPath, newPath) {
            case (let old?, let new?) where oldSurvives && newSurvives:
                if row.oldEntry == row.newEntry || staying.contains(index) {
                    if row.modified { change.modifications.append(.init(old: old, new: new)) }
                } else {
                    change.moves.append(.init(from: old, to: new, modified: row.modified))
                }
            default:
                if let old = oldPath, oldSurvives { change.deletions.append(old) }
                if let new = newPath, newSurvives { change.insertions.append(new) }
            }
        }
        change.sort()
        return (change, publish())
    }
}

/// One delivery of observed sectioned results: the sections at the new version and the change.
package struct SectionedUpdate<Key: Hashable & Encodable & Sendable, Element: Persistable>: Sendable {
    var sections: SectionedResults<Key, Element>
    var change: SectionedChange
}

extension LiveSectionedResults: LiveSource {
    package func advance(to snapshot: ReadSnapshot) throws -> SectionedUpdate<Key, Element>? {
        guard let (change, sections) = try refresh(to: snapshot),
            !change.isEmpty || change.wasFullyReevaluated
        else { return nil }
        return SectionedUpdate(sections: sections, change: change)
    }
}
