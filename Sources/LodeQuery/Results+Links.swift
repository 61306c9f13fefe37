import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// Queries across links: filtering and sorting by the objects links point at, the objects linking
/// to one, and fetching objects with the objects they link to.
extension Results {
    /// The results whose to-one link `link` points at an object that matches `predicate`
    /// (`tasks whose project is not archived`). `#Predicate` cannot follow a link; this is how a query
    /// crosses one.
    ///
    /// The linked objects that match are found once, as a query of their own type planned over its
    /// indexes; when few objects link to them, the link's inverse index gives the candidates, else each
    /// candidate's link is checked against them (``explain()`` says which).
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func filter<Target: Persistable>(
        _ link: KeyPath<Element, Link<Target>?> & Sendable, matches predicate: Predicate<Target>
    ) -> Results {
        copy {
            $0.linkFilters.append(
                .matching(
                    field: fieldName(of: link),
                    targetKeys: { $0[keyPath: link].map { [$0.primaryKey] } ?? [] },
                    Target.self, predicate: predicate))
        }
    }

    /// The results whose to-many link `links` holds at least one object that matches `predicate`
    /// (`tasks with an urgent tag`).
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func filter<Target: Persistable>(
        _ links: KeyPath<Element, [Link<Target>]> & Sendable, anyMatches predicate: Predicate<Target>
    ) -> Results {
        copy {
            $0.linkFilters.append(
                .matching(
                    field: fieldName(of: links), targetKeys: { $0[keyPath: links].map(\.primaryKey) },
                    Target.self, predicate: predicate))
        }
    }

    /// The results whose to-one link `link` points at `target` (the inverse link, as a query: a
    /// project's tasks), answered from the link's inverse index.
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func linking<Target: Persistable>(
        to target: Link<Target>, via link: KeyPath<Element, Link<Target>?> & Sendable
    ) -> Results {
        copy {
            $0.linkFilters.append(
                .linking(
                    field: fieldName(of: link),
                    targetKeys: { $0[keyPath: link].map { [$0.primaryKey] } ?? [] },
                    to: [target.primaryKey], typeName: Target.schema.typeName))
        }
    }

    /// The results whose to-many link `links` holds `target` (a tag's tasks), answered from the
    /// link's inverse index.
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated.
    public func linking<Target: Persistable>(
        to target: Link<Target>, via links: KeyPath<Element, [Link<Target>]> & Sendable
    ) -> Results {
        copy {
            $0.linkFilters.append(
                .linking(
                    field: fieldName(of: links), targetKeys: { $0[keyPath: links].map(\.primaryKey) },
                    to: [target.primaryKey], typeName: Target.schema.typeName))
        }
    }

    /// The results sorted by a value of the object the to-one link `link` points at, then by
    /// `descriptors` (`tasks by project name, then title`). Objects without a linked object come
    /// first in ascending order, last in descending order; ties keep primary-key order.
    ///
    /// - Complexity: O(1): a new query; nothing is read until it is evaluated. Evaluating reads each
    ///   linked object once and sorts in memory.
    public func sorted<Target: Persistable, Value: Comparable & Encodable>(
        through link: KeyPath<Element, Link<Target>?> & Sendable, by value: KeyPath<Target, Value> & Sendable,
        ascending: Bool = true, then descriptors: [SortDescriptor<Element>] = []
    ) -> Results {
        copy {
            $0.linkedSort = .by(link, value: value, ascending: ascending)
            $0.sortDescriptors = descriptors
        }
    }

    // MARK: Eager loading

    /// Every object with the object its to-one link `link` points at (nil without one), read in one
    /// transaction on the results' version: each linked object is read once however many objects
    /// point at it, in key order — no read per object.
    ///
    /// ```swift
    /// for (task, project) in try tasks.fetch(including: \.project) { … }
    /// ```
    ///
    /// - Complexity: the evaluation, O(*n*) decodes for *n* objects, and O(*k* log *m*) reads for the *k*
    ///   distinct linked objects among *m*.
    /// - Throws: what ``fetch()`` throws, and what reading a linked object throws.
    public func fetch<Target: Persistable>(including link: KeyPath<Element, Link<Target>?>) throws -> [(
        object: Element, linked: Target?
    )] {
        let evaluation = try evaluation()
        let objects = try fetch()
        // Each object's link as a slot among the distinct keys: one key read and one hash per object,
        // no array per object.
        var slots = LinkKeySlots()
        var slotOfObject: [Int] = []
        slotOfObject.reserveCapacity(objects.count)
        for object in objects {
            if let key = object[keyPath: link]?.primaryKey {
                slotOfObject.append(slots.slot(of: key))
            } else {
                slotOfObject.append(-1)
            }
        }
        let (positions, linked) = try readLinked(Target.self, keys: slots.keys, at: evaluation)
        let result = ObjectCollector<(object: Element, linked: Target?)>(capacity: objects.count)
        for index in 0..<objects.count {
            let slot = slotOfObject[index]
            let position = slot >= 0 ? positions[slot] : -1
            result.append((objects[index], position >= 0 ? linked[position] : nil))
        }
        return result.take()
    }

