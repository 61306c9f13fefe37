import Foundation
import LodeCodec
import LodeStore
import LodeText

import struct LMDB.Database

/// A full-text search among a query's conditions (see ``Results/matching(_:in:)-(TextQuery,_)``).
package struct TextFilter: Sendable {
    /// The query, or why its text did not parse (thrown by every read).
    package let query: Result<TextQuery, TextQueryError>
    /// The index searched; nil: the type's only one.
    package let index: String?
}

extension Results {
    /// The results whose full-text index matches `query`, best match first.
    ///
    /// Without `sorted(by:)` the objects come in order of relevance — BM25 over the index (see
    /// <doc:FullTextSearch>), ties in primary-key order; `sorted(by:)` orders them by their fields
    /// instead. `filter`, `limit`, `offset` and sections apply as to any results, and the results
    /// can be observed: a commit that changes the matches delivers their exact change, moves of
    /// re-ranked objects included. A later `matching` replaces this one.
    ///
    /// ```swift
    /// let hits = store.objects(Note.self).matching(try TextQuery("swift OR rust -draft")).limit(20)
    /// ```
    ///
    /// - Parameters:
    ///   - query: what to search for.
    ///   - index: the full-text index's name; nil for the type's only one.
    /// - Complexity: O(1): a new query. Evaluating it reads the postings of the query's terms —
    ///   O(*p*) for *p* postings, not O(objects) — and the primary keys of the objects it keeps.
    public func matching(_ query: TextQuery, in index: String? = nil) -> Results {
        copy { $0.textFilter = TextFilter(query: .success(query), index: index) }
    }

    /// The results whose full-text index matches `query`, written in ``TextQuery``'s syntax. A query
    /// that does not parse makes every read throw ``LodeError/invalidTextQuery(_:)`` (parse it with
    /// ``TextQuery/init(_:)`` first to show the error as the user types).
    ///
    /// - Complexity: O(1), as ``matching(_:in:)-(TextQuery,_)``.
    public func matching(_ query: String, in index: String? = nil) -> Results {
        let parsed: Result<TextQuery, TextQueryError>
        do {
            parsed = .success(try TextQuery(query))
        } catch {
            parsed = .failure(error)
        }
        return copy { $0.textFilter = TextFilter(query: parsed, index: index) }
    }

    /// True when the results come in order of relevance: a full-text search with no other order.
    package var isRankedByRelevance: Bool {
        textFilter != nil && sortDescriptors.isEmpty && linkedSort == nil
    }

    /// The full-text index the search reads, and the search made ready for its tokenizer.
    package func textSearch(_ state: TypeState<Element>) throws -> (
        index: LiveTextIndex<Element>, search: TextSearch
    )? {
        guard let textFilter else { return nil }
        let query: TextQuery
        switch textFilter.query {
        case .success(let parsed): query = parsed
        case .failure(let error): throw LodeError.invalidTextQuery(error)
        }
        let schema = state.schema
        let typeName = schema.typeName
        let name: String
        if let wanted = textFilter.index {
            name = wanted
        } else if schema.textIndexes.count == 1 {
            name = schema.textIndexes[0].name
        } else {
            throw LodeError.textIndexUnavailable(
                type: typeName, index: "",
                reason: schema.textIndexes.isEmpty
                    ? "the type's schema declares no full-text index"
                    : "the type has \(schema.textIndexes.count) full-text indexes: name the one to search")
        }
        guard schema.textIndex(named: name) != nil else {
            throw LodeError.textIndexUnavailable(
                type: typeName, index: name,
                reason: "the type's schema declares no full-text index of that name")
        }
        guard let index = state.textIndex(named: name) else {
            throw LodeError.textIndexUnavailable(
                type: typeName, index: name,
                reason:
                    "the store's index was built with other fields or another tokenizer, or not at all; opening the store for writing rebuilds it"
            )
        }
        return (index, try TextSearch(query, tokenizer: index.definition.tokenizer))
    }

    /// Whether an object matches the search by its own text (what live results check for a changed
    /// object), nil without a search.
    package func textMatcher(_ state: TypeState<Element>) throws -> ((Element) -> Bool)? {
        guard let (index, search) = try textSearch(state) else { return nil }
        let definition = index.definition
        return { object in
            search.matches(
                search.relevantDocument(texts: definition.texts(object), tokenizer: definition.tokenizer))
        }
    }

    /// The candidates of a search: the primary keys of the matching objects and their scores — in
    /// order of relevance when ranked (only the first `keep` and the ones tied with the last of them,
    /// when given), else in primary-key order.
    func textCandidates(
        index: LiveTextIndex<Element>, search: TextSearch, in transaction: Transaction, keep: Int?
    ) throws -> (keys: [[UInt8]], scores: [Double], matches: Int) {
        let hits = try search.hits(in: transaction, postings: index.postings)
        guard isRankedByRelevance else {
            let keys = try TextSearch.primaryKeys(
                of: hits.map(\.document), in: transaction, postings: index.postings)
            let order = keys.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
            return (order.map { keys[$0] }, order.map { hits[$0].score }, hits.count)
        }
        var kept = hits
        if let keep, keep < hits.count {
            // The best `keep` scores and every hit tied with the last of them: ties are decided by
            // primary key, which only those need.
            let threshold = keep == 0 ? Double.infinity : hits.map(\.score).sorted(by: >)[keep - 1]
            kept = hits.filter { $0.score >= threshold }
        }
        let keys = try TextSearch.primaryKeys(
            of: kept.map(\.document), in: transaction, postings: index.postings)
        var order = Array(kept.indices)
        order.sort { a, b in
            if kept[a].score != kept[b].score { return kept[a].score > kept[b].score }
            return keys[a].lexicographicallyPrecedes(keys[b])
        }
        if let keep, order.count > keep { order.removeLast(order.count - keep) }
        return (order.map { keys[$0] }, order.map { kept[$0].score }, hits.count)
    }
}

extension Results {
    /// Where the words of this results' full-text search occur in `object`'s indexed fields: one
    /// highlight per text that holds a match, in the order of the index's fields. The ranges come
    /// from the index's tokenizer, as the search's terms do: `cafe` highlights `Café`.
    ///
    /// - Complexity: the results' evaluation, once; then O(length of the object's indexed text).
    /// - Throws: what ``matching(_:in:)-(TextQuery,_)`` makes a read throw (no full-text search, an
    ///   invalid query, an index that is not available), and ``LodeError/storage(_:)``.
    public func highlights(in object: Element) throws -> [TextHighlight] {
        guard textFilter != nil else {
            throw LodeError.textIndexUnavailable(
                type: Element.schema.typeName, index: "", reason: "the results have no full-text search")
        }
        let (index, search) = try read(at: try evaluation()) { transaction in
            let state = try transaction.typeState(Element.self)
            guard let found = try textSearch(state) else {
                throw LodeError.textIndexUnavailable(
                    type: Element.schema.typeName, index: "", reason: "the results have no full-text search")
            }
            return found
        }
        let definition = index.definition
        var highlights: [TextHighlight] = []
        for (field, texts) in zip(definition.fields, definition.texts(object)) {
            for text in texts {
                let ranges = search.highlightRanges(in: text, tokenizer: definition.tokenizer)
                if !ranges.isEmpty {
                    highlights.append(TextHighlight(field: field, text: text, ranges: ranges))
                }
            }
        }
        return highlights
    }
}
