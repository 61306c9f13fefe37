import Foundation
import LodeCodec
import LodeStore
import Synchronization

import struct LMDB.Database
import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// What evaluating a query produced.
package struct Evaluation<Element> {
    package var plan: QueryPlan
    package var keys: KeyList
    /// The decoded objects, when evaluation had to decode them anyway.
    package var objects: [Element]?
    /// The pinned version, for results read outside a transaction.
    package var snapshot: ReadSnapshot?
    /// The snapshot's place among the store's held versions (released with the evaluation).
    var pin: VersionPin?
    /// Per condition across a link (in the query's order): the keys of the linked objects that
    /// matched.
    package var linkMatches: [Set<[UInt8]>] = []
    /// For a full-text search: each key's relevance score (BM25), in the keys' order.
    package var scores: [Double]?

    /// An evaluation by `plan` of `keys` (and their `objects`, when decoded), read on `snapshot`
    /// (held by `pin`).
    package init(
        plan: QueryPlan, keys: KeyList, objects: [Element]?, snapshot: ReadSnapshot?, pin: VersionPin? = nil
    ) {
        self.plan = plan
        self.keys = keys
        self.objects = objects
        self.snapshot = snapshot
        self.pin = pin
    }
}

/// Evaluates once and remembers the outcome, for every copy of the same results.
///
/// Lock order: `lock` is a leaf. The evaluation (LMDB reads, the app's predicates and `Decodable`
/// initializers) runs with no lock held; the first one finished is kept and every reader gets it (two
/// threads reading the same fresh results at once may both evaluate; one result is kept).
final class EvaluationCache<Element>: @unchecked Sendable {
    // @unchecked: `evaluation` is read and written under `lock` only; an evaluation is immutable.
    private let lock = LodeLock("EvaluationCache")
    private var evaluation: Evaluation<Element>?

    /// The evaluation, if one was made or stored.
    var stored: Evaluation<Element>? { lock.withLock { evaluation } }

    func store(_ evaluation: Evaluation<Element>) {
        lock.withLock { self.evaluation = evaluation }
    }

    /// Keeps `made` unless an evaluation is kept already; returns the kept one and whether it is `made`.
    func keep(_ made: Evaluation<Element>) -> (Evaluation<Element>, Bool) {
        lock.withLock {
            if let evaluation { return (evaluation, false) }
            evaluation = made
            return (made, true)
        }
    }

    func value(_ evaluate: () throws -> Evaluation<Element>) throws -> Evaluation<Element> {
        if let stored { return stored }
        let made = try evaluate()
        return lock.withLock {
            if let evaluation { return evaluation }
            evaluation = made
            return made
        }
    }
}
