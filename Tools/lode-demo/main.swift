// lode-demo: a live task list grouped by status, then by project (across a link), end to end.
//
//   lode-demo [--path DIR]                     play a scripted session, printing every update
//   lode-demo watch [--path DIR] [--for SECS]  follow the list as other processes write
//   lode-demo write [--path DIR] add TITLE [--status todo|doing|done]
//   lode-demo write [--path DIR] start ID | complete ID | delete ID | rename ID TITLE
import Dispatch
import Foundation
import Lode
import LodeDemoModel
import ModelStorage

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

let usage = """
    usage: lode-demo [--path DIR]
           lode-demo watch [--path DIR] [--for SECONDS]
           lode-demo write [--path DIR] add TITLE [--status todo|doing|done]
           lode-demo write [--path DIR] start ID | complete ID | delete ID | rename ID TITLE
    """

/// Prints the list as a reader of the storage sees it.
func printList(_ storage: LiveResultsStorage) {
    if storage.numberOfSections() == 0 { print("  (no tasks)") }
    for section in 0..<storage.numberOfSections() {
        print("  \(headerText(storage.headerModel(forSection: section)))")
        for row in 0..<storage.numberOfItems(inSection: section) {
            guard let task = storage.item(at: IndexPath(item: row, section: section)) as? DemoTask else {
                continue
            }
            print("    [\(section), \(row)] #\(task.id) \(task.title)")
        }
    }
}

/// A section's header: a status, a project's name, or "(no project)" for tasks filed under none.
func headerText(_ model: Any?) -> String {
    switch model {
    case let name as String?: return name ?? "(no project)"
    case let model?: return "\(model)"
    case nil: return "?"
    }
}

/// Applies each update and prints it with the list it leads to.
final class Printer: StorageUpdating {
    let storage: LiveResultsStorage
    init(_ storage: LiveResultsStorage) { self.storage = storage }

    func storageDidPerformUpdate(_ update: StorageUpdate) {
        update.applyDeferredDatasourceUpdates()
        print("  update: \(update)")
        printList(storage)
        fflush(nil)
    }

    func storageNeedsReloading() { printList(storage) }
}

func openStore(_ path: String) throws -> Store {
    try Store(atPath: path, types: [DemoTask.self, DemoProject.self])
}

func liveList(_ store: Store, observing: Bool, queue: DispatchQueue = .main) throws -> LiveResultsStorage {
    let storage = LiveResultsStorage(store: store, queue: queue, observesCommits: observing)
    // Titles are what a row shows: only their changes reload a row; a status or rank change moves it.
    try storage.setSections(
        from: store.objects(DemoTask.self).sorted(by: \.rank).sectioned(by: \.status),
        keyPaths: [\DemoTask.title])
    return storage
}

/// The scripted session: every step is one commit, followed by the update it produced.
func play(path: String) throws {
    let store = try openStore(path)
    try store.write { tx in
        _ = try tx.deleteAll(DemoTask.self)
        _ = try tx.deleteAll(DemoProject.self)
    }
    var storage = try liveList(store, observing: false)
    var printer = Printer(storage)
    storage.delegate = printer
    print("Lode demo: a live task list in \(path), grouped by status, sorted by rank.\n")
    func step(_ title: String, _ body: (WriteTransaction) throws -> Void) throws {
        print("▸ \(title)")
        try store.write(body)
        if try storage.refresh() == nil { print("  (no visible change)") }
        print()
    }
    try step("add three tasks") { tx in
        try tx.insert(DemoTask(id: 1, title: "Write the README", status: .todo, rank: 10))
        try tx.insert(DemoTask(id: 2, title: "Fix the flaky test", status: .todo, rank: 20))
        try tx.insert(DemoTask(id: 3, title: "Ship 1.0", status: .todo, rank: 30))
    }
    try step("start #2 (a row moves to a new section)") { tx in
        try tx.update(DemoTask.self, key: 2) { $0.status = .doing }
    }
    try step("rename #1 (a row reloads in place)") { tx in
        try tx.update(DemoTask.self, key: 1) { $0.title = "Write the user's guide" }
    }
    try step("rank #3 first (a row moves within its section)") { tx in
        try tx.update(DemoTask.self, key: 3) { $0.rank = 5 }
    }
    try step("complete #2 and add #4, one commit (one update)") { tx in
        try tx.update(DemoTask.self, key: 2) { $0.status = .done }
        try tx.insert(DemoTask(id: 4, title: "Benchmark the store", status: .doing, rank: 15))
    }
    try step("delete #3") { tx in _ = try tx.delete(DemoTask.self, key: 3) }

    // The same tasks grouped by project: sections keyed by a linked object's name follow it.
    storage = LiveResultsStorage(store: store, observesCommits: false)
    try storage.setSections(
        from: store.objects(DemoTask.self).sorted(by: \.rank).sectioned(through: \.project, by: \.name))
    printer = Printer(storage)
    storage.delegate = printer
    print("The same tasks grouped by project (a link from each task), sorted by rank.\n")
    try step("add projects Docs and Release, file the tasks under them") { tx in
        try tx.insert(DemoProject(id: 1, name: "Docs"))
        try tx.insert(DemoProject(id: 2, name: "Release"))
        try tx.update(DemoTask.self, key: 1) { $0.project = try Link(key: 1) }
        try tx.update(DemoTask.self, key: 2) { $0.project = try Link(key: 2) }
    }
    try step("rename project Release to Beta (its section is renamed and moves before Docs, its row with it)")
    {
        tx in
        try tx.update(DemoProject.self, key: 2) { $0.name = "Beta" }
    }
    try step("file #4 under Beta") { tx in
        try tx.update(DemoTask.self, key: 4) { $0.project = try Link(key: 2) }
    }
    try step("delete project Docs (its task is unfiled: the link's rule is nullify)") { tx in
        _ = try tx.delete(DemoProject.self, key: 1)
    }
    print("Inspect the store: swift run lode-dump dump \(path) DemoTask --format table")
    print("Follow it live: swift run lode-demo watch --path \(path)  (and, elsewhere, lode-demo write …)")
}

