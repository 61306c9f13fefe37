// A second process for Lode's tests.
// Usage:
//   lode-test-helper write DIR FIRST COUNT — inserts tasks FIRST..<FIRST+COUNT, one commit each, then
//     updates and deletes some of them.
//   lode-test-helper commit-one DIR insert|update|delete ID — one commit of the task ID: inserted, its title
//     edited and its rank raised by 100, or deleted (Lode Studio's
//     live tests: a commit from another process).
//   lode-test-helper readme-observe — the observe example of the "Following the store" article, as a
//     plain command-line program with no main loop, on ./todos.
//   lode-test-helper readme-first-use — the README's first-use example as written, on ./todos;
//     readme-live — then the synchronous live results of "Following the store" on it.
//   lode-test-helper read-all DIR [--as-if-closed-cleanly] — opens the store with the default
//     configuration (a file not known to be the one Lode left is checked first) and reads every
//     object, an index range and the integrity walk; the option first records a clean close of the
//     file as it is (damage in place after a clean close, which is not checked).
//   lode-test-helper check-without-types DIR — opens the store with no types, in a process that
//     declares no full-text index, and prints each type's full-text indexes with their document
//     counts, what the integrity check did not check, and its problems.
//   lode-test-helper migration-seed DIR COUNT — a store of COUNT items; migration-run DIR — opens it
//     with a migration that reshapes every item, printing "migrating" when it starts, "done" at the end.
//   lode-test-helper lag-and-exit DIR LAG — keeps results while committing LAG times with
//     versionLagWarning LAG, then exits at once; hold-reader DIR — reads results and waits to be killed.
//   lode-test-helper powercut-writer WORKLOAD MODE DIR MARKS, powercut-check WORKLOAD MODE STATE…,
//     powercut-source DIR, powercut-items DIR — the writers, checker and source store of the power-cut tests (PowerCut.swift).
//   lode-test-helper crash-writer DIR — commits the deterministic sequence of `CrashPlan` from where
//     the store is, printing "ack N" after commit N returned, until it is killed.
//   lode-test-helper starved-pool DIR — holds every thread of the cooperative pool and checks that
//     Lode's deliveries on queues still arrive (StarvedPool.swift).
//   lode-test-helper fork-nonces — nonces of seals made in a forked child and in its parent
//     (ForkNonces.swift).
//   lode-test-helper cascade-writer DIR — builds linked projects and deletes them by cascade
//     (CascadeWriter.swift), until it is killed.
import Dispatch
import Foundation
import Lode
import LodeInspection
import LodeMacros
import LodeTestSupport

import struct LMDB.CloseRecord

struct Task: Persistable {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    var group: String
    static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
}

/// A type with a full-text index that the crash and power-cut writers change in every commit, so a
/// kill or a power cut lands in the middle of postings being written too: `check` then compares
/// every posting with the records.
struct Journal: Persistable {
    var id: Int
    var text: String
    static let schema = Schema<Journal>(primaryKey: \.id, textIndexes: [.on(\.text)])
}

struct Counter: Persistable {
    var name: String
    var value: Int
    static let schema = Schema<Counter>(primaryKey: \.name)
}

/// Commits forever, each commit N the one `CrashPlan.commit(N)` describes plus the counter set to N,
/// starting after the counter the store holds. Starts from a 64 KiB map, so commits grow it.
func crashWriter(_ path: String) throws {
    let store = try Store(
        at: URL(fileURLWithPath: path), configuration: StoreConfiguration(initialMapSize: 64 << 10),
        types: [Task.self, Counter.self, Journal.self])
    var next = (try store.read { try $0.object(Counter.self, key: "commits") }?.value ?? 0) + 1
    while true {
        try store.write { tx in
            try writeCrashPlanTasks(of: next, in: tx)
            try tx.upsert(Counter(name: "commits", value: next))
        }
        print("ack \(next)")
        fflush(nil)
        next += 1
    }
}

/// The tasks commit `n` of `CrashPlan` deletes and upserts (the counter is the caller's).
func writeCrashPlanTasks(of n: Int, in tx: WriteTransaction) throws {
    let plan = CrashPlan.commit(n)
    for id in plan.deletes { try tx.delete(Task.self, key: id) }
    for id in plan.upserts {
        try tx.upsert(
            Task(id: id, title: CrashPlan.title(n, id), rank: n, done: id % 3 == 0, group: "g\(id % 7)"))
    }
    // One journal entry rewritten (its words move), one in four commits one deleted.
    try tx.upsert(
        Journal(id: n % 8, text: "entry \(n) " + String(repeating: "word\(n % 5) ", count: n % 4 + 1)))
    if n % 4 == 0 { try tx.delete(Journal.self, key: (n + 3) % 8) }
}

