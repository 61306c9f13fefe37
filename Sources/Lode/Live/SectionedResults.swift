import Dispatch
import Foundation
import LMDB
import ModelStorage

/// Results split into sections by a key: lazy like ``Results``, evaluated on first read on one
/// committed version. Sections are ordered by their key's encoded order (numbers and strings sort as
/// with `<`, enums with raw values by raw value) and exist only while non-empty; rows keep the
/// results' order within their section.
public struct SectionedResults<Key: Hashable & Encodable & Sendable, Element: Persistable>:
    RandomAccessCollection, Sendable
{
    /// One section: its key and its objects.
    public struct Section: RandomAccessCollection, Identifiable, Sendable {
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

    /// The same sections, not evaluated yet: the first read evaluates them on the last committed
    /// version (see ``Results/reevaluated()``).
    public func reevaluated() -> SectionedResults {
        SectionedResults(results: results.reevaluated(), key: keyFunction)
    }

    /// Live sectioned results that follow this query (see ``LiveSectionedResults``).
    public func live(keyPaths: [PartialKeyPath<Element>]? = nil) throws -> LiveSectionedResults<Key, Element>
    {
        try LiveSectionedResults(self, keyPaths: keyPaths)
    }
}

final class SectionsCache<Key: Hashable & Encodable & Sendable, Element: Persistable>: @unchecked Sendable {
    // @unchecked: `stored` is read and written under `lock` only; sections are Sendable values.
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
