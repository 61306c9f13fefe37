import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport
@testable import LodeText

/// Time travel and undo, checked against the store itself: every version's answers kept as they were
/// given, and every database's entries (records, indexes, links, full-text postings) kept after
/// every commit.
@Suite struct UndoTimeTravelTests {
    struct Board: Persistable, Equatable {
        var id: Int
        var name: String
        var archived = false
        static let schema = Schema<Board>(primaryKey: \.id, indexes: [.unique(\.name)])
    }

    struct Card: Persistable, Equatable {
        var id: Int
        var title: String
        var body: String
        var rank: Int
        var score: Double
        var tags: [String]
        var remark: String?
        var due: Date?
        var board: Link<Board>?
        static let schema = Schema<Card>(
            primaryKey: \.id, indexes: [.on(\.rank), .on(\.title)], textIndexes: [.on(\.title, \.body)],
            links: [.to(\.board, onDelete: .cascade)])
    }

    /// Every entry of every database of the store's objects (not `@`-named: catalog, change log,
    /// history), as text: equal fingerprints are equal stores for every read.
    static func fingerprint(_ store: Store) throws -> [String: [String]] {
        let environment = try store.environment()
        let names = try environment.read { txn in
            try txn.allEntries(in: environment.mainDatabase).map { String(decoding: $0.key, as: UTF8.self) }
        }.filter { !$0.hasPrefix("@") && !$0.contains(".@text") }
        let databases = try names.map { try environment.database(named: $0, kind: nil, create: false) }
        return try environment.read { txn in
            var result: [String: [String]] = [:]
            for (name, database) in zip(names, databases) {
                result[name] = try txn.allEntries(in: database).map { entry in
                    entry.key.map { String(format: "%02x", $0) }.joined() + "="
                        + entry.value.map { String(format: "%02x", $0) }.joined()
                }
            }
            return result
        }
    }

    /// The databases whose entries differ between two fingerprints, and the entries of the first
    /// that differ; nil when none does.
    static func differences(_ found: [String: [String]], _ expected: [String: [String]]) -> String? {
        let differing = Set(found.keys).union(expected.keys).filter { found[$0] != expected[$0] }.sorted()
        guard let first = differing.first else { return nil }
        let entries = Set(found[first] ?? []).symmetricDifference(expected[first] ?? [])
        return "\(differing): in \(first), \(entries.sorted().prefix(4))"
    }

    static let ranked = #Predicate<Card> { $0.rank >= 2 }

    /// A migration that rewrites every card's rank: what it did is not in the history.
    static let ranksDoubled = Migration("ranks doubled") { context in
        try context.updateRecords(of: "Card") { record in
            if case .unsigned(let rank)? = record["rank"] { record["rank"] = .unsigned(rank * 2) }
            return .keep
        }
    }

    /// The answers a version gave: each card, and two queries.
    struct Answers: Equatable {
        var cards: [Card]
        var rankedByTitle: [Card]
        var topScores: [Card]
        var boards: [Board]
    }

    static func answers(_ store: Store, asOf version: Int? = nil) throws -> Answers {
        let all = store.objects(Card.self)
        let ranked = all.filter(Self.ranked).sorted(by: \.title).limit(6)
        let top = all.sorted(by: \.score, ascending: false).offset(1).limit(4)
        let boards = store.objects(Board.self)
        guard let version else {
            return Answers(
                cards: try all.fetch(), rankedByTitle: try ranked.fetch(), topScores: try top.fetch(),
                boards: try boards.fetch())
        }
        return Answers(
            cards: try all.fetch(asOf: version), rankedByTitle: try ranked.fetch(asOf: version),
            topScores: try top.fetch(asOf: version), boards: try boards.fetch(asOf: version))
    }