func write(_ path: String, first: Int, count: Int) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [Task.self])
    for id in first..<(first + count) {
        try store.write { tx in
            try tx.insert(Task(id: id, title: "task \(id)", rank: (id * 7) % 11, done: false, group: "p"))
        }
    }
    try store.write { tx in
        for id in stride(from: first, to: first + count, by: 3) {
            try tx.update(Task.self, key: id) { $0.rank += 20 }
        }
        for id in stride(from: first + 1, to: first + count, by: 4) { try tx.delete(Task.self, key: id) }
    }
    print("done")
}

/// One commit of task `id`: inserted (title "task ID"), its title edited and rank raised by 100, or
/// deleted.
func commitOne(_ path: String, operation: String, id: Int) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [Task.self])
    try store.write { tx in
        switch operation {
        case "insert":
            try tx.insert(Task(id: id, title: "task \(id)", rank: id % 11, done: false, group: "p"))
        case "update":
            try tx.update(Task.self, key: id) {
                $0.title += " (edited)"
                $0.rank += 100
            }
        default: try tx.delete(Task.self, key: id)
        }
    }
    print("committed")
}

// MARK: The README's observe example (keep the two in step)

enum Status: String, Codable { case open, done }

@Model
struct Todo {
    @PrimaryKey var id: UUID
    @Unique var title: String
    @Indexed var status: Status
    @Indexed var due: Date?
}

