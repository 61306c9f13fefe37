import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestSupport
@testable import LodeText

/// A full-text index is built when declared, rebuilt when its fields or tokenizer change, dropped
/// when removed, kept in the same transaction (savepoints included), and refuses bad input with a
/// clear error.
@Suite struct TextIndexLifecycleTests {
    let tmp = TemporaryDirectory()

    /// Splits on spaces and reverses each word: another tokenizer, whose terms differ.
    struct ReversingTokenizer: TextTokenizer {
        var identifier: String { "reverse/1" }
        func tokens(in text: String) -> [TextToken] {
            var tokens: [TextToken] = []
            var start = text.startIndex
            for index in text.indices + [text.endIndex] where index == text.endIndex || text[index] == " " {
                if start < index {
                    tokens.append(
                        TextToken(
                            term: String(text[start..<index].lowercased().reversed()), range: start..<index))
                }
                if index < text.endIndex { start = text.index(after: index) }
            }
            return tokens
        }
    }

    struct Plain: Persistable, Equatable {
        var id: Int
        var text: String
        var note: String?
        static let schema = Schema<Plain>(name: "Doc", primaryKey: \.id)
    }

    struct Searchable: Persistable, Equatable {
        var id: Int
        var text: String
        var note: String?
        static let schema = Schema<Searchable>(name: "Doc", primaryKey: \.id, textIndexes: [.on(\.text)])
    }

    struct Reversed: Persistable, Equatable {
        var id: Int
        var text: String
        var note: String?
        static let schema = Schema<Reversed>(
            name: "Doc", primaryKey: \.id,
            textIndexes: [.on(\.text, name: "text", tokenizer: ReversingTokenizer())])
    }

    struct TwoFields: Persistable, Equatable {
        var id: Int
        var text: String
        var note: String?
        static let schema = Schema<TwoFields>(
            name: "Doc", primaryKey: \.id, textIndexes: [.on(\.text, \.note, name: "text")])
    }

    struct WrongField: Persistable {
        var id: Int
        var count: Int
        static let schema = Schema<WrongField>(primaryKey: \.id, textIndexes: [.on(\.count)])
    }

    func ids<T: Persistable>(_ results: Results<T>) throws -> [Int] where T: Identifiable, T.ID == Int {
        try results.fetch().map(\.id)
    }

