import Dispatch
import Foundation
import LodeCodec
import LodeQuery
import LodeStore
import ModelStorage

import enum LMDB.LockWatch

/// Results split into sections by a key: lazy like ``Results``, evaluated on first read on one
/// committed version. Sections are ordered by their key's encoded order (numbers and strings sort as
/// with `<`, enums with raw values by raw value) and exist only while non-empty; rows keep the
/// results' order within their section.
///
/// Reading the sections throws, as reading ``Results`` does: a record that no longer decodes or a
/// storage failure reaches the caller. A section knows its key and its row count once the sections
/// are read; its rows are a ``Results`` of their own, decoded when read, so reading them throws too:
/// `try section.objects.fetch()`, `try section[0]`.
public struct SectionedResults<Key: Hashable & Encodable & Sendable, Element: Persistable>: Sendable {
    /// One section: its key and its objects. Its size is known once the sections are read; reading
    /// an object decodes it and throws as reading ``Results`` does.
    public struct Section: Identifiable, Sendable {
        /// The section key.
        public let key: Key
        /// The section's objects, in order.
        public let objects: Results<Element>

        /// The key.
        public var id: Key { key }
        /// The number of objects.
        public var count: Int { objects.evaluatedKeyCount }
        /// True when the section has no object (sections exist only while non-empty).
        public var isEmpty: Bool { count == 0 }
        /// The object at a position.
        /// - Throws: what reading ``Results`` throws.
        public subscript(position: Int) -> Element {
            get throws { try objects.object(at: position) }
        }
    }

    let results: Results<Element>
    let keyFunction: SectionKeying<Key, Element>
    let cache: SectionsCache<Key, Element>

    init(results: Results<Element>, key: SectionKeying<Key, Element>, sections: [Section]? = nil) {
        self.results = results
        self.keyFunction = key
        self.cache = SectionsCache(sections)
    }

