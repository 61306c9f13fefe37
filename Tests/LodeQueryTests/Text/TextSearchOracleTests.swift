import Foundation
import Testing

@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestSupport
@testable import LodeText

/// A full-text search must find exactly what a brute-force scan of the objects finds, tokenizing
/// them the same way, and rank them as a straightforward BM25 computed here.
@Suite struct TextSearchOracleTests {
    struct Article: Persistable, Equatable {
        var id: Int
        var title: String
        var body: String?
        var tags: [String]
        var rank: Int
        static let schema = Schema<Article>(
            primaryKey: \.id, indexes: [.on(\.rank)], textIndexes: [.on(\.title, \.body, \.tags)])
    }

    static let vocabulary = [
        "café", "Cafe", "CAFÉ", "Straße", "strasse", "naïve", "swift", "Swift", "lmdb", "store", "storage",
        "stored", "東京都", "京都", "日本語", "rust", "Zürich", "zurich", "2024", "3.14", "e-mail", "don't",
        "ÉCOLE", "école", "e\u{301}cole", "live", "results", "search", "ﬁne", "Ｆｕｌｌ",
    ]
    static let separators = [" ", " ", " ", ", ", ". ", " — ", "\n", "!"]

    static func text<G: RandomNumberGenerator>(words: Int, using rng: inout G) -> String {
        var text = ""
        for index in 0..<words {
            if index > 0 { text += separators.randomElement(using: &rng)! }
            text += vocabulary.randomElement(using: &rng)!
        }
        return text
    }

    static func article<G: RandomNumberGenerator>(_ id: Int, using rng: inout G) -> Article {
        Article(
            id: id, title: text(words: Int.random(in: 0...4, using: &rng), using: &rng),
            body: Bool.random(using: &rng)
                ? nil : text(words: Int.random(in: 0...14, using: &rng), using: &rng),
            tags: (0..<Int.random(in: 0...3, using: &rng)).map { _ in vocabulary.randomElement(using: &rng)!
            },
            rank: Int.random(in: 0..<5, using: &rng))
    }

    // MARK: The oracle

    /// A document as the oracle sees it: position → term.
    struct OracleDocument {
        var terms: [Int: String] = [:]
        var length = 0

        init(_ article: Article) {
            let tokenizer = UnicodeTokenizer()
            var position = 0
            for text in [article.title] + (article.body.map { [$0] } ?? []) + article.tags {
                for token in tokenizer.tokens(in: text) {
                    terms[position] = token.term
                    position += 1
                    length += 1
                }
                position += 1
            }
        }

        /// How often the parts occur one after another (a part matches a term equal to it, or that
        /// it begins when marked prefix).
        func occurrences(_ parts: [(term: String, prefix: Bool)]) -> Int {
            terms.keys.filter { start in
                parts.enumerated().allSatisfy { offset, part in
                    guard let term = terms[start + offset] else { return false }
                    return part.prefix ? term.hasPrefix(part.term) : term == part.term
                }
            }.count
        }
    }

    /// The parts of a word, phrase or prefix of a query, or nil when the tokenizer keeps none.
    static func parts(_ text: String, prefix: Bool) -> [(term: String, prefix: Bool)]? {
        var parts = UnicodeTokenizer().queryTokens(in: text).map { ($0.term, $0.matchesPrefix) }
        guard !parts.isEmpty else { return nil }
        if prefix { parts[parts.count - 1].1 = true }
        return parts
    }

    /// Whether `document` matches, and the leaves that score (each as its parts).
    static func evaluate(_ expression: TextQuery.Expression, _ document: OracleDocument) -> Bool? {
        switch expression {
        case .word(let text), .phrase(let text):
            return parts(text, prefix: false).map { document.occurrences($0) > 0 }
        case .prefix(let text):
            return parts(text, prefix: true).map { document.occurrences($0) > 0 }
        case .all(let items):
            var required: [Bool] = []
            var excluded: [Bool] = []
            for item in items {
                if case .not(let inner) = item {
                    if let result = evaluate(inner, document) { excluded.append(result) }
                } else if let result = evaluate(item, document) {
                    required.append(result)
                }
            }
            guard !required.isEmpty else { return nil }
            return required.allSatisfy { $0 } && !excluded.contains(true)
        case .any(let items):
            let results = items.compactMap { evaluate($0, document) }
            return results.isEmpty ? nil : results.contains(true)
        case .not: return nil
        }
    }

    /// The leaves of the query that score: words, phrases and prefixes not under an exclusion.
    static func leaves(_ expression: TextQuery.Expression) -> [[(term: String, prefix: Bool)]] {
        switch expression {
        case .word(let text), .phrase(let text): return parts(text, prefix: false).map { [$0] } ?? []
        case .prefix(let text): return parts(text, prefix: true).map { [$0] } ?? []
        case .all(let items), .any(let items): return items.flatMap(leaves)
        case .not: return []
        }
    }