/// Follows the list as any process writes to the store.
func watch(path: String, seconds: Double?) throws -> Never {
    let store = try openStore(path)
    let storage = try liveList(store, observing: true)
    let printer = Printer(storage)
    storage.delegate = printer
    print("Watching \(path) (lode-demo write … from another terminal; Ctrl-C stops).")
    printList(storage)
    fflush(nil)
    if let seconds {
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { exit(0) }
    }
    withExtendedLifetime((store, storage, printer)) { dispatchMain() }
}

/// One commit from the command line.
func write(path: String, _ arguments: [String]) throws {
    guard let command = arguments.first else { throw UsageError(description: "write needs a command") }
    let store = try openStore(path)
    func id(_ index: Int) throws -> Int {
        guard arguments.count > index, let id = Int(arguments[index]) else {
            throw UsageError(
                description:
                    "\(command) needs a task number, got \(arguments.dropFirst().joined(separator: " "))")
        }
        return id
    }
    func setStatus(_ status: Status) throws {
        let id = try id(1)
        try store.write { tx in try tx.update(DemoTask.self, key: id) { $0.status = status } }
        print("#\(id): \(status)")
    }
    switch command {
    case "add":
        guard arguments.count >= 2 else { throw UsageError(description: "add needs a title") }
        var status = Status.todo
        if let flag = arguments.firstIndex(of: "--status") {
            guard flag + 1 < arguments.count, let parsed = Status(name: arguments[flag + 1]) else {
                throw UsageError(description: "--status takes todo, doing or done")
            }
            status = parsed
        }
        let added = try store.write { tx in
            let tasks = try tx.objects(DemoTask.self).fetch()
            let task = DemoTask(
                id: (tasks.map(\.id).max() ?? 0) + 1, title: arguments[1], status: status,
                rank: (tasks.map(\.rank).max() ?? 0) + 10)
            try tx.insert(task)
            return task
        }
        print("added #\(added.id) \(added.title) (\(added.status))")
    case "start": try setStatus(.doing)
    case "complete": try setStatus(.done)
    case "delete":
        let id = try id(1)
        guard try store.write({ tx in try tx.delete(DemoTask.self, key: id) }) else {
            throw UsageError(description: "no task #\(id)")
        }
        print("deleted #\(id)")
    case "rename":
        let id = try id(1)
        guard arguments.count >= 3 else { throw UsageError(description: "rename needs a new title") }
        try store.write { tx in try tx.update(DemoTask.self, key: id) { $0.title = arguments[2] } }
        print("#\(id): \(arguments[2])")
    default:
        throw UsageError(description: "unknown write command \"\(command)\"")
    }
}

func main() -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    var path = "lode-demo.store"
    var seconds: Double?
    do {
        if let flag = arguments.firstIndex(of: "--path") {
            guard flag + 1 < arguments.count else {
                throw UsageError(description: "--path needs a directory")
            }
            path = arguments[flag + 1]
            arguments.removeSubrange(flag...flag + 1)
        }
        if let flag = arguments.firstIndex(of: "--for") {
            guard flag + 1 < arguments.count, let value = Double(arguments[flag + 1]), value > 0 else {
                throw UsageError(description: "--for needs a number of seconds")
            }
            seconds = value
            arguments.removeSubrange(flag...flag + 1)
        }
        switch arguments.first {
        case nil: try play(path: path)
        case "watch" where arguments.count == 1: try watch(path: path, seconds: seconds)
        case "write": try write(path: path, Array(arguments.dropFirst()))
        case "-h", "--help", "help":
            print(usage)
        default:
            throw UsageError(description: "unexpected arguments: \(arguments.joined(separator: " "))")
        }
        return 0
    } catch let error as UsageError {
        FileHandle.standardError.write(Data("lode-demo: \(error)\n\(usage)\n".utf8))
        return 2
    } catch {
        FileHandle.standardError.write(Data("lode-demo: \(path): \(error)\n".utf8))
        return 1
    }
}

exit(main())