    /// One random write: cards inserted, replaced, updated field by field, deleted; boards made,
    /// renamed (a unique index) and deleted (cascading to their cards).
    static func randomWrite(_ tx: WriteTransaction, round: Int, random: inout SeededGenerator) throws {
        let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
        func word() -> String { words[Int.random(in: 0..<words.count, using: &random)] }
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let id = Int.random(in: 0..<24, using: &random)
            let boardID = Int.random(in: 0..<4, using: &random)
            let board = try tx.object(Board.self, key: boardID)
            let exists = try tx.object(Card.self, key: id) != nil
            switch Int.random(in: 0..<12, using: &random) {
            case 0..<3:
                try tx.upsert(
                    Card(
                        id: id, title: word(), body: "\(word()) \(word()) \(round)",
                        rank: Int.random(in: 0..<5, using: &random),
                        score: Double(Int.random(in: 0..<100, using: &random)) / 4,
                        tags: (0..<Int.random(in: 0..<3, using: &random)).map { "t\($0)" },
                        remark: Bool.random(using: &random) ? nil : "r\(round)",
                        due: Bool.random(using: &random)
                            ? nil : Date(timeIntervalSince1970: Double(round * 60)),
                        board: try board.map { try Link($0) }))
            case 3..<6 where exists:
                try tx.update(Card.self, key: id) { card in
                    card.rank = Int.random(in: 0..<5, using: &random)
                    if Bool.random(using: &random) { card.remark = card.remark == nil ? "set \(round)" : nil }
                    if Bool.random(using: &random) { card.body = "\(word()) edited" }
                }
            case 6 where exists:
                try tx.update(Card.self, key: id) { card in card.board = try board.map { try Link($0) } }
            case 7..<9 where exists:
                try tx.delete(Card.self, key: id)
            case 9 where board == nil:
                let name = "board \(Int.random(in: 0..<6, using: &random))"
                if try tx.objects(Board.self).filter(#Predicate { $0.name == name }).count == 0 {
                    try tx.insert(Board(id: boardID, name: name))
                }
            case 10 where board != nil:
                let name = "board \(Int.random(in: 0..<6, using: &random))"
                if try tx.objects(Board.self).filter(#Predicate { $0.name == name }).count == 0 {
                    try tx.update(Board.self, key: boardID) { $0.name = name }
                }
            case 11 where board != nil && round % 5 == 0:
                try tx.delete(Board.self, key: boardID)
            default:
                continue
            }
        }
    }

    /// Random writes; then every version read as of then gives what it gave, and undoing the last
    /// steps one by one gives back every database's entries as they were before each, redoing them
    /// as they were after.
    /// (A limit of 1 records the inserts of every commit that makes two by reference.)
    @Test(arguments: [256, 1])
    func timeTravelAndUndoGiveBackEveryVersion(insertValuesLimit: Int) throws {
        let directory = TemporaryDirectory("undo-oracle")
        var configuration = StoreConfiguration(history: .forever)
        configuration.historyInsertValuesLimit = insertValuesLimit
        let store = try Store(
            at: directory.url, configuration: configuration, types: [Board.self, Card.self])
        let undo = try UndoStack(store, limit: 1_000)
        var random = SeededGenerator(seed: 611)
        var versions: [Int] = []
        var answers: [Int: Answers] = [:]
        var fingerprints: [Int: [String: [String]]] = [:]
        let first = try store.read { $0.version }
        answers[first] = try Self.answers(store)
        fingerprints[first] = try Self.fingerprint(store)
        var steps: [(before: Int, after: Int)] = []
        var last = first
        var lastStep: String?
        for round in 0..<140 {
            try undo.write("round \(round)") { tx in try Self.randomWrite(tx, round: round, random: &random) }
            let version = try store.read { $0.version }
            guard version != last else { continue }
            versions.append(version)
            answers[version] = try Self.answers(store)
            fingerprints[version] = try Self.fingerprint(store)
            steps.append((last, version))
            last = version
            lastStep = "round \(round)"
        }
        #expect(versions.count > 100)
        // Time travel: every version, every query, and each object by key.
        for version in [first] + versions {
            #expect(try Self.answers(store, asOf: version) == answers[version], "as of \(version)")
            for card in answers[version]!.cards.prefix(3) {
                #expect(try store.read { try $0.object(Card.self, key: card.id, asOf: version) } == card)
            }
        }
        let gone = try store.read { tx in
            try (0..<24).filter { id in try tx.object(Card.self, key: id, asOf: first) == nil }
        }
        #expect(gone.count == 24, "no card existed at the start")
        // Undo the last 40 steps: each gives back the state before it, exactly.
        #expect(undo.undoName == lastStep)
        for step in steps.reversed().prefix(40) {
            let outcome = try #require(try undo.undo())
            #expect(outcome.skipped.isEmpty)
            let differences = Self.differences(try Self.fingerprint(store), fingerprints[step.before]!)
            #expect(differences == nil, "undo of \(step.after): \(differences ?? "")")
            #expect(try Self.answers(store) == answers[step.before])
        }
        // Redo them: each gives back the state after it.
        for step in steps.suffix(40) {
            #expect(undo.canRedo)
            _ = try #require(try undo.redo())
            let differences = Self.differences(try Self.fingerprint(store), fingerprints[step.after]!)
            #expect(differences == nil, "redo of \(step.after): \(differences ?? "")")
        }
        #expect(!undo.canRedo)
        // Full-text postings too: a search finds what it found at the last version.
        let found = try store.read { tx in
            try tx.objects(Card.self).matching("gamma").fetch().map(\.id).sorted()
        }
        #expect(
            found
                == answers[last]!.cards.filter { $0.title.contains("gamma") || $0.body.contains("gamma") }
                .map(\.id).sorted())
    }
}

