import CSQLite
import Dispatch
import Foundation
import Lode
import LodeInspection
import LodeMacros

/// A document of the full-text workloads: a title and a body, both in the type's text index.
@Model(name: "Document")
struct BenchDocument {
    @PrimaryKey var id: Int
    @Searchable var title: String
    @Searchable var body: String
}

/// A corpus drawn from the system's word list (`/usr/share/dict/words`, Debian's `wamerican`, which
/// `make deps` installs): words by a Zipf distribution (exponent 1) over the list in a shuffled
/// order, one word in twenty of the list given an accent, and one document in twenty holding a few
/// Chinese words of two ideographs. Documents are 20–200 words of body and 3–8 of title.
struct TextCorpus {
    let vocabulary: [String]
    let documents: [BenchDocument]
    /// Per vocabulary word: the documents holding it.
    let documentFrequency: [Int]

    init(count: Int, seed: UInt64 = 44) throws {
        guard let list = try? String(contentsOfFile: "/usr/share/dict/words", encoding: .utf8) else {
            throw BenchError.sqlite(
                "the full-text workloads need /usr/share/dict/words (make deps installs wamerican)")
        }
        var rng = Generator(seed)
        var words = Array(
            Set(
                list.split(separator: "\n").map { $0.lowercased() }.filter {
                    !$0.contains("'") && $0.count > 1
                })
        ).sorted()
        words.shuffle(using: &rng)
        // Accents on one word in twenty (a distinct word: "cafe" and "café" fold to one term).
        let accents: [Character: Character] = ["e": "é", "a": "à", "u": "ü", "o": "ö", "i": "ï", "c": "ç"]
        for index in stride(from: 7, to: words.count, by: 20) {
            if let position = words[index].firstIndex(where: { accents[$0] != nil }) {
                words[index].replaceSubrange(
                    position...position, with: String(accents[words[index][position]]!))
            }
        }
        let chinese = (0..<300).map { _ in
            String(
                String.UnicodeScalarView(
                    (0..<2).map { _ in Unicode.Scalar(UInt32.random(in: 0x4E00...0x9FA5, using: &rng))! }))
        }
        // The cumulative Zipf weights, searched by bisection per word drawn.
        var cumulative: [Double] = []
        cumulative.reserveCapacity(words.count)
        var total = 0.0
        for rank in 0..<words.count {
            total += 1 / Double(rank + 1)
            cumulative.append(total)
        }
        func draw(_ rng: inout Generator) -> Int {
            let target = Double.random(in: 0..<total, using: &rng)
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] <= target { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var frequency = [Int](repeating: 0, count: words.count)
        var documents: [BenchDocument] = []
        documents.reserveCapacity(count)
        var seen = Set<Int>()
        for id in 0..<count {
            seen.removeAll(keepingCapacity: true)
            func text(_ length: Int, _ rng: inout Generator) -> String {
                var parts: [String] = []
                parts.reserveCapacity(length + 3)
                for _ in 0..<length {
                    let word = draw(&rng)
                    seen.insert(word)
                    parts.append(words[word])
                }
                return parts.joined(separator: " ")
            }
            let title = text(Int.random(in: 3...8, using: &rng), &rng).capitalized
            var body = text(Int.random(in: 20...200, using: &rng), &rng)
            if Int.random(in: 0..<20, using: &rng) == 0 {
                body +=
                    " "
                    + (0..<Int.random(in: 1...3, using: &rng)).map { _ in chinese.randomElement(using: &rng)!
                    }
                    .joined(separator: "，")
            }
            for word in seen { frequency[word] += 1 }
            documents.append(BenchDocument(id: id, title: title, body: body))
        }
        vocabulary = words
        self.documents = documents
        documentFrequency = frequency
    }

    /// The vocabulary word whose document frequency is nearest `wanted`.
    func word(heldBy wanted: Int) -> String {
        let index = documentFrequency.indices.min {
            abs(documentFrequency[$0] - wanted) < abs(documentFrequency[$1] - wanted)
        }!
        return vocabulary[index]
    }
}

/// SQLite's FTS5 with the same documents: the title and body in an FTS5 table (its own content),
/// `unicode61 remove_diacritics 2` (case and diacritics folded, as Lode's default tokenizer), ranked
/// by its `bm25`.
final class SQLiteText {
    private var db: OpaquePointer?
    private var insert: OpaquePointer?
    private var search: OpaquePointer?
    private var update: OpaquePointer?
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(path: String) throws {
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError.sqlite("open \(path)") }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=NORMAL")
        try exec(
            "CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2')")
        insert = try prepare("INSERT INTO docs (rowid, title, body) VALUES (?, ?, ?)")
        search = try prepare("SELECT rowid, title, body FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?")
        update = try prepare("UPDATE docs SET body = ? WHERE rowid = ?")
    }

