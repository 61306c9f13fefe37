import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// The history with values: what `history(since:)` returns, replayed from the state at its start,
/// gives the store as it was after every commit; the values before each change are the ones the
/// commit before left; tokens older than what is kept are refused.
@Suite struct HistoryTests {
    struct Note: Persistable, Equatable {
        var id: Int
        var title: String
        var rank: Int
        var tags: [String]
        var remark: String?
        static let schema = Schema<Note>(primaryKey: \.id, indexes: [.on(\.rank)])
    }

    /// The objects of a history change's side, as the fields of each key.
    typealias State = [[UInt8]: [String: CBORValue]]

    func fields(of note: Note) throws -> [String: CBORValue] {
        guard case .map(let entries) = try CBORValue(decoding: CBOREncoder().encode(note)) else { return [:] }
        return Dictionary(
            uniqueKeysWithValues: entries.map { entry in
                guard case .text(let name) = entry.key else { return ("", entry.value) }
                return (name, entry.value)
            })
    }

    func state(of store: Store) throws -> State {
        var state: State = [:]
        for note in try store.read({ try $0.objects(Note.self).fetch() }) {
            state[try KeyEncoder().encode(note.id)] = try fields(of: note)
        }
        return state
    }

    /// Applies one commit's changes to `state`, checking each change's values before against it.
    func apply(_ commit: HistoryTransaction, to state: inout State, type: String = "Note") {
        for change in commit.changes {
            #expect(change.type == type)
            switch change.kind {
            case .insert:
                #expect(state[change.key] == nil, "insert of an object that exists, at \(commit.version)")
                #expect(change.before.isEmpty)
                state[change.key] = change.after.dictionary
            case .delete:
                #expect(
                    state[change.key] == change.before.dictionary,
                    "delete at \(commit.version): before differs")
                #expect(change.after.isEmpty)
                state[change.key] = nil
            case .update:
                var fields = state[change.key] ?? [:]
                for (name, value) in change.before {
                    #expect(fields[name] == value, "update at \(commit.version): \(name) before differs")
                    fields[name] = nil
                }
                for (name, value) in change.after { fields[name] = value }
                #expect(!change.before.isEmpty || !change.after.isEmpty)
                state[change.key] = fields
            }
        }
    }

    /// How many inserts the history holds by reference (without their values) and with them.
    static func insertForms(_ store: Store) throws -> (byReference: Int, withValues: Int) {
        try store.read { tx in
            var forms = (byReference: 0, withValues: 0)
            for entry in try tx.lmdb.allEntries(in: try tx.database(named: "@changes", kind: .plain))
            where entry.key.count == 9 {
                try entry.value.withUnsafeBytes { bytes in
                    try HistoryLayout.walkChanges(bytes, version: 0) { change in
                        guard change.kind == .insert else { return }
                        if change.after == nil { forms.byReference += 1 } else { forms.withValues += 1 }
                    }
                }
            }
            return forms
        }
    }

    /// Replayed from the start, the history gives the records after every commit — with the inserts'
    /// values kept in the entries, and read back from the records (a limit of 1 records every
    /// commit's inserts by reference once it makes two).
    @Test(arguments: [256, 1])
    func replayingTheHistoryGivesTheStoreAfterEveryCommit(insertValuesLimit: Int) throws {
        let directory = TemporaryDirectory("history-oracle")
        var configuration = StoreConfiguration(history: .forever)
        configuration.historyInsertValuesLimit = insertValuesLimit
        let store = try Store(at: directory.url, configuration: configuration, types: [Note.self])
        var random = SeededGenerator(seed: 61)
        let start = try store.read { $0.historyToken }
        let initial = try state(of: store)
        var states: [Int: State] = [:]
        for round in 0..<120 {
            let version = try store.write { tx -> Int in
                tx.author = round % 3 == 0 ? "author \(round)" : nil
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    let id = Int.random(in: 0..<30, using: &random)
                    let existing = try tx.object(Note.self, key: id)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<4:
                        let note = Note(
                            id: id, title: "t\(Int.random(in: 0..<5, using: &random))",
                            rank: Int.random(in: 0..<4, using: &random),
                            tags: (0..<Int.random(in: 0..<3, using: &random)).map { "g\($0)" },
                            remark: Bool.random(using: &random) ? nil : "r\(round)")
                        try tx.upsert(note)
                    case 4..<7:
                        guard existing != nil else { continue }
                        try tx.update(Note.self, key: id) { note in
                            note.rank += 1
                            if Bool.random(using: &random) { note.remark = note.remark == nil ? "set" : nil }
                        }
                    case 7..<9:
                        if existing != nil { try tx.delete(Note.self, key: id) }
                    default:
                        // Changes inside a savepoint that rolls back leave no history.
                        _ = try? tx.savepoint { inner -> Int in
                            try inner.upsert(Note(id: 99, title: "gone", rank: 0, tags: [], remark: nil))
                            throw CancellationError()
                        }
                    }
                }
                if round == 60 { _ = try tx.deleteAll(Note.self) }
                return tx.version
            }
            states[version] = try state(of: store)
        }
        let history = try store.read { try $0.history(since: start) }
        #expect(history.map(\.version) == history.map(\.version).sorted())
        #expect(Set(history.map(\.version)).isSubset(of: Set(states.keys)))
        var replayed = initial
        var checked = 0
        for commit in history {
            apply(commit, to: &replayed)
            #expect(replayed == states[commit.version], "after version \(commit.version)")
            checked += 1
        }
        #expect(checked > 100)
        #expect(replayed == (try state(of: store)))
        let forms = try Self.insertForms(store)
        #expect(forms.withValues > 0)
        #expect((forms.byReference > 20) == (insertValuesLimit == 1), "\(forms)")
        // Commits that changed nothing listed are not in it; every listed one carries its author.
        for commit in history where commit.author != nil {
            #expect(commit.author?.hasPrefix("author ") == true)
        }
        #expect(history.contains { $0.author != nil })
        // A history read from the middle starts there.
        let middle = history[history.count / 2]
        #expect(try store.read { try $0.history(since: middle.token) }.first?.version ?? 0 > middle.version)
        // Of one object: only its changes.
        let key = try KeyEncoder().encode(3)
        let ofThree = try store.read { try $0.history(of: "Note", key: key, since: start) }
        #expect(ofThree.allSatisfy { $0.changes.allSatisfy { $0.key == key } })
        #expect(
            ofThree.map(\.version)
                == history.filter { $0.changes.contains { $0.key == key } }.map(\.version))
    }

    /// The records of `type` as stored, each as its fields.
    func storedState(of store: Store, type: String) throws -> State {
        try store.read { tx in
            var state: State = [:]
            for entry in try tx.lmdb.allEntries(in: try tx.database(named: type, kind: .plain)) {
                guard case .map(let entries) = try CBORValue(decoding: entry.value) else { continue }
                state[entry.key] = Dictionary(
                    uniqueKeysWithValues: entries.map { field in
                        guard case .text(let name) = field.key else { return ("", field.value) }
                        return (name, field.value)
                    })
            }
            return state
        }
    }

    /// A generated model's one-field updates (which patch the stored record in place) and whole
    /// updates, inserts and deletes: the history replayed gives the records as stored after every
    /// commit, and within one transaction an object changed several ways is one net change.
    @Test func fieldUpdatesInPlaceAreInTheHistoryToo() throws {
        let directory = TemporaryDirectory("history-fields")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        var random = SeededGenerator(seed: 62)
        let start = try store.read { $0.historyToken }
        var states: [Int: State] = [:]
        for round in 0..<80 {
            let version = try store.write { tx -> Int in
                for _ in 0..<Int.random(in: 1...5, using: &random) {
                    let id = Int.random(in: 0..<20, using: &random)
                    let exists = try tx.object(Task.self, key: id) != nil
                    switch Int.random(in: 0..<8, using: &random) {
                    case 0..<2 where !exists:
                        try tx.insert(Task(id: id, title: "t\(round)", rank: round, done: false, group: "g"))
                    case 2..<4 where exists:
                        try tx.update(Task.self, key: id, \.rank) { $0 += 1 }
                    case 4 where exists:
                        try tx.update(Task.self, key: id, \.title) { $0 = "renamed \(round)" }
                    case 5 where exists:
                        try tx.update(Task.self, key: id) { $0.done.toggle() }
                    case 6 where exists:
                        _ = try tx.delete(Task.self, key: id)
                    default:
                        continue
                    }
                }
                return tx.version
            }
            states[version] = try storedState(of: store, type: "Task")
        }
        var replayed: State = [:]
        let history = try store.read { try $0.history(since: start) }
        for commit in history {
            apply(commit, to: &replayed, type: "Task")
            #expect(replayed == states[commit.version], "after version \(commit.version)")
        }
        #expect(history.count > 40)
        #expect(replayed == (try storedState(of: store, type: "Task")))
    }

    @Test func aStoreWithoutHistoryAndAPrunedTokenAreTypedErrors() throws {
        let directory = TemporaryDirectory("history-errors")
        do {
            let store = try Store(at: directory.url, types: [Note.self])
            try store.write { tx in try tx.insert(Note(id: 1, title: "a", rank: 0, tags: [], remark: nil)) }
            #expect {
                try store.read { try $0.history() }
            } throws: { error in
                guard case .historyUnavailable(let reason) = error as? LodeError else { return false }
                return reason.contains("keeps no history")
            }
        }
        // Kept for 10 versions: after 200 commits, a token from the start is refused, a recent one
        // reads.
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .keep(versions: 10)),
            types: [Note.self])
        let start = try store.read { $0.historyToken }
        for id in 0..<200 {
            try store.write { tx in
                try tx.upsert(Note(id: id % 7, title: "\(id)", rank: id, tags: [], remark: nil))
            }
        }
        #expect {
            try store.read { try $0.history(since: start) }
        } throws: { error in
            guard case .historyUnavailable(let reason) = error as? LodeError else { return false }
            return reason.contains("pruned")
        }
        let recent = try store.read { HistoryToken(version: $0.version - 5) }
        #expect(try store.read { try $0.history(since: recent) }.count == 5)
        // Everything the history holds reads from nil.
        let kept = try store.read { try $0.history() }
        #expect(!kept.isEmpty && kept.count <= 10 + 64)
    }

    /// Kept within a size: the oldest entries go once the pages (the history's and the change log's,
    /// which share them) pass it; what is left is the newest history, without a gap, and the change
    /// log still serves live results.
    @Test func aHistoryKeptWithinBytesDropsItsOldestEntries() throws {
        let directory = TemporaryDirectory("history-bytes")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .keep(bytes: 256 << 10)),
            types: [Note.self])
        let start = try store.read { $0.historyToken }
        let filler = String(repeating: "x", count: 2_000)
        for id in 0..<400 {
            try store.write { tx in
                try tx.upsert(Note(id: id % 50, title: "\(id) \(filler)", rank: id, tags: [], remark: nil))
            }
        }
        #expect(throws: LodeError.self) { try store.read { try $0.history(since: start) } }
        let kept = try store.read { try $0.history() }
        let now = try store.read { $0.version }
        #expect(kept.count > 10 && kept.count < 300, "\(kept.count) of 400 kept")
        #expect(kept.last?.version == now)
        #expect(kept.map(\.version) == Array((now - kept.count + 1)...now), "no gap")
        #expect(try store.read { try $0.commits(after: now - 3) }.commits.count == 3)
    }

    @Test func anotherProcessCommitsAreInTheHistory() throws {
        let directory = TemporaryDirectory("history-process")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Note.self])
        let start = try store.read { $0.historyToken }
        let helper = builtTool("lode-test-helper")
        for operation in ["insert", "update"] {
            let result = try shell("'\(helper)' commit-one '\(directory.url.path)' \(operation) 7")
            #expect(result.status == 0, "\(result.err)")
        }
        let history = try store.read { try $0.history(since: start) }
        #expect(history.map { $0.changes.map(\.kind) } == [[.insert], [.update]])
        #expect(history.first?.changes.first?.type == "Task")
        #expect(history.first?.changes.first?.after["title"] == .text("task 7"))
        #expect(history.last?.changes.first?.before == ["title": .text("task 7"), "rank": .unsigned(7)])
        #expect(
            history.last?.changes.first?.after == ["title": .text("task 7 (edited)"), "rank": .unsigned(107)])
    }

    /// A writer that found no history skips looking again while no one else commits; once history is
    /// turned on (by another store on the file, here), its next commit is recorded.
    @Test func aWriterThatSawNoHistoryRecordsOnceAnotherTurnsItOn() throws {
        let directory = TemporaryDirectory("history-turned-on")
        let plain = try Store(at: directory.url, types: [Note.self])
        for id in 0..<3 {
            try plain.write { tx in try tx.insert(Note(id: id, title: "a", rank: 0, tags: [], remark: nil)) }
        }
        let keeping = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Note.self])
        try plain.write { tx in try tx.insert(Note(id: 10, title: "b", rank: 1, tags: [], remark: nil)) }
        let history = try keeping.read { try $0.history() }
        #expect(history.map { $0.changes.map(\.kind) } == [[.insert]])
        #expect(history.first?.changes.first?.after["title"] == .text("b"))
    }

    /// A store of format 6 kept its history in `@history`: a reader says to open it for writing once,
    /// and the first writer moves every entry into `@changes`, so the history reads as before.
    @Test func aWriterMovesTheHistoryOfFormat6IntoTheChangeLog() throws {
        let directory = TemporaryDirectory("history-format6")
        var store: Store? = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Note.self])
        let start = try store!.read { $0.historyToken }
        for round in 0..<5 {
            try store!.write { tx in
                try tx.upsert(Note(id: round % 3, title: "n\(round)", rank: round, tags: [], remark: nil))
            }
        }
        let history = try store!.read { try $0.history(since: start) }
        store!.close()
        store = nil
        // Back to format 6's layout: the entries in @history under 8-byte keys (the environment
        // closes at the end of the block, before the store opens again).
        do {
            let environment = try LMDB.Environment.open(at: directory.url.path)
            try environment.write { txn in
                let changes = try txn.database(named: "@changes", create: false)
                let former = try txn.database(named: "@history", kind: .plain)
                for entry in try txn.allEntries(in: changes) where entry.key.count == 9 {
                    try txn.put(entry.value, forKey: Array(entry.key.prefix(8)), in: former)
                    try txn.delete(entry.key, in: changes)
                }
                try txn.put(
                    try CBOREncoder().encode(6), forKey: Array("format".utf8),
                    in: try txn.database(named: "@meta"))
            }
        }
        var readOnly = StoreConfiguration()
        readOnly.readOnly = true
        let reader = try Store(at: directory.url, configuration: readOnly, types: [Note.self])
        #expect {
            try reader.read { try $0.history(since: start) }
        } throws: { error in
            guard case .historyUnavailable(let reason) = error as? LodeError else { return false }
            return reason.contains("open it once for writing")
        }
        reader.close()
        let writer = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Note.self])
        #expect(try writer.read { try $0.history(since: start) } == history)
        try writer.write { tx in try tx.update(Note.self, key: 1) { $0.rank = 99 } }
        #expect(try writer.read { try $0.history(since: start) }.count == history.count + 1)
        let (former, format) = try writer.read { tx in
            (
                try tx.lmdb.get(Array("@history".utf8), in: tx.lmdb.environment.mainDatabase),
                try tx.lmdb.get(Array("format".utf8), in: writer.meta)
            )
        }
        #expect(former == nil)
        #expect(format == (try CBOREncoder().encode(7)))
    }

    /// In an encrypted store the history is sealed like the change log: it reads back with the key,
    /// and its values are nowhere in the file in the clear.
    @Test func anEncryptedStoreSealsItsHistory() throws {
        let directory = TemporaryDirectory("history-encrypted")
        let key = try StoreKey.random()
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(encryption: .key(key), history: .forever),
            types: [Note.self])
        let start = try store.read { $0.historyToken }
        try store.write { tx in
            try tx.insert(Note(id: 1, title: "plaintext-marker-4711", rank: 0, tags: [], remark: nil))
        }
        try store.write { tx in try tx.update(Note.self, key: 1) { $0.title = "second-marker-0815" } }
        let history = try store.read { try $0.history(since: start) }
        #expect(history.map { $0.changes.map(\.kind) } == [[.insert], [.update]])
        #expect(history.last?.changes.first?.before["title"] == .text("plaintext-marker-4711"))
        store.close()
        let file = try Data(contentsOf: directory.url.appendingPathComponent("data.mdb"))
        for marker in ["plaintext-marker-4711", "second-marker-0815"] {
            #expect(file.range(of: Data(marker.utf8)) == nil, "\(marker) is in the file in the clear")
        }
    }

    @Test func aMigrationStartsTheHistoryAgain() throws {
        let directory = TemporaryDirectory("history-migration")
        let start: HistoryToken
        do {
            let store = try Store(
                at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Note.self])
            start = try store.read { $0.historyToken }
            try store.write { tx in try tx.insert(Note(id: 1, title: "a", rank: 0, tags: [], remark: nil)) }
        }
        let migration = Migration("ranks doubled") { context in
            try context.updateRecords(of: "Note") { record in
                if case .unsigned(let rank)? = record["rank"] { record["rank"] = .unsigned(rank * 2) }
                return .keep
            }
        }
        let store = try Store(at: directory.url, types: [Note.self], migrations: [migration])
        try store.write { tx in try tx.insert(Note(id: 2, title: "b", rank: 0, tags: [], remark: nil)) }
        #expect {
            try store.read { try $0.history(since: start) }
        } throws: { error in
            guard case .historyUnavailable(let reason) = error as? LodeError else { return false }
            return reason.contains("ranks doubled")
        }
        let after = try store.read { try $0.history() }
        #expect(after.map { $0.changes.map(\.kind) } == [[.insert]])
        // The entries before the migration are gone with it: only the one after is stored.
        let stored = try store.read { tx in
            try tx.lmdb.allEntries(in: try tx.database(named: "@changes", kind: .plain)).filter {
                $0.key.count == 9
            }.count
        }
        #expect(stored == 1)
    }
}