/// The README's first-use example as written (run in a directory of its own: its store is "todos").
func readmeFirstUse() throws {
    let store = try Store(at: URL(fileURLWithPath: "todos"))  // a directory; created when missing
    let milk = Todo(id: UUID(), title: "Buy milk", status: .open, due: nil)
    try store.write { tx in  // one ACID transaction
        try tx.insert(milk)
        try tx.insert(Todo(id: UUID(), title: "Write report", status: .open, due: Date()))
        try tx.insert(Todo(id: UUID(), title: "Call Ada", status: .open, due: nil))
        try tx.update(Todo.self, key: milk.id) { $0.status = .done }
    }

    let pending = Status.open  // #Predicate cannot name an enum case: capture it
    let open = store.objects(Todo.self)
        .filter(#Predicate { $0.status == pending })
        .sorted(by: \.title)
    print(try open.map(\.title))  // ["Call Ada", "Write report"]
    print(try open.explain())  // index lookup of 1 value(s) in "status"; sorted in memory

    let titles = try open.values(of: \.title)  // ["Call Ada", "Write report"]: no Todo is built
    let latest = try store.objects(Todo.self).max(of: \.title)  // reads the title field alone
    guard titles == (try open.map(\.title)), latest == "Write report" else {
        fatalError("projection: \(titles) \(String(describing: latest))")
    }
}

/// The "Following the store" article's synchronous form, on the first-use example's store.
func readmeLive() throws {
    let store = try Store(at: URL(fileURLWithPath: "todos"))
    let pending = Status.open
    let open = store.objects(Todo.self).filter(#Predicate { $0.status == pending }).sorted(by: \.title)

    let live = try open.live()
    try store.write { tx in try tx.insert(Todo(id: UUID(), title: "Water plants", status: .open, due: nil)) }
    if let change = try live.refresh() { print(change.insertions) }  // [1]
}

/// The "Following the store" article's observe example as written, in a directory of its own.
func readmeObserve() throws {
    let store = try Store(at: URL(fileURLWithPath: "todos"), types: [Todo.self])
    let pending = Status.open
    let open = store.objects(Todo.self).filter(#Predicate { $0.status == pending }).sorted(by: \.title)

    let delivered = DispatchSemaphore(value: 0)
    let token = open.observe { change in  // on a queue of its own: no main loop needed
        do {
            switch change {
            case .initial(let results):
                print("showing", try results.count)
            case .update(let results, let change):
                print(change)  // v3→v4: insert [0]
                print(try change.storageUpdate { try results[$0] })  // what a table view applies
            case .error(let error):
                throw error
            }
        } catch {
            print(error)  // a storage failure, a record that no longer decodes: never a crash
        }
        delivered.signal()
    }
    delivered.wait()  // .initial

    let milk = Todo(id: UUID(), title: "Buy milk", status: .open, due: nil)
    try store.write { try $0.insert(milk) }
    delivered.wait()
    try store.write { try $0.insert(Todo(id: UUID(), title: "Answer mail", status: .open, due: nil)) }
    delivered.wait()
    try store.write { tx in try tx.update(Todo.self, key: milk.id) { $0.due = Date() } }
    delivered.wait()
    token.cancel()
    print("done")
}

/// Opens the store as an app does, with the default configuration, and reads everything an app
/// would: every task and counter, an index range, and the untyped integrity walk. With
/// `asIfClosedCleanly`, first writes the record of a clean close for the file as it is — what damage
/// in place after a clean close looks like, which the default does not check.
func readAll(_ path: String, asIfClosedCleanly: Bool) throws {
    if asIfClosedCleanly, let record = CloseRecord.current(of: path + "/data.mdb") {
        record.write(in: path, fileMode: 0o600)
    }
    let store = try Store(atPath: path)
    let (tasks, ranked, counters, report) = try store.read { tx in
        (
            try tx.objects(Task.self).fetch().count,
            try tx.objects(Task.self).filter(#Predicate { $0.rank >= 5 && $0.rank < 20 }).fetch().count,
            try tx.objects(Counter.self).fetch().count,
            try tx.checkIntegrity()
        )
    }
    print("read \(tasks) tasks, \(ranked) ranked, \(counters) counters, \(report.problems.count) problems")
}

/// What a process that never declared a full-text index sees of a store's full-text indexes.
func checkWithoutTypes(_ path: String) throws {
    let store = try Store(atPath: path)
    let (types, report) = try store.read { tx in (try tx.storedTypes(), try tx.checkIntegrity()) }
    for type in types {
        for index in type.textIndexes { print("index \(type.name) \(index.name) \(index.documentCount)") }
    }
    for index in report.unchecked { print("unchecked \(index)") }
    print("problems \(report.problems.count)")
}

// MARK: A large migration, for the kill test

struct Item: Persistable {
    var id: Int
    var name: String
    var value: Int
    static let schema = Schema<Item>(primaryKey: \.id, indexes: [.on(\.value)])
}

/// The migration the kill test interrupts: every record of `Item` reshaped (a field renamed, a value
/// doubled, a field added); says "migrating" when it starts.
let reshapeItems = Migration("2: items reshaped") { context in
    print("migrating")
    fflush(nil)
    try context.renameField("name", to: "title", in: "Item")
    try context.convertField("value", in: "Item") { value in
        guard case .unsigned(let number) = value else { return value }
        return .unsigned(number * 2)
    }
    try context.addField("note", to: "Item", default: .text("migrated"))
}

func migrationSeed(_ path: String, count: Int) throws {
    let store = try Store(atPath: path, types: [Item.self], migrations: [])
    try store.write { tx in
        for id in 0..<count { try tx.insert(Item(id: id, name: "item \(id)", value: id)) }
    }
    print("seeded")
}

func migrationRun(_ path: String) throws {
    _ = try Store(atPath: path, migrations: [reshapeItems])
    print("done")
}

/// Makes a temporary store, writes to it, prints its directory, then exits normally or is killed
/// (`crash`), so a test can see what is left behind.
func temporaryStore(crashing: Bool) throws {
    let store = try Store.temporary(types: [Item.self])
    try store.write { tx in try tx.insert(Item(id: 1, name: "kept until exit", value: 0)) }
    print(store.path)
    fflush(nil)
    if crashing { kill(getpid(), SIGKILL) }
    exit(0)  // the store is still open: the exit handler removes its directory
}

/// Keeps results of Task at one version and commits until they are `lag` commits behind, then exits
/// at once: the version-lag warning must have been printed by then.
func lagAndExit(_ path: String, lag: Int) throws {
    let store = try Store(
        at: URL(fileURLWithPath: path), configuration: StoreConfiguration(versionLagWarning: lag),
        types: [Task.self])
    try store.write { tx in try tx.upsert(Task(id: 0, title: "kept", rank: 0, done: false, group: "g")) }
    let kept = store.objects(Task.self)
    _ = try kept.count
    for round in 1...lag {
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.rank = round } }
    }
    exit(0)
}

/// Opens the store, reads results of Task (a reader at that version) and waits to be killed.
func holdReader(_ path: String) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [Task.self])
    let held = store.objects(Task.self)
    print("holding \(try held.version()) count \(try held.count)")
    fflush(nil)
    while true { sleep(60) }
}

/// The encryption a key file gives (32 bytes), or none for `-`.
func encryption(keyFile: String) throws -> StoreEncryption? {
    guard keyFile != "-" else { return nil }
    return .key(try StoreKey(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: keyFile)))))
}