extension UndoTimeTravelTests {
    static func card(_ id: Int, _ title: String, board: Board? = nil) throws -> Card {
        Card(
            id: id, title: title, body: "\(title) body", rank: id, score: Double(id), tags: [], remark: nil,
            due: nil, board: try board.map { try Link($0) })
    }

    @Test func undoAndRedoOfInsertsUpdatesAndDeletes() throws {
        let directory = TemporaryDirectory("undo-basic")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever),
            types: [Board.self, Card.self])
        let undo = try UndoStack(store)
        let board = Board(id: 3, name: "three")
        try undo.write("Board") { tx in try tx.insert(board) }
        try undo.write("Card") { tx in try tx.insert(try Self.card(11, "eleven", board: board)) }
        try undo.write("Rename") { tx in try tx.update(Card.self, key: 11) { $0.title = "renamed" } }
        #expect(undo.undoName == "Rename")
        try undo.undo()
        #expect(try store.read { try $0.object(Card.self, key: 11)?.title } == "eleven")
        try undo.undo()
        #expect(try store.read { try $0.object(Card.self, key: 11) } == nil)
        #expect(undo.redoName == "Card")
        let redone = try undo.redo()
        #expect(redone?.name == "Card")
        #expect(
            try store.read { try $0.object(Card.self, key: 11) }
                == (try Self.card(11, "eleven", board: board)))
        try undo.redo()
        #expect(try store.read { try $0.object(Card.self, key: 11)?.title } == "renamed")
        #expect(!undo.canRedo)
    }
}

extension UndoTimeTravelTests {
    /// A delete rule that cascades to objects with a full-text index removes their postings too —
    /// through their Swift type, or (a store that never used the type) through the index's kind —
    /// where it used to leave postings of deleted objects, and every later search threw
    /// `textIndexDamaged`.
    @Test func aCascadeRemovesTheFullTextEntriesOfWhatItDeletes() throws {
        let directory = TemporaryDirectory("cascade-text")
        let store = try Store(at: directory.url, types: [Board.self, Card.self])
        let boards = [Board(id: 1, name: "one"), Board(id: 2, name: "two")]
        try store.write { tx in
            for board in boards { try tx.insert(board) }
            try tx.insert(try Self.card(1, "zebra", board: boards[0]))
            try tx.insert(try Self.card(2, "zebra", board: boards[1]))
            try tx.insert(try Self.card(3, "zebra"))
        }
        try store.write { tx in try tx.delete(Board.self, key: 1) }
        let search = { (store: Store) in
            try store.read { try $0.objects(Card.self).matching("zebra").fetch().map(\.id).sorted() }
        }
        #expect(try search(store) == [2, 3])
        // A store on the same file that never used Card: the cascade goes through the index's kind.
        let boardsOnly = try Store(at: directory.url, types: [Board.self])
        try boardsOnly.write { tx in try tx.delete(Board.self, key: 2) }
        #expect(try search(store) == [3])
        #expect(try store.read { try $0.checkIntegrity() }.problems.isEmpty)
    }
}