    /// The sections, evaluated once (throwing form).
    ///
    /// - Complexity: the first read evaluates the query and runs the section key once per object: O(*n*)
    ///   section keys and O(*n* log *s*) to group *n* objects into *s* sections; every later read reuses it.
    /// - Throws: what evaluating the results throws (``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes), and ``LodeError/appCodeFailed(_:)`` when the section key throws.
    public func fetchSections() throws -> [Section] {
        try cache.value {
            LockWatch.check(entering: "the section key of sectioned results of \(Element.self)")
            let evaluation = try results.evaluation()
            let objects = try results.fetch()
            var groups: [[UInt8]: (key: Key, rows: [Int])] = [:]
            // Keys across a link read the linked objects on the results' version, each once.
            let keys: [Key]
            if keyFunction.dependency != nil {
                keys = try results.read(at: evaluation) { transaction in
                    let resolver = LinkResolver(transaction)
                    return try objects.map { try keyFunction.key(of: $0, resolver: resolver) }
                }
            } else {
                keys = try objects.map { try keyFunction.key(of: $0, resolver: nil) }
            }
            for (index, key) in keys.enumerated() {
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
    ///
    /// - Complexity: as ``fetchSections()``.
    /// - Throws: as ``fetchSections()``.
    public var sections: [Section] {
        get throws { try fetchSections() }
    }

    /// The section keys, in order.
    ///
    /// - Complexity: as ``fetchSections()``, then O(*s*).
    /// - Throws: as ``fetchSections()``.
    public var allKeys: [Key] {
        get throws { try fetchSections().map(\.key) }
    }

    /// The number of sections.
    ///
    /// - Complexity: as ``fetchSections()``, then O(1).
    /// - Throws: as ``fetchSections()``.
    public var count: Int {
        get throws { try fetchSections().count }
    }

    /// The section at a position.
    /// - Throws: ``LodeError/positionOutOfRange(type:position:count:)`` outside the sections, and what
    ///   reading them throws.
    public subscript(position: Int) -> Section {
        get throws {
            let sections = try fetchSections()
            guard sections.indices.contains(position) else {
                throw LodeError.positionOutOfRange(
                    type: Element.schema.typeName, position: position, count: sections.count)
            }
            return sections[position]
        }
    }

    /// The same sections, not evaluated yet: the first read evaluates them on the last committed
    /// version (see ``Results/reevaluated()``).
    public func reevaluated() -> SectionedResults {
        SectionedResults(results: results.reevaluated(), key: keyFunction)
    }

    /// Live sectioned results that follow this query (see ``LiveSectionedResults``).
    ///
    /// - Throws: as ``LiveSectionedResults/init(_:keyPaths:linkedKeyPaths:)``.
    public func live(
        keyPaths: [PartialKeyPath<Element>]? = nil, linkedKeyPaths: [LinkedKeyPath<Element>] = []
    ) throws -> LiveSectionedResults<Key, Element> {
        try LiveSectionedResults(self, keyPaths: keyPaths, linkedKeyPaths: linkedKeyPaths)
    }
}

/// How a section key is found: from the object alone, or from the object a link points at.
enum SectionKeying<Key, Element>: @unchecked Sendable {
    // @unchecked: immutable closures over key paths, which are not marked Sendable.
    case value(@Sendable (Element) -> Key)
    /// `key` of an object, `fromTarget` of the linked object's primary key.
    case linked(
        field: String, target: String, key: (Element, LinkResolver) throws -> Key,
        fromTarget: ([UInt8], LinkResolver) throws -> Key)

    /// The section key of `object` (a linked one read through `resolver`, which it then needs).
    func key(of object: Element, resolver: LinkResolver?) throws -> Key {
        switch self {
        case .value(let key): return key(object)
        case .linked(_, _, let key, _):
            guard let resolver else { preconditionFailure("a section key across a link needs a resolver") }
            return try key(object, resolver)
        }
    }

    /// The link the key reads, if any.
    var dependency: (field: String, target: String)? {
        if case .linked(let field, let target, _, _) = self { return (field, target) }
        return nil
    }

    /// For a key across a link: the key from the linked object's primary key.
    var targetKey: (([UInt8], LinkResolver) throws -> Key)? {
        if case .linked(_, _, _, let fromTarget) = self { return fromTarget }
        return nil
    }
}

/// The sections of sectioned results, made once (see ``EvaluationCache``: made with no lock held,
/// the first one finished kept). Lock order: `lock` is a leaf.
final class SectionsCache<Key: Hashable & Encodable & Sendable, Element: Persistable>: @unchecked Sendable {
    // @unchecked: `stored` is read and written under `lock` only; sections are Sendable values.
    private let lock = LodeLock("SectionsCache")
    private var stored: [SectionedResults<Key, Element>.Section]?

    init(_ sections: [SectionedResults<Key, Element>.Section]?) { stored = sections }

    func value(
        _ make: () throws -> [SectionedResults<Key, Element>.Section]
    ) throws -> [SectionedResults<Key, Element>.Section] {
        if let sections = lock.withLock({ stored }) { return sections }
        let sections = try make()
        return lock.withLock {
            if let stored { return stored }
            stored = sections
            return sections
        }
    }
}

extension Results {
    /// The results split into sections by a property (see ``SectionedResults``).
    public func sectioned<Key: Hashable & Encodable & Sendable>(
        by keyPath: any KeyPath<Element, Key> & Sendable
    ) -> SectionedResults<Key, Element> {
        SectionedResults(results: self, key: .value({ $0[keyPath: keyPath] }))
    }

    /// The results split into sections by a computed key.
    public func sectioned<Key: Hashable & Encodable & Sendable>(
        by key: @escaping @Sendable (Element) -> Key
    ) -> SectionedResults<Key, Element> {
        SectionedResults(results: self, key: .value(key))
    }

    /// The results split into sections by a value of the object the to-one link `link` points at
    /// (`tasks by project name`); objects without a linked object are in the `nil` section, first.
    /// Live, the sections follow the linked objects: rename a project and its section is renamed
    /// (and moves), its rows with it.
    ///
    /// - Complexity: O(1): nothing is read until the sections are; reading them reads each linked
    ///   object once.
    public func sectioned<Target: Persistable, Key: Hashable & Encodable & Sendable>(
        through link: KeyPath<Element, Link<Target>?> & Sendable, by key: KeyPath<Target, Key> & Sendable
    ) -> SectionedResults<Key?, Element> {
        SectionedResults(
            results: self,
            key: .linked(
                field: fieldName(of: link), target: Target.schema.typeName,
                key: { object, resolver in
                    guard let target = object[keyPath: link] else { return nil }
                    return try resolver.object(Target.self, key: target.primaryKey)?[keyPath: key]
                },
                fromTarget: { target, resolver in try resolver.object(Target.self, key: target)?[keyPath: key]
                }))
    }
}
