import LodeStore
import LodeText

import struct LMDB.Database

/// One object a full-text search of a stored type found, without the app's types.
public struct TextMatch: Sendable, Equatable {
    /// The object's record.
    public var record: StoredRecord
    /// Its relevance (BM25; higher is better).
    public var score: Double
}

extension Transaction {
    /// The tokenizers a tool can search with, by identifier: Lode's own. An index built by an app's
    /// tokenizer can be searched only by the app.
    public static let knownTokenizers: [String: any TextTokenizer] = [
        UnicodeTokenizer().identifier: UnicodeTokenizer()
    ]

    /// Searches the full-text index `index` of the stored type `type` (its only one when nil) for
    /// `query`, without the app's types: the matches, best first (ties in primary-key order), at most
    /// `limit`.
    ///
    /// - Complexity: O(*p*) for the *p* postings of the query's terms, and a record read per match kept.
    /// - Throws: `LodeError.typeNotFound`; `LodeError.textIndexUnavailable`
    ///   when the type has no such index or it was built by a tokenizer of the app's;
    ///   `LodeError.invalidTextQuery`; `LodeError.textIndexDamaged`.
    public func search(
        _ query: TextQuery, in type: String, index: String? = nil, limit: Int = .max
    ) throws -> [TextMatch] {
        let stored = try storedType(named: type)
        let chosen: StoredTextIndex
        if let index {
            guard let found = stored.textIndexes.first(where: { $0.name == index }) else {
                throw LodeError.textIndexUnavailable(
                    type: type, index: index, reason: "the type has no full-text index of that name")
            }
            chosen = found
        } else {
            guard stored.textIndexes.count == 1 else {
                throw LodeError.textIndexUnavailable(
                    type: type, index: "",
                    reason: stored.textIndexes.isEmpty
                        ? "the type has no full-text index"
                        : "the type has \(stored.textIndexes.count) full-text indexes (\(stored.textIndexes.map(\.name).joined(separator: ", "))): name one"
                )
            }
            chosen = stored.textIndexes[0]
        }
        guard let tokenizer = Self.knownTokenizers[chosen.tokenizer] else {
            throw LodeError.textIndexUnavailable(
                type: type, index: chosen.name,
                reason:
                    "it was built by tokenizer \"\(chosen.tokenizer)\", which only the app that declared it has"
            )
        }
        let postings = try database(
            named: TextIndexLayout.postingsDatabaseName(type: type, index: chosen.name), kind: .plain)
        let hits = try TextSearch(query, tokenizer: tokenizer).hits(in: self, postings: postings)
        let keys = try TextSearch.primaryKeys(of: hits.map(\.document), in: self, postings: postings)
        var order = Array(hits.indices)
        order.sort { a, b in
            hits[a].score != hits[b].score
                ? hits[a].score > hits[b].score : keys[a].lexicographicallyPrecedes(keys[b])
        }
        var matches: [TextMatch] = []
        for index in order.prefix(limit) {
            guard let record = try storedRecord(of: type, key: keys[index]) else {
                throw LodeError.textIndexDamaged(
                    type: type, index: chosen.name,
                    reason:
                        "a document is \(type) \(KeyDescription.describe(keys[index])), which does not exist")
            }
            matches.append(TextMatch(record: record, score: hits[index].score))
        }
        return matches
    }
}