extension UndoTimeTravelTests {
    func conflicts(_ error: any Error) -> [UndoConflict]? {
        guard case .undoConflict(_, let conflicts) = error as? LodeError else { return nil }
        return conflicts
    }

    /// Another process changes what a step changed: undo refuses, naming the object and only the
    /// fields both changed, and writes nothing; skipping puts back what nobody changed; redo writes
    /// again what the undo put back.
    @Test func objectsChangedSinceAreRefusedOrSkipped() throws {
        let directory = TemporaryDirectory("undo-conflicts")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        let undo = try UndoStack(store, author: "me")
        try undo.write("Add") { tx in
            try tx.insert(Task(id: 7, title: "seven", rank: 1, done: false, group: "g"))
            try tx.insert(Task(id: 8, title: "eight", rank: 1, done: false, group: "g"))
            try tx.insert(Task(id: 9, title: "nine", rank: 1, done: false, group: "g"))
        }
        try undo.write("Tweak") { tx in
            try tx.update(Task.self, key: 7) {
                $0.done = true
                $0.rank = 2
            }
            try tx.delete(Task.self, key: 9)
        }
        // Another process: 7's title and rank change, 9 is made again.
        let helper = builtTool("lode-test-helper")
        for (operation, id) in [("update", 7), ("insert", 9)] {
            let result = try shell("'\(helper)' commit-one '\(directory.url.path)' \(operation) \(id)")
            #expect(result.status == 0, "\(result.err)")
        }
        let before = try store.read { $0.version }
        #expect {
            try undo.undo()
        } throws: { error in
            let found = conflicts(error)
            return found?.map(\.fields) == [["rank"], []]
                && found?.map(\.change) == ["rank changed since", "made again since"]
                && "\(error)".contains("Task 7 (rank changed since)")
        }
        #expect(try store.read { $0.version } == before, "nothing was written")
        #expect(undo.undoName == "Tweak", "the step stays")
        // Skipping: done goes back, rank (changed since) and 9 (made again) stay.
        let outcome = try #require(try undo.undo(policy: .skipChanged))
        #expect(outcome.skipped.map(\.object.typeName) == ["Task", "Task"])
        var seven = try #require(try store.read { try $0.object(Task.self, key: 7) })
        #expect(seven.done == false && seven.rank == 102 && seven.title == "seven (edited)")
        #expect(try store.read { try $0.object(Task.self, key: 9)?.title } == "task 9")
        #expect(try store.read { try $0.history().last?.author } == "me")
        // Redo writes again what the undo put back (done), nothing else.
        try undo.redo()
        seven = try #require(try store.read { try $0.object(Task.self, key: 7) })
        #expect(seven.done == true && seven.rank == 102)
        try undo.undo(policy: .skipChanged)
        // Undo of the inserts: 7 changed since (refused), 8 did not.
        #expect {
            try undo.undo()
        } throws: { error in
            conflicts(error)?.map(\.object.primaryKey) == [
                try KeyEncoder().encode(7), try KeyEncoder().encode(9),
            ]
        }
        let last = try #require(try undo.undo(policy: .skipChanged))
        #expect(last.skipped.count == 2)
        #expect(try store.read { try $0.object(Task.self, key: 8) } == nil)
        #expect(try store.read { try $0.object(Task.self, key: 7) } != nil)
        #expect(!undo.canUndo && undo.redoName == "Add")
    }

    /// A commit inserting more objects than the history keeps values for records them by reference:
    /// its entry holds no values, yet the history, time travel and undo give the values as inserted,
    /// whatever happened to the objects since.
    @Test func aBulkInsertIsRecordedByReferenceAndReadAsInserted() throws {
        let directory = TemporaryDirectory("history-bulk")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        func task(_ id: Int) -> Task {
            Task(id: id, title: "task \(id)", rank: id % 7, done: false, group: "g")
        }
        let undo = try UndoStack(store)
        let start = try store.read { $0.historyToken }
        try undo.write("Import") { tx in for id in 0..<300 { try tx.insert(task(id)) } }
        let imported = try store.read { $0.version }
        let entry = try #require(
            try store.read { tx in
                try tx.lmdb.get(
                    HistoryLayout.entryKey(for: imported),
                    in: try tx.database(named: "@changes", kind: .plain))
            })
        #expect(entry.count < 300 * 12, "\(entry.count) bytes: a key per object, no values")
        // Since: one changed, one deleted, one deleted and made again, one changed twice.
        try store.write { tx in
            try tx.update(Task.self, key: 5) { $0.title = "five" }
            try tx.delete(Task.self, key: 6)
            try tx.delete(Task.self, key: 7)
        }
        try store.write { tx in
            try tx.insert(Task(id: 7, title: "seven again", rank: 0, done: true, group: "h"))
            try tx.update(Task.self, key: 5) { $0.rank = 100 }
        }
        let history = try store.read { try $0.history(since: start) }
        #expect(history.map(\.version).first == imported)
        let inserted = try history[0].changes.map { try #require(try $0.object(as: Task.self)) }
        #expect(inserted == (0..<300).map(task))
        #expect(history[2].changes.first { $0.key == (try! KeyEncoder().encode(7)) }?.kind == .insert)
        #expect(
            try history[2].changes.compactMap { try $0.object(as: Task.self) } == [
                Task(id: 7, title: "seven again", rank: 0, done: true, group: "h")
            ])
        // Of one object, and as of the import.
        let ofFive = try store.read { try $0.history(of: Task.self, key: 5, since: start) }
        #expect(try ofFive.first?.changes.first?.object(as: Task.self) == task(5))
        for id in [5, 6, 7, 8] {
            #expect(try store.read { try $0.object(Task.self, key: id, asOf: imported) } == task(id))
        }
        // Undo: 5, 6 and 7 changed since (refused), the rest removed when skipping; redo puts them
        // back.
        #expect {
            try undo.undo()
        } throws: { error in
            try conflicts(error)?.map(\.object.primaryKey) == [5, 6, 7].map { try KeyEncoder().encode($0) }
        }
        let outcome = try #require(try undo.undo(policy: .skipChanged))
        #expect(outcome.skipped.count == 3)
        #expect(try store.read { try $0.objects(Task.self).fetch().map(\.id).sorted() } == [5, 7])
        try undo.redo()
        let all = try store.read { try $0.objects(Task.self).fetch() }
        #expect(all.count == 299)
        #expect(
            all.filter { ![5, 6, 7].contains($0.id) }
                == (0..<300).filter { ![5, 6, 7].contains($0) }.map(task))
    }

    /// Writes made in a group are one step; a store without history refuses an undo stack; the
    /// oldest steps go past the limit.
    @Test func groupsLimitsAndAStoreWithoutHistory() throws {
        let plain = TemporaryDirectory("undo-plain")
        #expect {
            try UndoStack(try Store(at: plain.url, types: [Task.self]))
        } throws: { error in
            guard case .historyUnavailable = error as? LodeError else { return false }
            return true
        }
        let directory = TemporaryDirectory("undo-group")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        let undo = try UndoStack(store, limit: 3)
        try undo.group("Import") {
            for id in 0..<3 {
                try undo.write("one") { tx in
                    try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g"))
                }
            }
        }
        #expect(undo.undoName == "Import")
        try undo.undo()
        #expect(try store.read { try $0.count(Task.self) } == 0)
        try undo.redo()
        #expect(try store.read { try $0.count(Task.self) } == 3)
        for id in 0..<4 {
            try undo.write("rank \(id)") { tx in try tx.update(Task.self, key: 0) { $0.rank = 10 + id } }
        }
        var undone = 0
        while try undo.undo() != nil { undone += 1 }
        #expect(undone == 3)
        #expect(try store.read { try $0.object(Task.self, key: 0)?.rank } == 10)
    }
}