    static func bm25(
        _ expression: TextQuery.Expression, documents: [Int: OracleDocument]
    ) -> [Int: Double] {
        let count = Double(documents.count)
        let average = Double(documents.values.reduce(0) { $0 + $1.length }) / count
        var scores: [Int: Double] = [:]
        for leaf in leaves(expression) {
            let frequencies = documents.mapValues { $0.occurrences(leaf) }.filter { $0.value > 0 }
            let held = Double(frequencies.count)
            let idf = log(1 + (count - held + 0.5) / (held + 0.5))
            for (id, frequency) in frequencies {
                let length = Double(documents[id]!.length)
                let tf = Double(frequency)
                scores[id, default: 0] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
            }
        }
        return scores
    }

    /// A random query over the vocabulary (and words no document has).
    static func query<G: RandomNumberGenerator>(depth: Int = 0, using rng: inout G) -> TextQuery.Expression {
        func word() -> String {
            Int.random(in: 0..<10, using: &rng) == 0 ? "absent" : vocabulary.randomElement(using: &rng)!
        }
        switch Int.random(in: 0..<(depth > 1 ? 3 : 7), using: &rng) {
        case 0: return .word(word())
        case 1:
            let word = word()
            return .prefix(String(word.prefix(Int.random(in: 1...max(1, word.count), using: &rng))))
        case 2: return .phrase(word() + " " + word())
        case 3, 4:
            var items = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                query(depth: depth + 1, using: &rng)
            }
            if Bool.random(using: &rng) { items.append(.not(query(depth: depth + 1, using: &rng))) }
            return .all(items)
        default:
            return .any(
                (0..<Int.random(in: 2...3, using: &rng)).map { _ in query(depth: depth + 1, using: &rng) })
        }
    }

    // MARK: Tests

    @Test(arguments: [1, 2, 3] as [UInt64])
    func matchesAndRankingAreTheOracles(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let store = try Store.temporary(types: [Article.self])
        var articles: [Int: Article] = [:]
        var checkedQueries = 0
        for round in 0..<12 {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...25, using: &rng) {
                    let id = Int.random(in: 0..<80, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0:
                        if articles[id] != nil {
                            try tx.delete(Article.self, key: id)
                            articles[id] = nil
                        }
                    case 1:
                        if articles[id] != nil {
                            let words = Int.random(in: 0...6, using: &rng)
                            let updated = try tx.update(Article.self, key: id) {
                                $0.title = Self.text(words: words, using: &rng)
                            }
                            articles[id] = updated
                        }
                    default:
                        let article = Self.article(id, using: &rng)
                        try tx.upsert(article)
                        articles[id] = article
                    }
                }
                if round % 4 == 3 {
                    // A search inside the write sees its own changes.
                    try checkQueries(tx.objects(Article.self), articles, count: 5, using: &rng)
                }
            }
            checkedQueries += try checkQueries(store.objects(Article.self), articles, count: 25, using: &rng)
            // The index holds exactly the terms and positions the objects' text gives.
            #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        }
        #expect(checkedQueries > 100)
    }

    /// Checks `count` random queries against the oracle; returns how many had matches.
    @discardableResult
    func checkQueries<G: RandomNumberGenerator>(
        _ results: Results<Article>, _ articles: [Int: Article], count: Int, using rng: inout G
    ) throws -> Int {
        let documents = articles.mapValues(OracleDocument.init)
        var withMatches = 0
        for _ in 0..<count {
            let expression = Self.query(using: &rng)
            guard let query = try? TextQuery(expression: expression) else { continue }
            let expected = Set(documents.filter { Self.evaluate(expression, $0.value) == true }.keys)
            let search = results.matching(query)
            let empty = OracleDocument(Article(id: 0, title: "", body: nil, tags: [], rank: 0))
            guard Self.evaluate(expression, empty) != nil else {
                // The query keeps no word at all: refused.
                #expect(throws: LodeError.self) { try search.fetch() }
                continue
            }
            let found = try search.fetch()
            #expect(Set(found.map(\.id)) == expected, "\(query)")
            #expect(found.count == Set(found.map(\.id)).count)
            if !expected.isEmpty { withMatches += 1 }
            // Ranked: scores do not rise, and ties keep primary-key order.
            let scores = Self.bm25(expression, documents: documents)
            for (a, b) in zip(found, found.dropFirst()) {
                let (sa, sb) = (scores[a.id] ?? 0, scores[b.id] ?? 0)
                #expect(sa >= sb - 1e-9, "\(query): \(a.id) \(sa) before \(b.id) \(sb)")
                if abs(sa - sb) < 1e-12 { #expect(a.id < b.id, "\(query): tie out of key order") }
            }
            // A limit keeps the best; a filter and a sort apply to the matches.
            let limit = Int.random(in: 1...5, using: &rng)
            #expect(try search.limit(limit).fetch().map(\.id) == Array(found.prefix(limit)).map(\.id))
            #expect(
                try search.offset(2).limit(3).fetch().map(\.id)
                    == Array(found.dropFirst(2).prefix(3)).map(\.id))
            let filtered = try search.filter(#Predicate { $0.rank >= 2 }).fetch().map(\.id)
            #expect(filtered == found.filter { $0.rank >= 2 }.map(\.id))
            let sorted = try search.sorted(by: \.rank).fetch().map(\.id)
            #expect(sorted == found.sorted { ($0.rank, $0.id) < ($1.rank, $1.id) }.map(\.id))
            #expect(try search.count == expected.count)
        }
        return withMatches
    }
}