    @Test func declaringBuildsChangingRebuildsRemovingDrops() throws {
        do {
            let store = try Store(at: tmp.url, types: [Plain.self])
            try store.write { tx in
                for id in 0..<50 {
                    try tx.insert(Plain(id: id, text: id % 2 == 0 ? "even hello" : "odd", note: "side"))
                }
            }
        }
        do {
            // Declared now: built from the objects stored.
            let store = try Store(at: tmp.url, types: [Searchable.self])
            #expect(try store.objects(Searchable.self).matching("hello").count == 25)
            #expect(try store.objects(Searchable.self).matching("side").count == 0)
            let stored = try store.read { try $0.storedType(named: "Doc") }
            #expect(
                stored.textIndexes == [
                    StoredTextIndex(
                        name: "text", fields: ["text"], tokenizer: "unicode/1", documentCount: 50,
                        tokenCount: 75)
                ])
        }
        do {
            // Its fields changed: rebuilt.
            let store = try Store(at: tmp.url, types: [TwoFields.self])
            #expect(try store.objects(TwoFields.self).matching("side").count == 50)
        }
        do {
            // Another tokenizer: rebuilt with its terms.
            let store = try Store(at: tmp.url, types: [Reversed.self])
            // Queries go through it too: "hello" is searched as the term it stored, "olleh".
            #expect(try store.objects(Reversed.self).matching("hello").count == 25)
            #expect(try store.objects(Reversed.self).matching("olleh").count == 0)
            let report = try store.read { try $0.textIndexReport(named: "text", of: "Doc") }
            #expect(report.commonTerms.map(\.term) == ["ddo", "neve", "olleh"])
            #expect(report.commonTerms.map(\.documents) == [25, 25, 25])
            #expect(
                try store.read { try $0.storedType(named: "Doc") }.textIndexes.map(\.tokenizer) == [
                    "reverse/1"
                ])
        }
        do {
            // Opened read-only with the default tokenizer: the index does not match and is not used.
            let store = try Store(
                at: tmp.url, configuration: StoreConfiguration(readOnly: true), types: [Searchable.self])
            #expect {
                try store.objects(Searchable.self).matching("hello").fetch()
            } throws: { error in
                guard case .textIndexUnavailable(let type, let index, let reason)? = error as? LodeError
                else { return false }
                return type == "Doc" && index == "text" && reason.contains("another tokenizer")
            }
        }
        do {
            // Removed: both databases dropped.
            let store = try Store(at: tmp.url, types: [Plain.self])
            let names = try store.read { tx in
                try tx.lmdb.entries(in: tx.lmdb.environment.mainDatabase).map {
                    String(decoding: $0.key, as: UTF8.self)
                }
            }
            #expect(!names.contains { $0.contains("@text") })
            #expect(try store.read { try $0.storedType(named: "Doc") }.textIndexes.isEmpty)
            #expect {
                try store.objects(Plain.self).matching("hello").fetch()
            } throws: { error in
                if case .textIndexUnavailable? = error as? LodeError { return true }
                return false
            }
        }
    }

    @Test func aStoreWithATextIndexHasTheFullTextFormat() throws {
        func format(_ store: Store) throws -> Int? {
            try store.read { tx in
                try tx.lmdb.get(Array("format".utf8), in: store.meta).map {
                    try CBORDecoder().decode(Int.self, from: $0)
                }
            }
        }
        let plain = try Store.temporary(types: [Plain.self])
        #expect(try format(plain) == 2)
        // A Lode that predates full-text indexes (format 3 at most) refuses it from now on.
        let searchable = try Store.temporary(types: [Searchable.self])
        #expect(try format(searchable) == 4)
    }

    @Test func aFieldThatIsNotTextIsRefused() throws {
        #expect {
            _ = try Store.temporary(types: [WrongField.self])
        } throws: { error in
            guard case .schemaMismatch(_, let reason)? = error as? LodeError else { return false }
            return reason.contains("\"count\"") && reason.contains("Int")
        }
    }

    @Test func aSavepointThatRollsBackTakesItsPostingsWithIt() throws {
        let store = try Store.temporary(types: [Searchable.self])
        try store.write { tx in
            try tx.insert(Searchable(id: 1, text: "kept words"))
            do {
                try tx.savepoint { tx in
                    try tx.insert(Searchable(id: 2, text: "gone words"))
                    #expect(try tx.objects(Searchable.self).matching("words").count == 2)
                    throw CancellationError()
                }
            } catch is CancellationError {}
            #expect(try tx.objects(Searchable.self).matching("words").fetch().map(\.id) == [1])
            try tx.savepoint { tx in try tx.update(Searchable.self, key: 1) { $0.text = "kept changed" } }
            // Writes after a savepoint build on the statistics it left (a new document number).
            try tx.savepoint { tx in try tx.insert(Searchable(id: 3, text: "inner words")) }
            try tx.insert(Searchable(id: 4, text: "outer words"))
        }
        #expect(try store.objects(Searchable.self).matching("words").fetch().map(\.id).sorted() == [3, 4])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        #expect(try store.objects(Searchable.self).matching("changed").fetch().map(\.id) == [1])
        #expect(try store.objects(Searchable.self).matching("gone").count == 0)
    }

    @Test func anUpdateTouchesOnlyTheTermsThatChanged() throws {
        let store = try Store.temporary(types: [Searchable.self])
        let words = (0..<100).map { "word\($0)" }
        try store.write { tx in try tx.insert(Searchable(id: 1, text: words.joined(separator: " "))) }
        try store.write { tx in
            var changed = words
            changed[99] = "replaced"
            try tx.update(Searchable.self, key: 1) { $0.text = changed.joined(separator: " ") }
            // One term left the document, one joined it: two postings to write, not a hundred.
            #expect(tx.deferredIndexWrites.values.compactMap { ($0 as? PendingText)?.count } == [2])
        }
        #expect(try store.objects(Searchable.self).matching("replaced word0").count == 1)
        #expect(try store.objects(Searchable.self).matching("word99").count == 0)
    }

    @Test func badInputIsRefusedClearlyAndLargeOrEmptyTextIsFine() throws {
        let store = try Store.temporary(types: [Searchable.self, Plain.self])
        let large = String(repeating: "lode stores live results ", count: 40_000) + "needle"
        try store.write { tx in
            try tx.insert(Searchable(id: 1, text: large))
            try tx.insert(Searchable(id: 2, text: ""))
            try tx.insert(Searchable(id: 3, text: "\u{FFFD}broken\u{FFFD} surrogate"))
            try tx.insert(Searchable(id: 4, text: "live results"))
        }
        let all = store.objects(Searchable.self)
        #expect(try all.matching("needle").fetch().map(\.id) == [1])
        // BM25 saturates: 40,000 occurrences outweigh the short document's one.
        #expect(try all.matching("\"live results\"").fetch().map(\.id) == [1, 4])
        #expect(try all.matching("broken").fetch().map(\.id) == [3])
        // The 1 MB document changes one word: found by its new word only.
        try store.write { tx in
            try tx.update(Searchable.self, key: 1) { $0.text = large.replacing("needle", with: "pin") }
        }
        #expect(try all.matching("needle").count == 0)
        #expect(try all.matching("pin").fetch().map(\.id) == [1])
        try store.write { tx in try tx.delete(Searchable.self, key: 1) }
        #expect(try all.matching("lode").count == 0)
        #expect(try store.read { try $0.storedType(named: "Doc") }.textIndexes[0].documentCount == 3)
        // Text made from UTF-16 data with lone surrogates (JSONDecoder refuses them; decoding the code
        // units repairs each to U+FFFD): indexed and searched like any text.
        let lone: [UInt16] = Array("lone ".utf16) + [0xD800] + Array(" unpaired".utf16) + [0xDC00]
        let paired: [UInt16] = Array("pair ".utf16) + [0xD83D, 0xDE00] + Array(" ok".utf16)
        let decoded = [String(decoding: lone, as: UTF16.self), String(decoding: paired, as: UTF16.self)]
        #expect(decoded[0] == "lone \u{FFFD} unpaired\u{FFFD}")
        try store.write { tx in
            try tx.insert(Searchable(id: 5, text: decoded[0]))
            try tx.insert(Searchable(id: 6, text: decoded[1]))
        }
        #expect(try all.matching("unpaired").fetch().map(\.id) == [5])
        #expect(try all.matching("pair ok").fetch().map(\.id) == [6])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        // Malformed queries: every read throws the parse error.
        #expect {
            try all.matching("\"open").fetch()
        } throws: { error in
            guard case .invalidTextQuery(let parse)? = error as? LodeError else { return false }
            return parse.position == 0 && parse.reason.contains("quote")
        }
        #expect {
            try all.matching("!!! &&& ¿").count
        } throws: { error in
            guard case .invalidTextQuery(let parse)? = error as? LodeError else { return false }
            return parse.reason.contains("holds no word")
        }
        // Several indexes, a name that is not one: said so.
        #expect(throws: LodeError.self) { try all.matching("live", in: "nope").fetch() }
    }

    @Test func aDamagedBlockIsATypedError() throws {
        let store = try Store.temporary(types: [Searchable.self])
        try store.write { tx in try tx.insert(Searchable(id: 1, text: "alpha beta")) }
        try store.write { tx in
            let state = try tx.typeState(Searchable.self)
            let postings = state.textIndexes[0].postings
            var key = TextIndexLayout.termPrefix("alpha".utf8)
            TextIndexLayout.appendBigEndian(0, to: &key)
            try tx.lmdbWrite.put([0x05, 0x80], forKey: key, in: postings)
        }
        #expect {
            try store.objects(Searchable.self).matching("alpha").fetch()
        } throws: { error in
            guard case .textIndexDamaged(let type, let index, let reason)? = error as? LodeError else {
                return false
            }
            return type == "Doc" && index == "text" && reason.contains("alpha")
        }
        // The undamaged term still reads.
        #expect(try store.objects(Searchable.self).matching("beta").count == 1)
        // A block key that names no document number: a write that reaches it says so, never traps.
        try store.write { tx in
            let postings = try tx.typeState(Searchable.self).textIndexes[0].postings
            let key = TextIndexLayout.termPrefix("gamma".utf8) + [UInt8](repeating: 0xFF, count: 8)
            try tx.lmdbWrite.put([0x00], forKey: key, in: postings)
        }
        #expect {
            try store.write { tx in try tx.insert(Searchable(id: 2, text: "gamma")) }
        } throws: { error in
            guard case .textIndexDamaged(_, _, let reason)? = error as? LodeError else { return false }
            return reason.contains("gamma")
        }
    }

    @Test func deletingARecordThatNoLongerDecodesRemovesItsPostings() throws {
        let store = try Store.temporary(types: [Searchable.self])
        try store.write { tx in
            try tx.insert(Searchable(id: 1, text: "alpha beta"))
            try tx.insert(Searchable(id: 2, text: "alpha"))
        }
        try store.write { tx in
            let state = try tx.typeState(Searchable.self)
            try tx.lmdbWrite.put([0xff], forKey: try KeyEncoder().encode(1), in: state.records!)
        }
        let deleted = try store.write { tx in try tx.delete(Searchable.self, key: 1) }
        #expect(deleted)
        #expect(try store.objects(Searchable.self).matching("alpha").fetch().map(\.id) == [2])
        #expect(try store.objects(Searchable.self).matching("beta").count == 0)
        let report = try store.read { try $0.textIndexReport(named: "text", of: "Doc") }
        #expect(report.terms == 1 && report.postings == 1)
    }

    @Test func theIntegrityCheckFindsWhatIsWrongInAnIndex() throws {
        let store = try Store.temporary(types: [Searchable.self])
        try store.write { tx in
            try tx.insert(Searchable(id: 1, text: "alpha beta alpha"))
            try tx.insert(Searchable(id: 2, text: "beta"))
        }
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        try store.write { tx in
            let postings = try tx.typeState(Searchable.self).textIndexes[0].postings
            // Object 1's postings of "alpha" gone, a term object 2 does not have added.
            var alpha = TextIndexLayout.termPrefix("alpha".utf8)
            TextIndexLayout.appendBigEndian(0, to: &alpha)
            try tx.lmdbWrite.delete(alpha, in: postings)
            var gamma = TextIndexLayout.termPrefix("gamma".utf8)
            TextIndexLayout.appendBigEndian(1, to: &gamma)
            try tx.lmdbWrite.put(
                PostingBlock(postings: [.init(document: 1, positions: [4])]).encoded(base: 1), forKey: gamma,
                in: postings)
        }
        let problems = try store.read { try $0.checkIntegrity() }.problems
        #expect(
            problems == [
                "full-text index Doc.@text:text: document 0 has 1 tokens in its postings but length 3",
                "full-text index Doc.@text:text: document 1 has 2 tokens in its postings but length 1",
                "full-text index Doc.@text:text: Doc 1: missing terms alpha",
                "full-text index Doc.@text:text: Doc 2: terms it does not have gamma",
            ])
    }

    /// The untyped paths reach a full-text index through the full-text module's inspector, which a
    /// process registers once it declares a full-text index (or opens a store for a tool): one that
    /// never did lists the index without counts and says it did not check it, rather than call it
    /// sound or damaged.
    @Test func aProcessThatNeverDeclaredAFullTextIndexSaysItDidNotCheckOne() throws {
        let tmp = TemporaryDirectory("text-unchecked")
        do {
            let store = try Store(at: tmp.url, types: [Searchable.self])
            try store.write { tx in
                try tx.insert(Searchable(id: 1, text: "alpha beta"))
                try tx.insert(Searchable(id: 2, text: "beta"))
            }
            let report = try store.read { try $0.checkIntegrity() }
            #expect(report.problems == [] && report.unchecked == [])
            #expect(try store.read { try $0.storedType(named: "Doc") }.textIndexes[0].documentCount == 2)
        }
        let helper = builtTool("lode-test-helper")
        let result = try shell("'\(helper)' check-without-types '\(tmp.url.path)'")
        #expect(result.status == 0, "\(result.err)")
        #expect(
            result.out.split(separator: "\n") == [
                "index Doc text 0", "unchecked full-text index text of Doc", "problems 0",
            ])
    }

    @Test func aMigrationThatChangesRecordsLeavesTheIndexToBeBuiltAgain() throws {
        do {
            let store = try Store(at: tmp.url, types: [Searchable.self])
            try store.write { tx in
                for id in 0..<20 { try tx.insert(Searchable(id: id, text: "word\(id % 3) shared")) }
            }
        }
        let migration = Migration("texts rewritten") { context in
            try context.updateRecords(of: "Doc") { record in
                record["text"] = .text("migrated")
                return .keep
            }
        }
        // The same declaration: only rebuilding after the migration gives the new terms.
        let store = try Store(at: tmp.url, types: [Searchable.self], migrations: [migration])
        #expect(try store.objects(Searchable.self).matching("migrated").count == 20)
        #expect(try store.objects(Searchable.self).matching("shared").count == 0)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func termsOfManyDocumentsSpanBlocksThatStayInOrder() throws {
        let store = try Store.temporary(types: [Searchable.self])
        // Three loads (the later ones extend the term's last block, then add blocks), then changes in
        // the middle of the blocks: removals, a block's first document, one that moves its words.
        for load in 0..<3 {
            try store.write { tx in
                for id in (load * 1_000)..<((load + 1) * 1_000) {
                    try tx.insert(
                        Searchable(
                            id: id,
                            text: "common word\(id % 7) " + String(repeating: "common ", count: id % 5)))
                }
            }
        }
        let report = try store.read { try $0.textIndexReport(named: "text", of: "Doc") }
        #expect(report.blocks > report.terms)
        try store.write { tx in
            for id in stride(from: 0, to: 3_000, by: 3) { try tx.delete(Searchable.self, key: id) }
            try tx.update(Searchable.self, key: 1) { $0.text = "zebra common" }
            try tx.insert(Searchable(id: -1, text: "common first"))
        }
        #expect(try store.objects(Searchable.self).matching("common").count == 2_001)
        #expect(try store.objects(Searchable.self).matching("\"zebra common\"").fetch().map(\.id) == [1])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }

    @Test func deleteAllEmptiesTheIndex() throws {
        let store = try Store.temporary(types: [Searchable.self])
        try store.write { tx in
            for id in 0..<10 { try tx.insert(Searchable(id: id, text: "word \(id)")) }
        }
        try store.write { tx in try tx.deleteAll(Searchable.self) }
        #expect(try store.objects(Searchable.self).matching("word").count == 0)
        try store.write { tx in try tx.insert(Searchable(id: 3, text: "word again")) }
        #expect(try store.objects(Searchable.self).matching("word").fetch().map(\.id) == [3])
        #expect(try store.read { try $0.storedType(named: "Doc") }.textIndexes[0].documentCount == 1)
    }
}