extension UndoTimeTravelTests {
    func unavailable(_ error: any Error, saying text: String) -> Bool {
        guard case .historyUnavailable(let reason) = error as? LodeError else { return false }
        return reason.contains(text)
    }

    /// What the history cannot answer is a typed error: a version before a migration (named), one
    /// pruned, one after the version read, a query through links; an undo across a migration.
    @Test func whatTheHistoryCannotReconstructIsSaid() throws {
        let directory = TemporaryDirectory("time-travel-limits")
        let early: Int
        let undo: UndoStack
        do {
            let store = try Store(
                at: directory.url, configuration: StoreConfiguration(history: .forever),
                types: [Board.self, Card.self])
            undo = try UndoStack(store)
            try undo.write("Card") { tx in try tx.insert(try Self.card(1, "one")) }
            early = try store.read { $0.version }
            try store.write { tx in try tx.update(Card.self, key: 1) { $0.rank = 5 } }
            #expect(try store.read { try $0.object(Card.self, key: 1, asOf: early)?.rank } == 1)
            #expect {
                try store.read { try $0.object(Card.self, key: 1, asOf: $0.version + 1) }
            } throws: { unavailable($0, saying: "after the version read") }
            #expect {
                try store.objects(Card.self).filter(\.board, matches: #Predicate<Board> { $0.archived })
                    .fetch(asOf: early)
            } throws: { unavailable($0, saying: "through links") }
        }
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever),
            types: [Board.self, Card.self], migrations: [Self.ranksDoubled])
        #expect(try store.read { try $0.object(Card.self, key: 1)?.rank } == 10)
        #expect {
            try store.read { try $0.object(Card.self, key: 1, asOf: early) }
        } throws: { unavailable($0, saying: "ranks doubled") }
        #expect {
            try store.objects(Card.self).fetch(asOf: early)
        } throws: { unavailable($0, saying: "ranks doubled") }
        // Versions since the migration read.
        let after = try store.read { $0.version }
        try store.write { tx in try tx.update(Card.self, key: 1) { $0.rank = 11 } }
        #expect(try store.objects(Card.self).fetch(asOf: after).map(\.rank) == [10])
        // Pruned: kept for 5 versions, a version 100 commits back is gone.
        let pruned = TemporaryDirectory("time-travel-pruned")
        let short = try Store(
            at: pruned.url, configuration: StoreConfiguration(history: .keep(versions: 5)),
            types: [Board.self, Card.self])
        try short.write { tx in try tx.insert(try Self.card(1, "one")) }
        let old = try short.read { $0.version }
        for rank in 0..<130 { try short.write { tx in try tx.update(Card.self, key: 1) { $0.rank = rank } } }
        #expect {
            try short.read { try $0.object(Card.self, key: 1, asOf: old) }
        } throws: { unavailable($0, saying: "pruned") }
        // The step from before the migration does not undo (its store's code predates it, and the
        // history no longer holds it), and stays on the stack.
        #expect(throws: LodeError.self) { try undo.undo() }
        #expect(undo.undoName == "Card")
        #expect(try store.read { try $0.object(Card.self, key: 1)?.rank } == 11)
    }
}

