import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// A ``TextQuery`` made ready for one index: its words split by the index's tokenizer. Searches the
/// index (postings, ranked by BM25) or one document's terms (what live results and tests check).
package struct TextSearch: Sendable {
    /// A part of a query, its words as terms.
    package indirect enum Matcher: Sendable, Equatable {
        case term(String)
        case prefix(String)
        /// Terms at consecutive positions; a part marked `prefix` matches every term it begins.
        case phrase([(term: String, prefix: Bool)])
        case all(required: [Matcher], excluded: [Matcher])
        case any([Matcher])

        package static func == (lhs: Matcher, rhs: Matcher) -> Bool {
            switch (lhs, rhs) {
            case (.term(let a), .term(let b)), (.prefix(let a), .prefix(let b)): return a == b
            case (.phrase(let a), .phrase(let b)):
                return a.count == b.count
                    && zip(a, b).allSatisfy { $0.term == $1.term && $0.prefix == $1.prefix }
            case (.all(let a, let x), .all(let b, let y)): return a == b && x == y
            case (.any(let a), .any(let b)): return a == b
            default: return false
            }
        }
    }

    package let query: TextQuery
    package let matcher: Matcher

    /// BM25's parameters: term-frequency saturation and length normalization.
    package static let k1 = 1.2
    package static let b = 0.75

    /// `query` with its words split by `tokenizer`.
    /// - Throws: ``LodeError/invalidTextQuery(_:)`` when no part of the query holds a word the
    ///   tokenizer keeps.
    package init(_ query: TextQuery, tokenizer: any TextTokenizer) throws {
        self.query = query
        guard let matcher = Self.compile(query.expression, tokenizer) else {
            throw LodeError.invalidTextQuery(
                TextQueryError(
                    query: query.description, position: 0,
                    reason: "the query holds no word the index's tokenizer (\(tokenizer.identifier)) keeps"))
        }
        self.matcher = matcher
    }

    private static func compile(_ expression: TextQuery.Expression, _ tokenizer: any TextTokenizer)
        -> Matcher?
    {
        func words(_ text: String, phrase: Bool, prefix: Bool) -> Matcher? {
            let tokens = tokenizer.queryTokens(in: text).filter {
                !$0.term.isEmpty && !$0.term.utf8.contains(0)
            }
            guard !tokens.isEmpty else { return nil }
            var parts = tokens.map { (term: TextDocument.cut($0.term), prefix: $0.matchesPrefix) }
            if prefix { parts[parts.count - 1].prefix = true }
            if parts.count == 1 { return parts[0].prefix ? .prefix(parts[0].term) : .term(parts[0].term) }
            return .phrase(parts)
        }
        switch expression {
        case .word(let text): return words(text, phrase: false, prefix: false)
        case .phrase(let text): return words(text, phrase: true, prefix: false)
        case .prefix(let text): return words(text, phrase: false, prefix: true)
        case .all(let parts):
            var required: [Matcher] = []
            var excluded: [Matcher] = []
            for part in parts {
                if case .not(let inner) = part {
                    if let compiled = compile(inner, tokenizer) { excluded.append(compiled) }
                } else if let compiled = compile(part, tokenizer) {
                    required.append(compiled)
                }
            }
            guard !required.isEmpty else { return nil }
            return required.count == 1 && excluded.isEmpty
                ? required[0] : .all(required: required, excluded: excluded)
        case .any(let parts):
            let alternatives = parts.compactMap { compile($0, tokenizer) }
            guard !alternatives.isEmpty else { return nil }
            return alternatives.count == 1 ? alternatives[0] : .any(alternatives)
        case .not:
            return nil
        }
    }

    // MARK: One document

    /// Whether the document whose terms are `document` matches.
    package func matches(_ document: TextDocument) -> Bool { Self.matches(matcher, document) }

    private static func matches(_ matcher: Matcher, _ document: TextDocument) -> Bool {
        switch matcher {
        case .term(let term): return document.terms[term] != nil
        case .prefix(let prefix): return document.terms.keys.contains { $0.utf8.starts(with: prefix.utf8) }
        case .phrase(let parts): return phraseCount(parts, document) > 0
        case .all(let required, let excluded):
            return required.allSatisfy { matches($0, document) }
                && !excluded.contains { matches($0, document) }
        case .any(let alternatives): return alternatives.contains { matches($0, document) }
        }
    }

    /// The positions of `part` in `document` (every term it begins, for a prefix), ascending.
    private static func positions(_ part: (term: String, prefix: Bool), _ document: TextDocument) -> [Int32] {
        guard part.prefix else { return document.terms[part.term] ?? [] }
        var found: [Int32] = []
        for (term, positions) in document.terms where term.utf8.starts(with: part.term.utf8) {
            found.append(contentsOf: positions)
        }
        return found.sorted()
    }

    /// How many times the phrase occurs in `document`.
    static func phraseCount(_ parts: [(term: String, prefix: Bool)], _ document: TextDocument) -> Int {
        let lists = parts.map { positions($0, document) }
        return occurrences(lists.map { $0[...] })
    }

    /// How many positions *p* of the first list have *p* + *i* in list *i*.
    static func occurrences(_ lists: [ArraySlice<Int32>]) -> Int {
        guard let first = lists.first else { return 0 }
        var count = 0
        var cursors = lists.map(\.startIndex)
        outer: for start in first {
            for part in 1..<lists.count {
                let wanted = start + Int32(part)
                let list = lists[part]
                var cursor = cursors[part]
                while cursor < list.endIndex && list[cursor] < wanted { cursor += 1 }
                cursors[part] = cursor
                if cursor == list.endIndex { break outer }
                if list[cursor] != wanted { continue outer }
            }
            count += 1
        }
        return count
    }

    // MARK: The index

    /// One matching document of a search.
    package struct Hit {
        package var document: Int
        package var score: Double
    }

    /// The documents of the index (`postings`) that match, in document order, each with its BM25
    /// score (higher is better).
    /// - Throws: ``LodeError/textIndexDamaged(type:index:reason:)`` when the index does not read,
    ///   ``LodeError/storage(_:)``.
    package func hits(in transaction: Transaction, postings: Database) throws -> [Hit] {
        let details = try details(in: transaction, postings: postings)
        let scoring = Scoring(statistics: details.statistics, leafDocuments: details.leafDocuments)
        var scores = [Double](repeating: 0, count: details.documents.count)
        for index in 0..<details.documents.count {
            scores[index] = scoring.score(length: details.lengths[index]) { details.frequencies[$0][index] }
        }
        return (0..<details.documents.count).map { Hit(document: details.documents[$0], score: scores[$0]) }
    }

    /// What a search found, before scoring.
    package struct Details {
        package var statistics: TextIndexStatistics
        /// Per leaf that scores (see ``leafFrequencies(_:)``): the documents that hold it.
        package var leafDocuments: [Int]
        /// The matching documents, ascending.
        package var documents: [Int]
        /// Per leaf, per matching document: how often the leaf occurs in it.
        package var frequencies: [[Int32]]
        /// Per matching document: its length in tokens.
        package var lengths: [UInt32]
    }

    /// The matching documents of the index with what their scores are made of.
    /// - Throws: as ``hits(in:postings:)``.
    package func details(in transaction: Transaction, postings: Database) throws -> Details {
        try transaction.flushDeferredIndexWrites()
        var reader = IndexReader(transaction: transaction, postings: postings)
        let statistics = try reader.statistics()
        var leaves: [PostingList] = []
        let documents = try reader.evaluate(matcher, leaves: &leaves)
        let lengths = documents.isEmpty ? [] : try reader.lengths(of: documents)
        var frequencies: [[Int32]] = []
        for leaf in leaves {
            var column = [Int32](repeating: 0, count: documents.count)
            var index = 0
            for position in 0..<leaf.count {
                let document = leaf.documents[position]
                while index < documents.count && documents[index] < document { index += 1 }
                guard index < documents.count else { break }
                if documents[index] == document { column[index] = leaf.frequencies[position] }
            }
            frequencies.append(column)
        }
        return Details(
            statistics: statistics, leafDocuments: leaves.map(\.count), documents: documents,
            frequencies: frequencies, lengths: lengths)
    }

    /// BM25 over a collection: each leaf's weight (IDF) from how many documents hold it, and the
    /// average length. The same arithmetic, in the same order, wherever a score is computed (a
    /// search, a live search that follows commits), so equal inputs give equal scores.
    package struct Scoring {
        let idfs: [Double]
        let average: Double

        package init(statistics: TextIndexStatistics, leafDocuments: [Int]) {
            let total = Double(max(statistics.documents, 1))
            average = statistics.documents > 0 ? Double(statistics.tokens) / total : 1
            idfs = leafDocuments.map { held in
                held > 0 ? log(1 + (total - Double(held) + 0.5) / (Double(held) + 0.5)) : 0
            }
        }

        /// The score of a document of `length` tokens whose leaf *l* occurs `frequency(l)` times.
        package func score(length: UInt32, frequency: (Int) -> Int32) -> Double {
            var score = 0.0
            let norm = TextSearch.k1 * (1 - TextSearch.b + TextSearch.b * Double(length) / max(average, 1e-9))
            for leaf in 0..<idfs.count {
                let count = frequency(leaf)
                guard count > 0 else { continue }
                let value = Double(count)
                score += idfs[leaf] * value * (TextSearch.k1 + 1) / (value + norm)
            }
            return score
        }
    }

    /// Where the query's words, prefixes and phrases that are not excluded occur in `text`, as
    /// `tokenizer` splits it: ascending, overlapping ones joined.
    package func highlightRanges(in text: String, tokenizer: any TextTokenizer) -> [Range<String.Index>] {
        let tokens = tokenizer.tokens(in: text)
        var phrases: [[(term: String, prefix: Bool)]] = []
        func collect(_ matcher: Matcher) {
            switch matcher {
            case .term(let term): phrases.append([(term, false)])
            case .prefix(let prefix): phrases.append([(prefix, true)])
            case .phrase(let parts): phrases.append(parts)
            case .all(let required, _): for part in required { collect(part) }
            case .any(let alternatives): for part in alternatives { collect(part) }
            }
        }
        collect(matcher)
        var ranges: [Range<String.Index>] = []
        for phrase in phrases {
            guard !phrase.isEmpty, tokens.count >= phrase.count else { continue }
            for start in 0...(tokens.count - phrase.count) {
                let matched = phrase.indices.allSatisfy { offset in
                    let term = TextDocument.cut(tokens[start + offset].term)
                    return phrase[offset].prefix
                        ? term.utf8.starts(with: phrase[offset].term.utf8) : term == phrase[offset].term
                }
                if matched {
                    ranges.append(
                        tokens[start].range.lowerBound..<tokens[start + phrase.count - 1].range.upperBound)
                }
            }
        }
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var joined: [Range<String.Index>] = []
        for range in ranges {
            if let last = joined.last, range.lowerBound <= last.upperBound {
                joined[joined.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                joined.append(range)
            }
        }
        return joined
    }

    /// The words of the query as UTF-8: each with whether it matches the terms it begins.
    private var queryParts: [(bytes: [UInt8], prefix: Bool)] {
        var parts: [(bytes: [UInt8], prefix: Bool)] = []
        func collect(_ matcher: Matcher) {
            switch matcher {
            case .term(let term): parts.append((Array(term.utf8), false))
            case .prefix(let prefix): parts.append((Array(prefix.utf8), true))
            case .phrase(let items): for item in items { parts.append((Array(item.term.utf8), item.prefix)) }
            case .all(let required, let excluded): for part in required + excluded { collect(part) }
            case .any(let alternatives): for part in alternatives { collect(part) }
            }
        }
        collect(matcher)
        return parts
    }

    /// The document of `texts` as far as this query can tell: every token counted in its length, and
    /// only the terms a word of the query matches kept (``matches(_:)`` and ``leafFrequencies(_:)``
    /// give what they give for the whole document), without a `String` for the other words.
    package func relevantDocument(texts: [[String]], tokenizer: any TextTokenizer) -> TextDocument {
        let parts = queryParts
        var terms: [String: [Int32]] = [:]
        var position: Int32 = 0
        var length = 0
        func note(_ term: UnsafeBufferPointer<UInt8>) {
            for part in parts
            where part.prefix ? term.starts(with: part.bytes) : term.elementsEqual(part.bytes) {
                terms[String(decoding: term, as: UTF8.self), default: []].append(position)
                break
            }
        }
        let unicode = tokenizer as? UnicodeTokenizer
        for field in texts {
            for text in field {
                if let unicode {
                    unicode.forEachTerm(in: text) { term in
                        guard position < Int32.max - 1 else { return }
                        note(term)
                        position += 1
                        length += 1
                    }
                } else {
                    for token in tokenizer.tokens(in: text)
                    where !token.term.isEmpty && !token.term.utf8.contains(0) {
                        guard position < Int32.max - 1 else { break }
                        var term = TextDocument.cut(token.term)
                        term.withUTF8 { note($0) }
                        position += 1
                        length += 1
                    }
                }
                if position < Int32.max - 1 { position += 1 }
            }
        }
        return TextDocument(terms: terms, length: length)
    }

    /// Per leaf that scores — the words, phrases and prefixes of the query not under an exclusion,
    /// in the order the search reads them — how often it occurs in `document`.
    package func leafFrequencies(_ document: TextDocument) -> [Int32] {
        var counts: [Int32] = []
        Self.collect(matcher, document, into: &counts)
        return counts
    }

    private static func collect(_ matcher: Matcher, _ document: TextDocument, into counts: inout [Int32]) {
        switch matcher {
        case .term(let term): counts.append(Int32(document.terms[term]?.count ?? 0))
        case .prefix(let prefix): counts.append(Int32(positions((prefix, true), document).count))
        case .phrase(let parts): counts.append(Int32(phraseCount(parts, document)))
        case .all(let required, _): for part in required { collect(part, document, into: &counts) }
        case .any(let alternatives): for part in alternatives { collect(part, document, into: &counts) }
        }
    }

    /// The primary key of each of `documents` of the index, in the same order.
    package static func primaryKeys(
        of documents: [Int], in transaction: Transaction, postings: Database
    ) throws -> [[UInt8]] {
        let cursor = try transaction.lmdb.cursor(in: postings)
        defer { cursor.close() }
        return try documents.map { document in
            guard let key = try cursor.withValue(at: TextIndexLayout.documentKey(document), { Array($0) })
            else {
                throw transaction.textIndexDamaged(postings, "document \(document) has no primary key")
            }
            return key
        }
    }
}

/// Reads what a search needs of one full-text index.
private struct IndexReader {
    let transaction: Transaction
    let postings: Database

    func statistics() throws -> TextIndexStatistics { try transaction.textIndexStatistics(postings) }

    /// The documents that match `matcher`, ascending; `leaves` gets the postings of every part that
    /// scores (not excluded ones).
    mutating func evaluate(_ matcher: TextSearch.Matcher, leaves: inout [PostingList]) throws -> [Int] {
        switch matcher {
        case .term(let term):
            let list = try read([term], withPositions: false)
            leaves.append(list)
            return list.documents
        case .prefix(let prefix):
            let list = try read(try terms(beginning: prefix), withPositions: false)
            leaves.append(list)
            return list.documents
        case .phrase(let parts):
            var lists: [PostingList] = []
            for part in parts {
                let terms = part.prefix ? try terms(beginning: part.term) : [part.term]
                lists.append(try read(terms, withPositions: true))
            }
            let list = phrase(lists)
            leaves.append(list)
            return list.documents
        case .all(let required, let excluded):
            var sets: [[Int]] = []
            for part in required { sets.append(try evaluate(part, leaves: &leaves)) }
            sets.sort { $0.count < $1.count }
            var result = sets[0]
            for other in sets.dropFirst() { result = intersect(result, other) }
            for part in excluded {
                var ignored: [PostingList] = []
                result = subtract(result, try evaluate(part, leaves: &ignored))
            }
            return result
        case .any(let alternatives):
            var result: [Int] = []
            for part in alternatives { result = union(result, try evaluate(part, leaves: &leaves)) }
            return result
        }
    }

    /// The postings of `terms`, merged.
    func read(_ terms: [String], withPositions: Bool) throws -> PostingList {
        var lists: [PostingList] = []
        let cursor = try transaction.lmdb.cursor(in: postings)
        defer { cursor.close() }
        for term in terms {
            let prefix = TextIndexLayout.termPrefix(term.utf8)
            var list = PostingList(withPositions: withPositions)
            var entry = try cursor.seek(atLeast: prefix).map { _ in try cursor.entryInPlace(.current) } ?? nil
            while let (key, value) = entry, key.count == prefix.count + 8,
                prefix.withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, prefix.count) == 0 })
            {
                let base = TextIndexLayout.bigEndianSuffix(key) ?? 0
                do {
                    try list.append(block: value, base: base)
                } catch {
                    throw transaction.textIndexDamaged(
                        postings, "the postings of term \"\(term)\" do not read: \(error.reason)")
                }
                entry = try cursor.entryInPlace(.next)
            }
            lists.append(list)
        }
        if lists.isEmpty { return PostingList(withPositions: withPositions) }
        return PostingList.union(lists, withPositions: withPositions)
    }

    /// The terms of the index that begin with `prefix`, in order.
    func terms(beginning prefix: String) throws -> [String] {
        var start: [UInt8] = [TextIndexLayout.postingsTag]
        start.append(contentsOf: prefix.utf8)
        let cursor = try transaction.lmdb.cursor(in: postings)
        defer { cursor.close() }
        var found: [String] = []
        var entry = try cursor.seek(atLeast: start).map { _ in try cursor.entryInPlace(.current) } ?? nil
        while let (key, _) = entry, key.count >= start.count + 9,
            start.withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, start.count) == 0 })
        {
            let termEnd = key.count - 9
            let term = String(decoding: UnsafeRawBufferPointer(rebasing: key[1..<termEnd]), as: UTF8.self)
            if found.last != term { found.append(term) }
            // The next term: past every block of this one.
            var next: [UInt8] = [TextIndexLayout.postingsTag]
            next.append(contentsOf: key[1..<termEnd])
            next.append(1)
            entry = try cursor.seek(atLeast: next).map { _ in try cursor.entryInPlace(.current) } ?? nil
        }
        return found
    }

    /// The documents where the parts occur one after another, with the phrase's occurrences as
    /// frequency.
    func phrase(_ lists: [PostingList]) -> PostingList {
        var result = PostingList(withPositions: false)
        guard let first = lists.first else { return result }
        var cursors = [Int](repeating: 0, count: lists.count)
        outer: for index in 0..<first.count {
            let document = first.documents[index]
            var slices = [first.positions(at: index)]
            for part in 1..<lists.count {
                let list = lists[part]
                while cursors[part] < list.count && list.documents[cursors[part]] < document {
                    cursors[part] += 1
                }
                guard cursors[part] < list.count else { break outer }
                guard list.documents[cursors[part]] == document else { continue outer }
                slices.append(list.positions(at: cursors[part]))
            }
            let count = TextSearch.occurrences(slices)
            if count > 0 {
                result.documents.append(document)
                result.frequencies.append(Int32(clamping: count))
            }
        }
        return result
    }

    /// The length of each of `documents` (ascending), from the chunks that hold them.
    func lengths(of documents: [Int]) throws -> [UInt32] {
        var lengths: [UInt32] = []
        lengths.reserveCapacity(documents.count)
        let cursor = try transaction.lmdb.cursor(in: postings)
        defer { cursor.close() }
        var chunk = -1
        var words: UnsafeRawBufferPointer?
        for document in documents {
            let wanted = document / TextIndexLayout.lengthsPerChunk
            if wanted != chunk {
                chunk = wanted
                words = try cursor.withValue(at: TextIndexLayout.lengthsKey(chunk: chunk)) { $0 }
                if let bytes = words, bytes.count != TextIndexLayout.lengthsPerChunk * 4 {
                    throw transaction.textIndexDamaged(
                        postings, "the lengths of documents \(chunk * 256)… do not read")
                }
            }
            let slot = document % TextIndexLayout.lengthsPerChunk
            lengths.append(
                words.map {
                    UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: slot * 4, as: UInt32.self))
                } ?? 0)
        }
        return lengths
    }
}

private func intersect(_ a: [Int], _ b: [Int]) -> [Int] {
    var result: [Int] = []
    var i = 0
    var j = 0
    while i < a.count && j < b.count {
        if a[i] < b[j] {
            i += 1
        } else if a[i] > b[j] {
            j += 1
        } else {
            result.append(a[i])
            i += 1
            j += 1
        }
    }
    return result
}

private func subtract(_ a: [Int], _ b: [Int]) -> [Int] {
    var result: [Int] = []
    var j = 0
    for value in a {
        while j < b.count && b[j] < value { j += 1 }
        if j < b.count && b[j] == value { continue }
        result.append(value)
    }
    return result
}

private func union(_ a: [Int], _ b: [Int]) -> [Int] {
    if a.isEmpty { return b }
    var result: [Int] = []
    result.reserveCapacity(a.count + b.count)
    var i = 0
    var j = 0
    while i < a.count || j < b.count {
        if j == b.count || (i < a.count && a[i] < b[j]) {
            result.append(a[i])
            i += 1
        } else if i == a.count || b[j] < a[i] {
            result.append(b[j])
            j += 1
        } else {
            result.append(a[i])
            i += 1
            j += 1
        }
    }
    return result
}