    deinit {
        for statement in [insert, search, update] { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError.sqlite("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchError.sqlite("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    func load(_ documents: [BenchDocument]) throws {
        try exec("BEGIN")
        for document in documents {
            sqlite3_reset(insert)
            sqlite3_bind_int64(insert, 1, Int64(document.id))
            sqlite3_bind_text(insert, 2, document.title, -1, Self.transient)
            sqlite3_bind_text(insert, 3, document.body, -1, Self.transient)
            guard sqlite3_step(insert) == SQLITE_DONE else {
                throw BenchError.sqlite("insert: \(String(cString: sqlite3_errmsg(db)))")
            }
        }
        try exec("COMMIT")
    }

    /// The best `limit` matches of `query` (FTS5 syntax), their rows read.
    func top(_ query: String, limit: Int) throws -> [Int] {
        sqlite3_reset(search)
        sqlite3_bind_text(search, 1, query, -1, Self.transient)
        sqlite3_bind_int(search, 2, Int32(limit))
        var ids: [Int] = []
        while true {
            let rc = sqlite3_step(search)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else {
                throw BenchError.sqlite("search: \(String(cString: sqlite3_errmsg(db)))")
            }
            ids.append(Int(sqlite3_column_int64(search, 0)))
            _ = sqlite3_column_text(search, 1)
            _ = sqlite3_column_text(search, 2)
        }
        return ids
    }

    func setBody(_ body: String, of id: Int) throws {
        sqlite3_reset(update)
        sqlite3_bind_text(update, 1, body, -1, Self.transient)
        sqlite3_bind_int64(update, 2, Int64(id))
        guard sqlite3_step(update) == SQLITE_DONE else { throw BenchError.sqlite("update") }
    }

    /// Bytes of the FTS5 index (its shadow tables but the content), from `dbstat`.
    func indexBytes() throws -> Int {
        var statement: OpaquePointer?
        guard
            sqlite3_prepare_v2(
                db, "SELECT SUM(pgsize) FROM dbstat WHERE name IN ('docs_data', 'docs_idx', 'docs_docsize')",
                -1,
                &statement, nil) == SQLITE_OK
        else { throw BenchError.sqlite("dbstat: \(String(cString: sqlite3_errmsg(db)))") }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchError.sqlite("dbstat") }
        return Int(sqlite3_column_int64(statement, 0))
    }
}

extension Workloads {
    static func text(_ settings: Settings) throws -> [Figure] {
        let count = settings.size(200_000)
        let corpus = try TextCorpus(count: count)
        let scratch = Scratch("text")
        var figures: [Figure] = []

        // Build: one transaction of every document, the index kept with it.
        var store: Store?
        var sqlite: SQLiteText?
        var run = 0
        let build = try alternate(
            runs: settings.runs,
            [
                System(
                    name: "Lode",
                    prepare: {
                        store?.close()
                        store = nil
                        run += 1
                        store = try Store(
                            at: scratch.url.appendingPathComponent("lode\(run)"),
                            configuration: StoreConfiguration(durability: .noSync, initialMapSize: 8 << 30),
                            types: [BenchDocument.self])
                    },
                    body: {
                        try store!.write { tx in for document in corpus.documents { try tx.insert(document) }
                        }
                    }),
                System(
                    name: "SQLite FTS5",
                    prepare: {
                        sqlite = nil
                        run += 1
                        sqlite = try SQLiteText(path: scratch.path("fts\(run).db"))
                    },
                    body: { try sqlite!.load(corpus.documents) }),
            ])
        figures.append(
            Figure(
                workload: "full-text: index build (bulk insert of every document, title + body)", size: count,
                timings: [
                    Timing(system: "Lode", runs: build[0], operations: count),
                    Timing(system: "SQLite FTS5", runs: build[1], operations: count),
                ]))
        guard let store, let sqlite else { return figures }
        let report = try store.read { try $0.textIndexReport(named: "title+body", of: "Document") }
        let ftsBytes = try sqlite.indexBytes()
        figures.append(
            Figure(
                workload: "full-text: index size", size: count, timings: [],
                notes: [
                    String(
                        format:
                            "Lode %.1f MB (%d terms, %d postings in %d blocks), FTS5 %.1f MB: %.2f× FTS5's",
                        Double(report.bytes) / 1e6, report.terms, report.postings, report.blocks,
                        Double(ftsBytes) / 1e6, Double(report.bytes) / Double(max(ftsBytes, 1)))
                ]))

        // Ranked top 20, each query the same in both syntaxes.
        let rare = corpus.word(heldBy: max(count / 4000, 3))
        let common = corpus.word(heldBy: count / 3)
        let (first, second) = (corpus.word(heldBy: count / 20), corpus.word(heldBy: count / 50))
        let phraseWords = corpus.documents[7].body.split(separator: " ").prefix(2).joined(separator: " ")
        let prefix = String(corpus.word(heldBy: count / 100).prefix(4))
        let queries: [(String, String, String)] = [
            ("a rare term", rare, rare),
            ("a common term", common, common),
            ("two terms", "\(first) \(second)", "\(first) \(second)"),
            ("a phrase", "\"\(phraseWords)\"", "\"\(phraseWords)\""),
            ("a prefix", "\(prefix)*", "\(prefix)*"),
        ]
        let documents = store.objects(BenchDocument.self)
        for (label, lodeQuery, ftsQuery) in queries {
            let query = try TextQuery(lodeQuery)
            let matches = try documents.matching(query).count
            let lodeTop = try documents.matching(query).limit(20).fetch().map(\.id)
            let ftsTop = try sqlite.top(ftsQuery, limit: 20)
            let repeats = max(1, min(2_000, 2_000_000 / max(matches, 1)))
            let times = try alternate(
                runs: settings.runs,
                [
                    System(name: "Lode") {
                        for _ in 0..<repeats { _ = try documents.matching(query).limit(20).fetch() }
                    },
                    System(name: "SQLite FTS5") {
                        for _ in 0..<repeats { _ = try sqlite.top(ftsQuery, limit: 20) }
                    },
                ])
            let same = Set(lodeTop).intersection(ftsTop).count
            figures.append(
                Figure(
                    workload: "full-text: ranked top 20, \(label) (\(lodeQuery); \(matches) matches)",
                    size: repeats,
                    timings: [
                        Timing(system: "Lode", runs: times[0], operations: repeats),
                        Timing(system: "SQLite FTS5", runs: times[1], operations: repeats),
                    ],
                    notes: [
                        "\(same) of the top \(lodeTop.count) are FTS5's top \(ftsTop.count) too (BM25 variants differ)"
                    ]))
        }

        // Live: a ranked search of about 1,000 matches observed; one document's body changes per
        // commit; the time from the write's start to the delivered change.
        let liveWord = corpus.word(heldBy: 1_000)
        let live = documents.matching(try TextQuery(liveWord))
        let liveMatches = try live.count
        let delivered = DispatchSemaphore(value: 0)
        let token = live.observe { _ in delivered.signal() }
        delivered.wait()
        let clock = ContinuousClock()
        var latencies: [Double] = []
        var naive: [Double] = []
        var rng = Generator(99)
        let commits = settings.quick ? 20 : 200
        // Each commit changes the matches (so each is delivered): a document without the word gets
        // it, and the next commit takes it away again.
        var id = 0
        for commit in 0..<commits {
            if commit % 2 == 0 {
                repeat {
                    id = Int.random(in: 0..<count, using: &rng)
                } while (corpus.documents[id].title.lowercased() + " " + corpus.documents[id].body).split(
                    separator: " "
                )
                .contains(Substring(liveWord))
            }
            let body = corpus.documents[id].body + (commit % 2 == 0 ? " \(liveWord)" : "")
            let start = clock.now
            try store.write { tx in try tx.update(BenchDocument.self, key: id, \.body) { $0 = body } }
            delivered.wait()
            let elapsed = clock.now - start
            latencies.append(
                Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            // The way without live results: the same update, then the search again.
            naive += try measure(runs: 1) {
                try sqlite.setBody(body, of: id)
                _ = try sqlite.top(liveWord, limit: 1_000_000)
            }
        }
        token.cancel()
        figures.append(
            Figure(
                workload:
                    "full-text: one-document update, live ranked search of \(liveMatches) matches (write → delivered)",
                size: commits,
                timings: [
                    Timing(system: "Lode live", runs: latencies, operations: 1),
                    Timing(system: "SQLite FTS5 update + re-query", runs: naive, operations: 1),
                ],
                notes: [
                    "Lode p50 \(format(Timing(system: "", runs: latencies, operations: 1).median)), p95 \(format(Timing(system: "", runs: latencies, operations: 1).percentile(95)))"
                ]))
        store.close()
        return figures
    }
}