extension UndoTimeTravelTests {
    /// Random writes, a migration, random writes again: every version before the migration is
    /// refused by name (what it rewrote is not in the history), every version after it reads as it
    /// was.
    @Test func timeTravelAcrossAMigrationSaysWhatItCannotReconstruct() throws {
        let directory = TemporaryDirectory("time-travel-migration")
        var random = SeededGenerator(seed: 612)
        var answers: [Int: Answers] = [:]
        func writes(_ store: Store, rounds: Range<Int>) throws {
            for round in rounds {
                try store.write { tx in try Self.randomWrite(tx, round: round, random: &random) }
                answers[try store.read { $0.version }] = try Self.answers(store)
            }
        }
        let before: Set<Int>
        do {
            let store = try Store(
                at: directory.url, configuration: StoreConfiguration(history: .forever),
                types: [Board.self, Card.self])
            try writes(store, rounds: 0..<30)
            before = Set(answers.keys)
            store.close()
        }
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever),
            types: [Board.self, Card.self], migrations: [Self.ranksDoubled])
        let migrated = try store.read { $0.version }
        answers[migrated] = try Self.answers(store)
        try writes(store, rounds: 30..<60)
        for version in answers.keys.sorted() {
            if before.contains(version) {
                #expect("as of \(version), before the migration") {
                    try Self.answers(store, asOf: version)
                } throws: { unavailable($0, saying: "ranks doubled") }
            } else {
                #expect(try Self.answers(store, asOf: version) == answers[version], "as of \(version)")
            }
        }
        #expect(before.count > 15 && answers.count - before.count > 15)
    }
}

