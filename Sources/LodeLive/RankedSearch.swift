import Foundation
import LodeCodec
import LodeQuery
import LodeStore

import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// A live full-text search in order of relevance, advanced commit by commit without searching the
/// index again.
///
/// Every object's BM25 score depends on the whole collection — how many objects hold each word of
/// the query, their average length — so a commit can reorder objects it did not touch. Kept per
/// match: how often each word occurs in it and its length; kept for the collection: the statistics
/// and how many objects hold each word. A commit changes those only through the objects it changed:
/// each is read at the version before and after (their words counted again), the counts and
/// statistics follow, every match's score is computed again from what is kept — the same
/// arithmetic as a search (`TextSearch.Scoring`), so the same scores — and the new order is compared
/// with the old one. O(*c* · document + *m* log *m*) for *c* changed objects and *m* matches: no
/// postings read.
///
/// Used under the lock of the live results that own it, like ``LiveQueryEngine``.
final class RankedSearch<Element: Persistable> {
    struct Member {
        var frequencies: [Int32]
        var length: UInt32
    }

    let store: Store
    let context: LiveContext
    let template: Results<Element>
    private(set) var snapshot: ReadSnapshot
    private(set) var plan: QueryPlan
    private var statistics = TextIndexStatistics()
    private var leafDocuments: [Int] = []
    private var members: [[UInt8]: Member] = [:]
    /// The matches' primary keys, best first (ties in key order).
    private(set) var order: [[UInt8]] = []

    init(store: Store, context: LiveContext, template: Results<Element>, snapshot: ReadSnapshot) throws {
        self.store = store
        self.context = context
        self.template = template
        self.snapshot = snapshot
        plan = QueryPlan(access: .fullScan, ordering: .inMemory, rechecksPredicate: true)
        try evaluate(on: snapshot)
    }

    /// Searches the index at `snapshot` and keeps what the scores are made of.
    private func evaluate(on snapshot: ReadSnapshot) throws {
        let full = Results<Element>(source: .store(store)).copyingQuery(of: template, window: false)
        let (details, keys, plan) = try mapStorageErrors {
            try snapshot.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let state = try transaction.typeState(Element.self)
                guard let (index, search) = try template.textSearch(state) else {
                    throw LodeError.liveQueryUnsupported(
                        type: Element.schema.typeName, reason: "no full-text search")
                }
                let details = try search.details(in: transaction, postings: index.postings)
                let keys = try TextSearch.primaryKeys(
                    of: details.documents, in: transaction, postings: index.postings)
                // The other conditions, as the results check them.
                let evaluation = try full.evaluate(in: transaction, snapshot: snapshot)
                return (details, keys, evaluation)
            }
        }
        var kept: Set<[UInt8]>?
        if !template.predicates.isEmpty {
            kept = Set((0..<plan.keys.count).map { Array(plan.keys[$0]) })
        }
        statistics = details.statistics
        leafDocuments = details.leafDocuments
        members = [:]
        members.reserveCapacity(keys.count)
        for (index, key) in keys.enumerated() where kept?.contains(key) ?? true {
            members[key] = Member(
                frequencies: details.frequencies.map { $0[index] }, length: details.lengths[index])
        }
        self.plan = plan.plan
        order = ranked()
    }

    /// The members in order of their scores at the kept statistics.
    private func ranked() -> [[UInt8]] {
        let scoring = TextSearch.Scoring(statistics: statistics, leafDocuments: leafDocuments)
        var scored: [(key: [UInt8], score: Double)] = []
        scored.reserveCapacity(members.count)
        for (key, member) in members {
            scored.append((key, scoring.score(length: member.length) { member.frequencies[$0] }))
        }
        scored.sort { $0.score != $1.score ? $0.score > $1.score : $0.key.lexicographicallyPrecedes($1.key) }
        return scored.map(\.key)
    }

    /// Moves to `next`; returns the new order, and whether the search was run again in full (the
    /// change log could not say what changed).
    func advance(to next: ReadSnapshot, observing observedFields: Set<String>?) throws -> (
        modified: Set<[UInt8]>, fullyReevaluated: Bool
    ) {
        LockWatch.check(entering: "the predicates of live results of \(Element.self)")
        let changes = try context.changes(
            of: Element.schema.typeName, from: snapshot.transactionID, to: next, in: store)
        let modified = Set(
            changes.keys.filter { $0.value == .update && changes.modifies($0.key, observing: observedFields) }
                .map(\.key))
        if changes.needsFullEvaluation {
            try evaluate(on: next)
            snapshot = next
            return (modified, true)
        }
        guard !changes.keys.isEmpty else {
            snapshot = next
            return ([], false)
        }
        // Each changed object before and after: its words counted, its membership decided.
        let before: [[UInt8]: [Int32]] = try mapStorageErrors {
            try snapshot.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let state = try transaction.typeState(Element.self)
                guard let (index, search) = try template.textSearch(state) else { return [:] }
                var counts: [[UInt8]: [Int32]] = [:]
                for key in changes.keys.keys {
                    guard let object = try transaction.object(Element.self, keyBytes: key, state: state)
                    else { continue }
                    counts[key] = search.leafFrequencies(
                        search.relevantDocument(
                            texts: index.definition.texts(object), tokenizer: index.definition.tokenizer))
                }
                return counts
            }
        }
        let (after, statistics) = try mapStorageErrors {
            try next.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let state = try transaction.typeState(Element.self)
                guard let (index, search) = try template.textSearch(state) else {
                    throw LodeError.liveQueryUnsupported(
                        type: Element.schema.typeName, reason: "no full-text search")
                }
                var found: [[UInt8]: (frequencies: [Int32], member: Member?)] = [:]
                for key in changes.keys.keys {
                    guard let object = try transaction.object(Element.self, keyBytes: key, state: state)
                    else { continue }
                    let document = search.relevantDocument(
                        texts: index.definition.texts(object), tokenizer: index.definition.tokenizer)
                    let frequencies = search.leafFrequencies(document)
                    let member =
                        try search.matches(document)
                        && template.predicates.allSatisfy { try $0.evaluate(object) }
                        ? Member(frequencies: frequencies, length: UInt32(clamping: document.length)) : nil
                    found[key] = (frequencies, member)
                }
                return (found, try transaction.textIndexStatistics(index.postings))
            }
        }
        for key in changes.keys.keys {
            let old = before[key]
            let new = after[key]
            for leaf in leafDocuments.indices {
                let was = (old?[leaf] ?? 0) > 0 ? 1 : 0
                let now = (new?.frequencies[leaf] ?? 0) > 0 ? 1 : 0
                leafDocuments[leaf] += now - was
            }
            members[key] = new?.member
        }
        self.statistics = statistics
        order = ranked()
        snapshot = next
        return (modified, false)
    }
}
