import Foundation
import LodeCodec
import LodeQuery
import LodeStore
import LodeText

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
    /// Every object seen as a match, by a number of the search's own (hashing and comparing numbers
    /// is what a commit's ranking and diff do most): its primary key, and what its score is made of
    /// while it is a match.
    private var keyOfID: [[UInt8]] = []
    private var idOfKey: [[UInt8]: Int] = [:]
    /// By number: what a match's score is made of, nil while it is not a match.
    private var members: [Member?] = []
    private var memberCount = 0
    /// The matches, best first (ties in key order), by number.
    private(set) var order: [Int] = []

    /// The primary key of match number `id`.
    func key(_ id: Int) -> [UInt8] { keyOfID[id] }

    private func id(of key: [UInt8]) -> Int {
        if let known = idOfKey[key] { return known }
        let id = keyOfID.count
        keyOfID.append(key)
        idOfKey[key] = id
        members.append(nil)
        return id
    }

    private func setMember(_ id: Int, _ member: Member?) {
        memberCount += (member == nil ? 0 : 1) - (members[id] == nil ? 0 : 1)
        members[id] = member
    }

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
        let (details, keys, kept, plan) = try mapStorageErrors {
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
                let name = index.definition.name
                guard !template.predicates.isEmpty else {
                    let plan = QueryPlan(
                        access: .textSearch(index: name, matches: keys.count),
                        ordering: .relevance(index: name),
                        rechecksPredicate: false)
                    return (details, keys, Set<[UInt8]>?.none, plan)
                }
                // The other conditions, checked as the results check them (only then is the search
                // evaluated a second time).
                let evaluation = try full.evaluate(in: transaction, snapshot: snapshot)
                let kept = Set((0..<evaluation.keys.count).map { Array(evaluation.keys[$0]) })
                return (details, keys, Optional(kept), evaluation.plan)
            }
        }
        statistics = details.statistics
        leafDocuments = details.leafDocuments
        members = Array(repeating: nil, count: keyOfID.count)
        memberCount = 0
        for (index, key) in keys.enumerated() where kept?.contains(key) ?? true {
            setMember(
                id(of: key),
                Member(frequencies: details.frequencies.map { $0[index] }, length: details.lengths[index]))
        }
        self.plan = plan
        order = ranked()
    }

    /// The members in order of their scores at the kept statistics: the last order, its members
    /// rescored, sorted again by insertion (most of it is in order still: O(*m*) plus the places
    /// that changed).
    private func ranked() -> [Int] {
        let scoring = TextSearch.Scoring(statistics: statistics, leafDocuments: leafDocuments)
        var ranked: [(id: Int, score: Double)] = []
        ranked.reserveCapacity(memberCount)
        var placed = [Bool](repeating: false, count: members.count)
        for id in order {
            guard let member = members[id] else { continue }
            ranked.append((id, scoring.score(length: member.length) { member.frequencies[$0] }))
            placed[id] = true
        }
        let kept = ranked.count
        for id in members.indices where !placed[id] {
            guard let member = members[id] else { continue }
            ranked.append((id, scoring.score(length: member.length) { member.frequencies[$0] }))
        }
        let keys = keyOfID
        func precedes(_ a: (id: Int, score: Double), _ b: (id: Int, score: Double)) -> Bool {
            a.score != b.score ? a.score > b.score : keys[a.id].lexicographicallyPrecedes(keys[b.id])
        }
        // Many new members (a first evaluation, a large commit): sorted outright.
        if ranked.count - kept > 32 {
            ranked.sort(by: precedes)
            return ranked.map(\.id)
        }
        // Otherwise by insertion from the last order, unless it turns out far from sorted (then
        // outright: the work stays O(m log m) whatever the commit did).
        var steps = 0
        let budget = 8 * ranked.count + 64
        for index in 1..<max(ranked.count, 1) {
            let item = ranked[index]
            var position = index
            while position > 0 && precedes(item, ranked[position - 1]) {
                ranked[position] = ranked[position - 1]
                position -= 1
                steps += 1
            }
            ranked[position] = item
            if steps > budget {
                ranked.sort(by: precedes)
                break
            }
        }
        return ranked.map(\.id)
    }

    /// Moves to `next`; returns the new order, and whether the search was run again in full (the
    /// change log could not say what changed).
    func advance(to next: ReadSnapshot, observing observedFields: Set<String>?) throws -> (
        modified: Set<Int>, fullyReevaluated: Bool
    ) {
        LockWatch.check(entering: "the predicates of live results of \(Element.self)")
        let changes = try context.changes(
            of: Element.schema.typeName, from: snapshot.transactionID, to: next, in: store)
        let modified = Set(
            changes.keys.filter { $0.value == .update && changes.modifies($0.key, observing: observedFields) }
                .map { id(of: $0.key) })
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
            setMember(id(of: key), new?.member)
        }
        self.statistics = statistics
        order = ranked()
        snapshot = next
        return (modified, false)
    }
}