extension UndoTimeTravelTests {
    struct Owner: Persistable, Equatable {
        var id: Int
        var name: String
        static let schema = Schema<Owner>(primaryKey: \.id)
    }

    struct Item: Persistable, Equatable {
        var id: Int
        var code: String
        var owner: Link<Owner>?
        static let schema = Schema<Item>(
            primaryKey: \.id, indexes: [.unique(\.code)], links: [.to(\.owner, onDelete: .cascade)])
    }

    /// A step whose deletion cascaded into a type this store never used: the undo writes those
    /// objects back without their Swift type — records, unique index and links — and the store
    /// that knows the type reads them whole. A type with a full-text index is refused, named.
    @Test func undoWritesBackObjectsOfATypeThisStoreNeverUsed() throws {
        let directory = TemporaryDirectory("undo-untyped")
        let owner = Owner(id: 1, name: "ann")
        do {
            let full = try Store(
                at: directory.url, configuration: StoreConfiguration(history: .forever),
                types: [Owner.self, Item.self])
            try full.write { tx in
                try tx.insert(owner)
                for id in 0..<5 { try tx.insert(Item(id: id, code: "c\(id)", owner: try Link(owner))) }
            }
            full.close()
        }
        let owners = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Owner.self])
        let undo = try UndoStack(owners)
        try undo.write("Delete owner") { tx in try tx.delete(Owner.self, key: 1) }
        #expect(try owners.read { try $0.storedRecords(of: "Item") }.isEmpty, "the cascade deleted the items")
        try undo.undo()
        owners.close()
        let full = try Store(at: directory.url, types: [Owner.self, Item.self])
        let items = try full.read { try $0.objects(Item.self).fetch() }
        #expect(
            items.map(\.id) == Array(0..<5)
                && items.allSatisfy { $0.owner?.primaryKey == (try? Link(owner).primaryKey) })
        #expect(
            try full.read { try $0.objects(Item.self).filter(#Predicate { $0.code == "c3" }).fetch() }.map(
                \.id) == [3])
        #expect(try full.read { try $0.checkIntegrity() }.problems.isEmpty)

        // A type with a full-text index is not written blind.
        let texts = TemporaryDirectory("undo-untyped-text")
        let board = Board(id: 1, name: "one")
        do {
            let both = try Store(
                at: texts.url, configuration: StoreConfiguration(history: .forever),
                types: [Board.self, Card.self])
            try both.write { tx in
                try tx.insert(board)
                try tx.insert(try Self.card(1, "zebra", board: board))
            }
            both.close()
        }
        let boards = try Store(
            at: texts.url, configuration: StoreConfiguration(history: .forever), types: [Board.self])
        let boardUndo = try UndoStack(boards)
        try boardUndo.write("Delete board") { tx in try tx.delete(Board.self, key: 1) }
        #expect {
            try boardUndo.undo()
        } throws: { error in
            guard case .textIndexUnavailable(let type, _, let reason) = error as? LodeError else {
                return false
            }
            return type == "Card" && reason.contains("use Card in this process")
        }
        #expect(boardUndo.undoName == "Delete board")
    }
}
