// The writers the power-cut tests run under the power-cut layer, and the checker that opens each
// crash state as an app would (docs/POWERCUT.md).
import Dispatch
import Foundation
import Lode
import LodeInspection
import LodeTestSupport
import Synchronization

/// The durability modes by name, as the tests pass them.
func durability(named name: String) throws -> Store.Durability {
    guard let mode = Store.Durability.allCases.first(where: { "\($0)" == name }) else {
        throw PowerCutError("no durability mode \(name)")
    }
    return mode
}

extension Store.Durability {
    var writesThroughMap: Bool { self == .writeMap || self == .writeMapAsync || self == .writeMapNoSync }
}

/// Acknowledgements go to a marks file through `write(2)`, which the layer follows, so each lands in
/// the trace exactly among the file operations.
struct Marks {
    let descriptor: Int32

    init(_ path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { throw PowerCutError("cannot open \(path)") }
    }

    func acknowledge(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

/// The objects writer `w` of the group workload has after its commit `k`: one task per commit, the
/// one before every third commit's deleted by it.
func groupTasks(writer w: Int, after k: Int) -> Set<Int> {
    var ids: Set<Int> = []
    guard k > 0 else { return ids }
    for j in 1...k {
        ids.insert(10_000 + w * 100 + j)
        if j % 3 == 0 { ids.remove(10_000 + w * 100 + j - 1) }
    }
    return ids
}

/// How many commits the single-writer workload makes, and the groups of the group workload.
let powerCutCommits = 40
let groupWriters = 8
let groupCommits = 6

struct Rollback: Error {}

/// `powercut-writer WORKLOAD MODE DIR MARKS`: the workload's writes, each acknowledged in MARKS
/// after it returned.
func powerCutWriter(_ workload: String, mode: Store.Durability, path: String, marks: Marks) throws {
    switch workload {
    case "commits":
        // Single commits of 1 to 5 objects, 100-object and 1,000-object commits that grow a map
        // started at 64 KiB, a 200 KB record; with nested transactions, a savepoint rolled back and
        // one kept in each commit. The store keeps history: each commit's values recorded with it.
        let store = try Store(
            at: URL(fileURLWithPath: path),
            configuration: StoreConfiguration(durability: mode, initialMapSize: 64 << 10, history: .forever),
            types: [Task.self, Counter.self, Journal.self])
        for n in 1...powerCutCommits {
            try store.write { tx in
                try writeCrashPlanTasks(of: n, in: tx)
                if mode.writesThroughMap {
                    try tx.upsert(Counter(name: "commits", value: n))
                } else {
                    do {
                        try tx.savepoint { inner in
                            try inner.upsert(
                                Task(id: 900_000 + n, title: "rolled back", rank: n, done: false, group: "g0")
                            )
                            throw Rollback()
                        }
                    } catch is Rollback {}
                    try tx.savepoint { inner in try inner.upsert(Counter(name: "commits", value: n)) }
                }
            }
            marks.acknowledge("ack \(n)")
        }
    case "group":
        // Eight threads writing at once through group commit: their writes share commits and syncs.
        let store = try Store(
            at: URL(fileURLWithPath: path),
            configuration: StoreConfiguration(durability: mode, initialMapSize: 256 << 10),
            types: [Task.self, Counter.self])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: groupWriters) { w in
            do {
                for k in 1...groupCommits {
                    try store.groupedWrite { tx in
                        try tx.upsert(
                            Task(
                                id: 10_000 + w * 100 + k, title: "w\(w) k\(k)", rank: k, done: false,
                                group: "g\(w)"))
                        if k % 3 == 0 { try tx.delete(Task.self, key: 10_000 + w * 100 + k - 1) }
                        try tx.upsert(Counter(name: "w\(w)", value: k))
                    }
                    marks.acknowledge("w\(w) \(k)")
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        if let failure = failures.withLock({ $0.first }) { throw PowerCutError(failure) }
    case "migrate":
        // A store of `Item`s made before the trace is reshaped by a migration when it is opened.
        _ = try Store(
            at: URL(fileURLWithPath: path),
            configuration: StoreConfiguration(durability: mode, initialMapSize: 64 << 10), types: [],
            migrations: [reshapeItems])
        marks.acknowledge("migrated")
    case "key-change":
        // The source store (`powercut-source`) encrypted in place.
        try Store.changeEncryption(
            at: URL(fileURLWithPath: path), from: nil, to: .key(try powerCutKey()), fileMode: 0o600)
        marks.acknowledge("changed")
    default:
        throw PowerCutError("no workload \(workload)")
    }
}

/// `Item` after the migration, as the app's next version reads it.
struct MigratedItem: Persistable {
    var id: Int
    var title: String
    var value: Int
    var note: String
    static let schema = Schema<MigratedItem>(name: "Item", primaryKey: \.id, indexes: [.on(\.value)])
}

/// The number of `Item`s the migration workload's store is seeded with.
let migrationItems = 300

/// What one open of a crash state found.
enum Opened {
    /// The store opened and holds exactly the state `state` names; `check` found nothing.
    case consistent(String)
    /// The store is not there (its creation was lost).
    case absent
}

/// Opens the store in `directory` as an app would and compares everything it holds with the
/// workload's model. Throws `Wrong` when the store opened but is not a state the workload made.
struct Wrong: Error, CustomStringConvertible {
    let description: String
}

func openCrashState(_ workload: String, mode: Store.Durability, directory: String, pageCheck: Bool) throws
    -> Opened
{
    let path = directory + "/store"
    guard FileManager.default.fileExists(atPath: path + "/data.mdb") else { return .absent }
    let configuration = StoreConfiguration(
        durability: mode, initialMapSize: 64 << 10, pageCheck: pageCheck ? .always : .whenUntrusted)
    switch workload {
    case "commits":
        let store = try Store(
            at: URL(fileURLWithPath: path), configuration: configuration,
            types: [Task.self, Counter.self, Journal.self])
        defer { store.close() }
        let (counter, tasks, report, history, journal, found) = try store.read { tx in
            (
                try tx.object(Counter.self, key: "commits")?.value ?? 0,
                try tx.objects(Task.self).fetch(),
                try tx.checkIntegrity(),
                try tx.commits(after: max(tx.version - 1, -1)),
                try tx.objects(Journal.self).fetch().map(\.id),
                try tx.objects(Journal.self).matching("entry").fetch().map(\.id).sorted()
            )
        }
        guard report.problems.isEmpty else { throw Wrong(description: "check: \(report.problems.prefix(3))") }
        // The full-text index finds exactly the journal entries the commit left.
        guard found == journal else {
            throw Wrong(
                description: "commit \(counter): the search finds \(found), the journal holds \(journal)")
        }
        var model = CrashModel()
        model.advance(to: counter)
        guard tasks.count == model.tasks.count else {
            throw Wrong(
                description: "commit \(counter): \(tasks.count) tasks, the model has \(model.tasks.count)")
        }
        for task in tasks {
            guard let writtenBy = model.tasks[task.id], task.rank == writtenBy,
                task.title == CrashPlan.title(writtenBy, task.id)
            else { throw Wrong(description: "commit \(counter): task \(task.id) is \(task.rank)") }
        }
        // The change log's last commit is the one the counter names, with its changes.
        if counter > 0 {
            guard let last = history.commits.last else { throw Wrong(description: "the change log is empty") }
            let plan = CrashPlan.commit(counter)
            var before = CrashModel()
            before.advance(to: counter - 1)
            let deleted = plan.deletes.filter { before.tasks[$0] != nil }.count
            let taskChanges = last.changes.filter { $0.type == "Task" }
            let count = taskChanges.reduce(0) { sum, change in
                if case .bulk(let count) = change.kind { sum + count } else { sum + 1 }
            }
            guard count == plan.upserts.count + deleted else {
                throw Wrong(
                    description:
                        "the change log's last commit changes \(count) tasks; commit \(counter) changed "
                        + "\(plan.upserts.count + deleted)")
            }
        }
        try checkHistory(store, counter: counter)
        try checkLiveResults(store)
        return .consistent("\(counter)")
    case "group":
        let store = try Store(
            at: URL(fileURLWithPath: path), configuration: configuration, types: [Task.self, Counter.self])
        defer { store.close() }
        let (counters, tasks, report) = try store.read { tx in
            (
                try (0..<groupWriters).map { try tx.object(Counter.self, key: "w\($0)")?.value ?? 0 },
                try tx.objects(Task.self).fetch(),
                try tx.checkIntegrity()
            )
        }
        guard report.problems.isEmpty else { throw Wrong(description: "check: \(report.problems.prefix(3))") }
        var expected: Set<Int> = []
        for (w, k) in counters.enumerated() { expected.formUnion(groupTasks(writer: w, after: k)) }
        guard Set(tasks.map(\.id)) == expected, tasks.count == expected.count else {
            throw Wrong(description: "writers at \(counters): the tasks are not theirs")
        }
        for task in tasks {
            let w = (task.id - 10_000) / 100
            let k = (task.id - 10_000) % 100
            guard task.title == "w\(w) k\(k)", task.rank == k else {
                throw Wrong(description: "task \(task.id) is \(task.title)")
            }
        }
        try checkLiveResults(store)
        return .consistent(counters.map(String.init).joined(separator: ","))
    case "migrate":
        // The app's next version: the migration runs again if it did not reach the disk.
        let ran = Mutex(false)
        let again = Migration("2: items reshaped") { context in
            ran.withLock { $0 = true }
            try context.renameField("name", to: "title", in: "Item")
            try context.convertField("value", in: "Item") { value in
                guard case .unsigned(let number) = value else { return value }
                return .unsigned(number * 2)
            }
            try context.addField("note", to: "Item", default: .text("migrated"))
        }
        let store = try Store(
            at: URL(fileURLWithPath: path), configuration: configuration, types: [MigratedItem.self],
            migrations: [again])
        defer { store.close() }
        let (items, report) = try store.read { tx in
            (try tx.objects(MigratedItem.self).fetch(), try tx.checkIntegrity())
        }
        guard report.problems.isEmpty else { throw Wrong(description: "check: \(report.problems.prefix(3))") }
        guard items.count == migrationItems,
            items.allSatisfy({ $0.title == "item \($0.id)" && $0.value == 2 * $0.id && $0.note == "migrated" }
            )
        else { throw Wrong(description: "\(items.count) items, not all reshaped once") }
        return .consistent(ran.withLock { $0 } ? "migrated at reopen" : "migrated before")
    case "key-change":
        // Whole under the old key (none) or under the new one, never neither.
        do {
            try checkCopy(path, configuration: configuration)
            return .consistent("old")
        } catch LodeError.encryption(_, .keyMissing) {
            var encrypted = configuration
            encrypted.encryption = .key(try powerCutKey())
            try checkCopy(path, configuration: encrypted)
            return .consistent("new")
        }
    case "load":
        // The store `lode-dump load` made: every task of the source.
        try checkCopy(path, configuration: configuration)
        return .consistent("complete")
    case "compact":
        // The source stays whole; the compacted copy is whole or not there.
        try checkCopy(path, configuration: configuration)
        let copy = directory + "/copy"
        guard FileManager.default.fileExists(atPath: copy + "/data.mdb") else {
            return .consistent("without copy")
        }
        try checkCopy(copy, configuration: configuration)
        return .consistent("with copy")
    default:
        throw PowerCutError("no workload \(workload)")
    }
}

/// The history of a crash state of the `commits` workload agrees with its data: an entry for every
/// commit since the store began keeping history and none after the last one — no change without its
/// history, none recorded that was not committed — and, replayed from an empty store, the history
/// gives every record as it is.
func checkHistory(_ store: Store, counter: Int) throws {
    typealias Fields = [String: CBORValue]
    let types = ["Task", "Counter", "Journal"]
    let (keeps, history, version, records) = try store.read { tx in
        (
            try tx.keepsHistory, try tx.keepsHistory ? tx.history() : [], tx.version,
            try types.map { type -> [[UInt8]: Fields] in
                let stored: [StoredRecord]
                do {
                    stored = try tx.storedRecords(of: type)
                } catch LodeError.typeNotFound {
                    stored = []
                }
                var fields: [[UInt8]: Fields] = [:]
                for record in stored {
                    guard case .map(let entries) = try CBORValue(decoding: record.bytes) else { continue }
                    fields[record.key] = Dictionary(
                        uniqueKeysWithValues: entries.compactMap { entry in
                            guard case .text(let name) = entry.key else { return nil }
                            return (name, entry.value)
                        })
                }
                return fields
            }
        )
    }
    guard keeps else {
        // Turned on by the writer's first transaction, before any of its commits.
        guard counter == 0 else { throw Wrong(description: "commit \(counter): the store keeps no history") }
        return
    }
    var replayed = Array(repeating: [[UInt8]: Fields](), count: types.count)
    var previous = 0
    for commit in history {
        guard commit.version > previous, commit.version <= version else {
            throw Wrong(
                description: "history entry \(commit.version) after \(previous), at version \(version)")
        }
        previous = commit.version
        for change in commit.changes {
            guard let type = types.firstIndex(of: change.type) else { continue }
            switch change.kind {
            case .insert: replayed[type][change.key] = change.after.dictionary
            case .delete: replayed[type][change.key] = nil
            case .update:
                var fields = replayed[type][change.key] ?? [:]
                for name in change.before.keys { fields[name] = nil }
                for (name, value) in change.after { fields[name] = value }
                replayed[type][change.key] = fields
            }
        }
    }
    if counter > 0, previous != version {
        throw Wrong(
            description: "commit \(counter) (version \(version)) has no history; the last is \(previous)")
    }
    for (index, type) in types.enumerated() where replayed[index] != records[index] {
        throw Wrong(description: "commit \(counter): the history replayed does not give the \(type) records")
    }
    // Nothing recorded beyond the last commit.
    var newest = 0
    try store.inspect { tx in
        // History entries are the 9-byte keys of `@changes` (the version, then `h`).
        try tx.forEachRawEntry(ofDatabase: "@changes") { key, _ in
            guard key.count == 9, key[8] == 0x68 else { return }
            newest = max(newest, key.prefix(8).reduce(0) { $0 << 8 | Int($1) })
        }
    }
    if newest > version {
        throw Wrong(description: "the history holds version \(newest); the store is at \(version)")
    }
}

/// Opens the store at `path` and finds every task of the source in it.
func checkCopy(_ path: String, configuration: StoreConfiguration) throws {
    let store = try Store(at: URL(fileURLWithPath: path), configuration: configuration, types: [Task.self])
    defer { store.close() }
    let (tasks, report) = try store.read { tx in (try tx.objects(Task.self).fetch(), try tx.checkIntegrity())
    }
    guard report.problems.isEmpty else {
        throw Wrong(description: "\(path): check: \(report.problems.prefix(3))")
    }
    guard tasks.count == sourceTasks, tasks.allSatisfy({ $0.title == "task \($0.id)" }) else {
        throw Wrong(description: "\(path): \(tasks.count) tasks of \(sourceTasks)")
    }
}

/// `powercut-items DIR`: the store of `Item`s the migration workload reshapes, on a small map (a
/// write-map mode maps, and the layer follows, all of it).
func powerCutItems(_ path: String) throws {
    let store = try Store(
        atPath: path, configuration: StoreConfiguration(initialMapSize: 64 << 10), types: [Item.self],
        migrations: [])
    try store.write { tx in
        for id in 0..<migrationItems { try tx.insert(Item(id: id, name: "item \(id)", value: id)) }
    }
    store.close()
}

/// The key the `key-change` workload encrypts its store with (a test's fixed key).
func powerCutKey() throws -> StoreKey { try StoreKey(bytes: (0..<32).map { UInt8($0 * 7 + 3) }) }

/// How many tasks the store that `load` and `compact` copy holds (`powercut-source`).
let sourceTasks = 2_500

/// `powercut-source DIR`: the store `load` and `compact` copy, with free pages to compact away.
func powerCutSource(_ path: String) throws {
    let store = try Store(
        atPath: path, configuration: StoreConfiguration(initialMapSize: 1 << 20), types: [Task.self])
    try store.write { tx in
        for id in 0..<(sourceTasks * 2) {
            try tx.insert(Task(id: id, title: "task \(id)", rank: id % 97, done: false, group: "g\(id % 7)"))
        }
    }
    try store.write { tx in for id in sourceTasks..<(sourceTasks * 2) { try tx.delete(Task.self, key: id) } }
    store.close()
}

/// The ids of `results`, or `[-1]` when they cannot be read (which the comparison then reports).
private func ids(_ results: Results<Task>) -> [Int] {
    do { return try results.map(\.id) } catch { return [-1] }
}

/// Live results made after reopening show a fresh read, and follow a commit with an exact change.
func checkLiveResults(_ store: Store) throws {
    func query() -> Results<Task> {
        store.objects(Task.self).filter(#Predicate { $0.group == "g0" }).sorted(by: \.rank)
    }
    let results = query()
    let deliveries = Mutex<[([Int], CollectionChange?)]>([])
    let delivered = DispatchSemaphore(value: 0)
    let token = results.observe { change in
        switch change {
        case .initial(let now):
            deliveries.withLock { $0.append((ids(now), nil)) }
        case .update(let now, let change):
            deliveries.withLock { $0.append((ids(now), change)) }
        case .error(let error):
            deliveries.withLock { $0.append(([-2], nil)) }
            FileHandle.standardError.write(Data("live results: \(error)\n".utf8))
        }
        delivered.signal()
    }
    defer { token.cancel() }
    guard delivered.wait(timeout: .now() + 30) == .success else {
        throw Wrong(description: "no initial delivery")
    }
    let fresh = try results.map(\.id)
    guard deliveries.withLock({ $0.first?.0 }) == fresh else {
        throw Wrong(description: "live results differ")
    }
    try store.write { tx in
        try tx.upsert(Task(id: 777_777, title: "after", rank: 3, done: false, group: "g0"))
    }
    guard delivered.wait(timeout: .now() + 30) == .success else {
        throw Wrong(description: "no update delivered")
    }
    let (before, after, change) = deliveries.withLock { ($0[0].0, $0[1].0, $0[1].1) }
    guard let change else { throw Wrong(description: "live results: an error instead of the update") }
    var replayed = before
    for index in (change.deletions + change.moves.map(\.from)).sorted(by: >) { replayed.remove(at: index) }
    let inserted = (change.insertions + change.moves.map(\.to)).sorted()
    for index in inserted where index <= replayed.count { replayed.insert(after[index], at: index) }
    guard replayed == after, after == (try query().map(\.id)) else {
        throw Wrong(
            description: "live results' change \(change) leads from \(before) to \(replayed), not to \(after)"
        )
    }
}

/// `powercut-check WORKLOAD MODE STATE…`: for each state directory, a line per open (with and
/// with the page check always and with the default configuration, each on its own copy — a copy is
/// not the file Lode last closed, so the default checks it too): `STATE check|default absent`, `… opened X`,
/// `… refused MESSAGE` or `… wrong MESSAGE`. A state that kills the process is one whose line
/// "begin" has no outcome after it.
func powerCutCheck(_ workload: String, mode: Store.Durability, states: [String]) throws {
    let manager = FileManager.default
    for state in states {
        for pageCheck in [true, false] {
            let label = "\(state) \(pageCheck ? "check" : "default")"
            let copy = state + (pageCheck ? ".check" : ".default")
            try? manager.removeItem(atPath: copy)
            try manager.copyItem(atPath: state, toPath: copy)
            // A power cut means the machine booted again: markers of sessions that wrote without
            // syncing name an earlier boot.
            for directory in [copy + "/store", copy + "/copy"] {
                for name in (try? manager.contentsOfDirectory(atPath: directory)) ?? []
                where name.hasPrefix(".unsynced-") {
                    try Data("an earlier boot\n".utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
                }
            }
            print("\(label) begin")
            fflush(nil)
            let outcome: String
            do {
                switch try openCrashState(workload, mode: mode, directory: copy, pageCheck: pageCheck) {
                case .absent: outcome = "absent"
                case .consistent(let state): outcome = "opened \(state)"
                }
            } catch let wrong as Wrong {
                outcome = "wrong \(wrong.description)"
            } catch {
                outcome = "refused \(error)".replacingOccurrences(of: "\n", with: " ")
            }
            print("\(label) \(outcome)")
            fflush(nil)
            try? manager.removeItem(atPath: copy)
        }
    }
}
