/// How a query is answered: which keys are read, where the order comes from, and whether each
/// object is checked against the predicate. `Results.explain()` returns it, and tests assert it.
public struct QueryPlan: Equatable, Sendable, CustomStringConvertible {
    /// Where candidates come from.
    public enum Access: Equatable, Sendable {
        /// Direct lookups of this many primary keys.
        case primaryKeyLookup(count: Int)
        /// A range of primary keys.
        case primaryKeyRange
        /// Lookups of this many exact values in an index.
        case indexLookup(index: String, count: Int)
        /// A range of an index.
        case indexRange(index: String)
        /// The values of an index that start with a string.
        case indexPrefix(index: String)
        /// Every object of the type.
        case fullScan
        /// The inverse index of the link on `link`: the objects linking to the `targets` linked
        /// objects that match (see ``QueryPlan/linkedQueries``).
        case linkLookup(link: String, targets: Int)
        /// The postings of a full-text index: the objects a text query matches.
        case textSearch(index: String, matches: Int)
    }

    /// Where the order of the results comes from.
    public enum Ordering: Equatable, Sendable {
        /// Primary-key order (the order of the records), forwards or backwards.
        case primaryKey(reversed: Bool)
        /// The order of an index, walked forwards or backwards.
        case index(String, reversed: Bool)
        /// Sorted in memory by the sort descriptors.
        case inMemory
        /// By relevance to a text query (BM25 over the full-text index), best first.
        case relevance(index: String)
    }

    /// Where candidates come from.
    public var access: Access
    /// Where the order comes from.
    public var ordering: Ordering
    /// True when each candidate is decoded and checked against the whole predicate.
    public var rechecksPredicate: Bool
    /// For each link the query filters across (by field): how the linked objects that match were
    /// found (nil for a fixed list of linked objects).
    public var linkedQueries: [String: QueryPlan?] = [:]
    /// The links whose objects the query reads to sort (the linked objects are read once each).
    public var sortedThroughLinks: [String] = []

    /// A plan reading `access`, ordered by `ordering`, that re-checks the predicate when
    /// `rechecksPredicate` is true.
    package init(access: Access, ordering: Ordering, rechecksPredicate: Bool) {
        self.access = access
        self.ordering = ordering
        self.rechecksPredicate = rechecksPredicate
    }

    /// One line, e.g. `index range on "due", ordered by index "due", predicate re-checked`.
    public var description: String {
        let accessText: String
        switch access {
        case .primaryKeyLookup(let count): accessText = "primary key lookup of \(count) key(s)"
        case .primaryKeyRange: accessText = "primary key range"
        case .indexLookup(let index, let count):
            accessText = "index lookup of \(count) value(s) in \"\(index)\""
        case .indexRange(let index): accessText = "index range on \"\(index)\""
        case .indexPrefix(let index): accessText = "index prefix scan on \"\(index)\""
        case .fullScan: accessText = "full scan"
        case .linkLookup(let link, let targets):
            accessText = "link lookup through \"\(link)\" of \(targets) linked object(s)"
        case .textSearch(let index, let matches):
            accessText = "full-text search of index \"\(index)\" (\(matches) match(es))"
        }
        let orderText: String
        switch ordering {
        case .primaryKey(let reversed): orderText = "primary key order" + (reversed ? ", reversed" : "")
        case .index(let name, let reversed):
            orderText = "order of index \"\(name)\"" + (reversed ? ", reversed" : "")
        case .inMemory: orderText = "sorted in memory"
        case .relevance(let index): orderText = "ranked by relevance (BM25) in full-text index \"\(index)\""
        }
        var text =
            accessText + "; " + orderText + (rechecksPredicate ? "; predicate re-checked per object" : "")
        for (link, plan) in linkedQueries.sorted(by: { $0.key < $1.key }) {
            text +=
                "; across \"\(link)\": "
                + (plan.map { "linked objects by \($0.description)" } ?? "given linked objects")
        }
        if !sortedThroughLinks.isEmpty {
            text += "; sorted through " + sortedThroughLinks.map { "\"\($0)\"" }.joined(separator: ", ")
        }
        return text
    }
}