    /// The objects of `Target` under `keys` (distinct) read on the evaluation's version in one
    /// transaction, in key order (neighbouring keys share B-tree pages), and where among them each
    /// key's object is (-1 for a key whose object does not exist).
    private func readLinked<Target: Persistable>(
        _ target: Target.Type, keys: [[UInt8]], at evaluation: Evaluation<Element>
    ) throws -> (positions: [Int], linked: [Target]) {
        var positions = [Int](repeating: -1, count: keys.count)
        let order = keys.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        let linked = try read(at: evaluation) { transaction -> [Target] in
            guard let records = try transaction.typeState(Target.self).records else { return [] }
            let found = ObjectCollector<Target>(capacity: keys.count)
            let reader = ObjectReader<Target>()
            for slot in order where keys[slot].count <= IndexKeyLimit.maximum {
                try keys[slot].withUnsafeBytes { bytes in
                    guard let record = try transaction.lmdb.transientValue(forKey: bytes, in: records) else {
                        return
                    }
                    positions[slot] = found.count
                    try reader.read(record, key: bytes, appendingTo: found)
                }
            }
            return found.take()
        }
        return (positions, linked)
    }

    /// Every object with the objects its to-many link `links` points at, in link order (missing ones
    /// left out), read in one transaction as ``fetch(including:)-(KeyPath<Element,Link<Target>?>)``
    /// reads them.
    ///
    /// - Complexity: the evaluation, O(*n*) decodes for *n* objects, and O(*k* log *m*) reads for the *k*
    ///   distinct linked objects among *m*.
    /// - Throws: what ``fetch()`` throws, and what reading a linked object throws.
    public func fetch<Target: Persistable>(including links: KeyPath<Element, [Link<Target>]>) throws -> [(
        object: Element, linked: [Target]
    )] {
        let (objects, positions, linked) = try fetchLinked(Target.self) {
            $0[keyPath: links].map(\.primaryKey)
        }
        let result = ObjectCollector<(object: Element, linked: [Target])>(capacity: objects.count)
        for index in 0..<objects.count {
            let targets = ObjectCollector<Target>(capacity: positions[index].count)
            for position in positions[index] where position >= 0 { targets.append(linked[position]) }
            result.append((objects[index], targets.take()))
        }
        return result.take()
    }

    /// The objects, where among the linked objects each one's links point (read once each: a key
    /// path is not free; -1 for a linked object that does not exist), and the linked objects, read on
    /// the results' version in one transaction. (Positions, not a dictionary of objects: the generic
    /// code here is unspecialized, and each lookup of an optional object would look up its metadata.)
    private func fetchLinked<Target: Persistable>(
        _ target: Target.Type, _ targetKeys: (Element) -> [[UInt8]]
    ) throws -> ([Element], [[Int]], [Target]) {
        let evaluation = try evaluation()
        let objects = try fetch()
        var slots = LinkKeySlots()
        var slotsOfObjects: [[Int]] = []
        slotsOfObjects.reserveCapacity(objects.count)
        for object in objects { slotsOfObjects.append(targetKeys(object).map { slots.slot(of: $0) }) }
        let (positions, linked) = try readLinked(Target.self, keys: slots.keys, at: evaluation)
        return (objects, slotsOfObjects.map { $0.map { positions[$0] } }, linked)
    }

    // MARK: Planning

    /// Replaces the access path by the inverse index of the declared link whose matching linked
    /// objects have the fewest linking objects, when that reads far fewer objects than the path
    /// planned from the predicates.
    func chooseLinkAccess(
        _ execution: inout ExecutionPlan, state: TypeState<Element>, matches: [Set<[UInt8]>],
        records: Database,
        in transaction: Transaction
    ) throws {
        if case .primaryKeyLookup = execution.plan.access { return }
        let total = try transaction.lmdb.count(in: records)
        // With an index already narrowing the query, only a small link lookup is worth more.
        let limit: Int
        if case .index = execution.source { limit = Swift.max(64, total / 16) } else { limit = total / 2 }
        var best: (filter: LinkFilter<Element>, targets: Int, keys: Set<[UInt8]>)?
        for (filter, matching) in zip(linkFilters, matches) {
            guard let link = state.link(named: filter.field) else { continue }
            var keys = Set<[UInt8]>()
            for target in matching where target.count <= IndexKeyLimit.maximum {
                for key in try transaction.lmdb.values(forKey: target, in: link.database) { keys.insert(key) }
                if keys.count > limit { break }
            }
            if keys.count <= limit, best == nil || keys.count < best!.keys.count {
                best = (filter, matching.count, keys)
            }
        }
        guard let best else { return }
        execution.source = .primaryKeys(best.keys.sorted { $0.lexicographicallyPrecedes($1) })
        execution.covered = false
        execution.plan.access = .linkLookup(link: best.filter.field, targets: best.targets)
        execution.plan.rechecksPredicate = true
        if case .index = execution.plan.ordering {
            execution.plan.ordering = sortDescriptors.isEmpty ? .primaryKey(reversed: false) : .inMemory
        }
    }
}

/// The distinct keys links point at, each with its slot (its position among them, in the order
/// first seen).
private struct LinkKeySlots {
    private var slots: [ByteKey: Int] = [:]
    /// The distinct keys, by slot.
    private(set) var keys: [[UInt8]] = []

    /// The slot of `key`, given to it if it has none yet.
    mutating func slot(of key: [UInt8]) -> Int {
        let next = keys.count
        let slot = slots[ByteKey(key), default: next]
        if slot == next {
            slots[ByteKey(key)] = next
            keys.append(key)
        }
        return slot
    }
}