/// Changes the store's encryption from one key file's key to another's (`-`: none), printing each
/// progress report, then `done`.
func changeKey(_ path: String, from old: String, to new: String) throws {
    try Store.changeEncryption(
        at: URL(fileURLWithPath: path), from: try encryption(keyFile: old), to: try encryption(keyFile: new)
    ) { progress in
        print("progress \(progress.copied) of \(progress.total)")
        fflush(nil)
    }
    print("done")
}

let arguments = CommandLine.arguments
do {
    if arguments.count == 5, arguments[1] == "write", let first = Int(arguments[3]),
        let count = Int(arguments[4])
    {
        try write(arguments[2], first: first, count: count)
    } else if arguments.count == 5, arguments[1] == "commit-one", let id = Int(arguments[4]) {
        try commitOne(arguments[2], operation: arguments[3], id: id)
    } else if arguments.count == 2, arguments[1] == "readme-observe" {
        try readmeObserve()
    } else if arguments.count == 2, arguments[1] == "readme-first-use" {
        try readmeFirstUse()
    } else if arguments.count == 2, arguments[1] == "readme-live" {
        try readmeLive()
    } else if arguments.count == 4, arguments[1] == "migration-seed", let count = Int(arguments[3]) {
        try migrationSeed(arguments[2], count: count)
    } else if arguments.count == 3, arguments[1] == "migration-run" {
        try migrationRun(arguments[2])
    } else if arguments.count == 3, arguments[1] == "check-without-types" {
        try checkWithoutTypes(arguments[2])
    } else if arguments.count >= 3, arguments[1] == "read-all" {
        try readAll(arguments[2], asIfClosedCleanly: arguments.contains("--as-if-closed-cleanly"))
    } else if arguments.count == 3, arguments[1] == "temporary-store" {
        try temporaryStore(crashing: arguments[2] == "crash")
    } else if arguments.count == 3, arguments[1] == "cascade-writer" {
        try cascadeWriter(arguments[2])
    } else if arguments.count == 3, arguments[1] == "crash-writer" {
        try crashWriter(arguments[2])
    } else if arguments.count == 4, arguments[1] == "lag-and-exit", let lag = Int(arguments[3]) {
        try lagAndExit(arguments[2], lag: lag)
    } else if arguments.count == 6, arguments[1] == "powercut-writer" {
        try powerCutWriter(
            arguments[2], mode: try durability(named: arguments[3]), path: arguments[4],
            marks: try Marks(arguments[5]))
    } else if arguments.count >= 4, arguments[1] == "powercut-check" {
        try powerCutCheck(
            arguments[2], mode: try durability(named: arguments[3]), states: Array(arguments[4...]))
    } else if arguments.count == 3, arguments[1] == "powercut-source" {
        try powerCutSource(arguments[2])
    } else if arguments.count == 3, arguments[1] == "powercut-items" {
        try powerCutItems(arguments[2])
    } else if arguments.count == 7, arguments[1] == "sync-client", let seconds = Double(arguments[4]),
        let seed = UInt64(arguments[5])
    {
        try syncClientProcess(
            arguments[2], name: arguments[3], seconds: seconds, seed: seed, log: arguments[6])
    } else if arguments.count == 3, arguments[1] == "sync-dump" {
        try syncDump(arguments[2])
    } else if arguments.count == 3, arguments[1] == "hold-reader" {
        try holdReader(arguments[2])
    } else if arguments.count == 5, arguments[1] == "change-key" {
        try changeKey(arguments[2], from: arguments[3], to: arguments[4])
    } else if arguments.count == 3, arguments[1] == "starved-pool" {
        try starvedPool(arguments[2])
    } else if arguments.count == 2, arguments[1] == "fork-nonces" {
        try forkNonces()
    } else {
        FileHandle.standardError.write(
            Data(
                "usage: lode-test-helper write DIR FIRST COUNT | readme-observe | readme-first-use | readme-live | crash-writer DIR | read-all DIR [--as-if-closed-cleanly] | migration-seed DIR COUNT | migration-run DIR | temporary-store exit|crash | lag-and-exit DIR LAG | hold-reader DIR | powercut-writer WORKLOAD MODE DIR MARKS | powercut-check WORKLOAD MODE STATE… | powercut-source DIR | powercut-items DIR | sync-client STORE NAME SECONDS SEED LOG | sync-dump STORE | starved-pool DIR | fork-nonces | change-key DIR OLDKEYFILE|- NEWKEYFILE|-\n"
                    .utf8
            ))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
