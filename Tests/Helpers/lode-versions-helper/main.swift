// Two versions of one app on one store, as separate processes (the two-versions suite).
// Usage:
//   lode-versions-helper old DIR CHANGE SECONDS [SEED] — version 1: writes an item, reads results
//     every way and a point, while an observation follows the store; prints "ack ID" after each
//     commit returned, and each distinct error once ("refused …", "read-error …", "observe-error …");
//     ends with "old done acks=N updates=U" SECONDS after the file DIR.stop appears (or after
//     SECONDS when no stop file is used: a negative SECONDS), at most two minutes in all. SEED
//     makes the pauses random.
//   lode-versions-helper new DIR CHANGE — version 2: opens the store with its schema and migrations,
//     writes ten items and reads everything; prints "new done items=N".
//   lode-versions-helper ids DIR CHANGE — version 2's view: every item's version-1 id, one per line.
//   lode-versions-helper turns|state …: see Turns.swift.
// CHANGE is one of: index-added, index-dropped, link-added, field-added, field-renamed, field-removed,
// field-retyped, type-renamed, type-deleted, primary-key-changed.
import Foundation
import Lode
import LodeTestSupport

// MARK: Version 1

/// Version 1's item, the same for every change.
struct ItemV1: Persistable {
    var id: Int
    var tag: String
    var note: String
    static let schema = Schema<ItemV1>(name: "Item", primaryKey: \.id, indexes: [.on(\.tag)])
}

// MARK: Version 2, one per change

/// index-added: the same fields, one more index.
struct ItemIndexAdded: Persistable {
    var id: Int
    var tag: String
    var note: String
    static let schema = Schema<ItemIndexAdded>(
        name: "Item", primaryKey: \.id, indexes: [.on(\.tag), .on(\.note)])
}

/// index-dropped: the same fields, the index on `tag` dropped.
struct ItemIndexDropped: Persistable {
    var id: Int
    var tag: String
    var note: String
    static let schema = Schema<ItemIndexDropped>(name: "Item", primaryKey: \.id)
}

/// link-added: a new optional link to the item before, with its inverse index, no migration.
struct ItemLinkAdded: Persistable {
    var id: Int
    var tag: String
    var note: String
    var previous: Link<ItemLinkAdded>?
    static let schema = Schema<ItemLinkAdded>(
        name: "Item", primaryKey: \.id, indexes: [.on(\.tag)], links: [.to(\.previous, onDelete: .nullify)])
}

/// field-added: a new field with a default, no migration.
struct ItemFieldAdded: Persistable {
    var id: Int
    var tag: String
    var note: String
    var priority: Int
    static let schema = Schema<ItemFieldAdded>(
        name: "Item", primaryKey: \.id, indexes: [.on(\.tag)], defaults: [.field(\.priority, 0)])
}

/// field-renamed: `note` is `text`, by a migration.
struct ItemFieldRenamed: Persistable {
    var id: Int
    var tag: String
    var text: String
    static let schema = Schema<ItemFieldRenamed>(name: "Item", primaryKey: \.id, indexes: [.on(\.tag)])
}

/// field-removed: `note` removed by a migration.
struct ItemFieldRemoved: Persistable {
    var id: Int
    var tag: String
    static let schema = Schema<ItemFieldRemoved>(name: "Item", primaryKey: \.id, indexes: [.on(\.tag)])
}

/// field-retyped: `note` becomes a list of words, by a migration.
struct ItemFieldRetyped: Persistable {
    var id: Int
    var tag: String
    var note: [String]
    static let schema = Schema<ItemFieldRetyped>(name: "Item", primaryKey: \.id, indexes: [.on(\.tag)])
}

/// type-renamed: the type is stored as `Thing`.
struct Thing: Persistable {
    var id: Int
    var tag: String
    var note: String
    static let schema = Schema<Thing>(primaryKey: \.id, indexes: [.on(\.tag)])
}

/// type-deleted: version 2 keeps another type.
struct Other: Persistable {
    var id: Int
    static let schema = Schema<Other>(primaryKey: \.id)
}

/// primary-key-changed: items are keyed by their `note`.
struct ItemKeyedByNote: Persistable {
    var id: Int
    var tag: String
    var note: String
    static let schema = Schema<ItemKeyedByNote>(name: "Item", primaryKey: \.note, indexes: [.on(\.tag)])
}

/// Version 2 of the app for one change: its migrations, its types, and how it writes and lists items.
struct VersionTwo {
    var migrations: [Migration]
    var types: [any Persistable.Type]
    /// Writes the item with this id.
    var write: (WriteTransaction, Int) throws -> Void
    /// Every item's id, read through version 2's type.
    var ids: (Store) throws -> [Int]

    static func of(_ change: String) -> VersionTwo? {
        func plain<T: Persistable>(
            _ type: T.Type, migrations: [Migration] = [], make: @escaping (Int) -> T, id: @escaping (T) -> Int
        ) -> VersionTwo {
            VersionTwo(
                migrations: migrations, types: [T.self], write: { tx, number in try tx.insert(make(number)) },
                ids: { store in try store.objects(T.self).map(id) })
        }
        switch change {
        case "index-added":
            return plain(ItemIndexAdded.self, make: { .init(id: $0, tag: tag($0), note: note($0)) }, id: \.id)
        case "index-dropped":
            return plain(
                ItemIndexDropped.self, make: { .init(id: $0, tag: tag($0), note: note($0)) }, id: \.id)
        case "link-added":
            return plain(
                ItemLinkAdded.self,
                make: {
                    .init(
                        id: $0, tag: tag($0), note: note($0),
                        previous: $0 % 1_000_000 == 0 ? nil : try? Link(key: $0 - 1))
                },
                id: \.id)
        case "field-added":
            return plain(
                ItemFieldAdded.self, make: { .init(id: $0, tag: tag($0), note: note($0), priority: 1) },
                id: \.id)
        case "field-renamed":
            let migration = Migration("rename note to text") {
                try $0.renameField("note", to: "text", in: "Item")
            }
            return plain(
                ItemFieldRenamed.self, migrations: [migration],
                make: { .init(id: $0, tag: tag($0), text: note($0)) }, id: \.id)
        case "field-removed":
            let migration = Migration("remove note") { try $0.removeField("note", from: "Item") }
            return plain(
                ItemFieldRemoved.self, migrations: [migration], make: { .init(id: $0, tag: tag($0)) },
                id: \.id)
        case "field-retyped":
            let migration = Migration("note as words") {
                try $0.convertField("note", in: "Item") { value in
                    guard case .text(let text) = value else { return value }
                    return .array(text.split(separator: " ").map { .text(String($0)) })
                }
            }
            return plain(
                ItemFieldRetyped.self, migrations: [migration],
                make: { .init(id: $0, tag: tag($0), note: note($0).split(separator: " ").map(String.init)) },
                id: \.id)
        case "type-renamed":
            let migration = Migration("Item is Thing") { try $0.renameType("Item", to: "Thing") }
            return plain(
                Thing.self, migrations: [migration], make: { .init(id: $0, tag: tag($0), note: note($0)) },
                id: \.id)
        case "type-deleted":
            let migration = Migration("no more items") { try $0.deleteType("Item") }
            return plain(Other.self, migrations: [migration], make: { .init(id: $0) }, id: \.id)
        case "primary-key-changed":
            let migration = Migration("key items by note") { try $0.changePrimaryKey(of: "Item", to: "note") }
            return plain(
                ItemKeyedByNote.self, migrations: [migration],
                make: { .init(id: $0, tag: tag($0), note: note($0)) }, id: \.id)
        default:
            return nil
        }
    }
}

func tag(_ id: Int) -> String { "t\(id % 3)" }
func note(_ id: Int) -> String { "note number \(id)" }

// MARK: The processes

/// Prints each distinct line once (an error repeated every iteration is said once).
final class Reporter: @unchecked Sendable {
    // @unchecked: `said` is guarded by `lock`.
    private let lock = NSLock()
    private var said: Set<String> = []

    func once(_ line: String) {
        let first = lock.withLock { said.insert(line).inserted }
        if first { say(line) }
    }

    func say(_ line: String) {
        lock.withLock {
            print(line)
            fflush(nil)
        }
    }
}

/// The error's case name and message, one line.
func describe(_ error: any Error) -> String {
    guard let error = error as? LodeError else { return "not-a-lode-error: \(error)" }
    // The case's name: an enum case with values reflects as one child labelled with it.
    let name = Mirror(reflecting: error).children.first?.label ?? "\(error)"
    return "\(name): \(error)".replacingOccurrences(of: "\n", with: " ")
}

/// Version 1, running for `seconds`: a write, three reads and a point read per round, observed.
func runOld(_ path: String, seconds: Double, seed: UInt64?) throws {
    let reporter = Reporter()
    let store: Store
    do {
        store = try Store(at: URL(fileURLWithPath: path), types: [ItemV1.self], migrations: [])
    } catch {
        reporter.say("open-error \(describe(error))")
        reporter.say("old done acks=0 updates=0")
        return
    }
    let updates = LockedCount()
    let tagged = store.objects(ItemV1.self).filter(#Predicate { $0.tag == "t1" }).sorted(by: \.id)
    let token = tagged.observe(on: DispatchQueue(label: "observer")) { change in
        switch change {
        case .initial: break
        case .update(let results, _):
            updates.add()
            do { _ = try results.fetch() } catch { reporter.once("observe-read-error \(describe(error))") }
        case .error(let error): reporter.once("observe-error \(describe(error))")
        }
    }
    var random = seed.map { SeededGenerator(seed: $0) }
    let base = (try? store.read { try $0.count(ItemV1.self) }) ?? 0
    var next = base + 1 + Int(getpid() % 1000) * 10_000
    var acks = 0
    // Runs until told to stop (the file `DIR.stop`) and `seconds` more, so version 1 still works
    // after version 2 finished, however long that took; a negative `seconds` is a plain duration.
    let stopFile = path + ".stop"
    let start = Date()
    var stopAt: Date? = seconds < 0 ? start.addingTimeInterval(-seconds) : nil
    while Date() < (stopAt ?? start.addingTimeInterval(120)) {
        if stopAt == nil, FileManager.default.fileExists(atPath: stopFile) {
            stopAt = Date().addingTimeInterval(seconds)
        }
        let id = next
        do {
            try store.write { tx in try tx.insert(ItemV1(id: id, tag: tag(id), note: note(id))) }
            acks += 1
            next += 1
            reporter.say("ack \(id)")
        } catch {
            reporter.once("refused \(describe(error))")
        }
        do {
            // Every way to read results: a count, an iteration, a subscript, identities, a cursor.
            let results = store.objects(ItemV1.self).filter(#Predicate { $0.tag == "t1" }).sorted(by: \.id)
            let count = try results.count
            _ = try results.map(\.id)
            if count > 0 { _ = try results[count - 1] }
            _ = try results.objectIDs
            var cursor = try store.objects(ItemV1.self).makeCursor()
            while try cursor.next() != nil {}
            _ = try store.objects(ItemV1.self).sectioned(by: \.tag).sections
            _ = try store.read { try $0.object(ItemV1.self, key: id) }
        } catch {
            reporter.once("read-error \(describe(error))")
        }
        var pause = 0.01
        if var generator = random {
            pause = Double(generator.next() % 30) / 1000
            random = generator
        }
        Thread.sleep(forTimeInterval: pause)
    }
    token.cancel()
    reporter.say("old done acks=\(acks) updates=\(updates.value)")
}

/// Version 2: opens with its schema and migrations, writes ten items, reads them all. Its ids are above
/// any version 1 takes (below 10,000,000: the count, plus the process id's last three digits times
/// 10,000); at 2,000,000 they once met the ids of a version 1 whose process id ended in 200.
func runNew(_ path: String, change: String) throws {
    guard let version = VersionTwo.of(change) else { throw HelperError.usage }
    let store = try Store(
        at: URL(fileURLWithPath: path), types: version.types, migrations: version.migrations)
    try store.write { tx in
        for id in 20_000_000..<20_000_010 { try version.write(tx, id) }
    }
    print("new done items=\(try version.ids(store).count)")
}

/// Every item's id as version 2 reads it.
func printIDs(_ path: String, change: String) throws {
    guard let version = VersionTwo.of(change) else { throw HelperError.usage }
    let store = try Store(
        at: URL(fileURLWithPath: path), types: version.types, migrations: version.migrations)
    for id in try version.ids(store) { print(id) }
}

final class LockedCount: @unchecked Sendable {
    // @unchecked: `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

enum HelperError: Error { case usage }

let arguments = CommandLine.arguments
do {
    switch (arguments.count > 1 ? arguments[1] : "", arguments.count) {
    case ("old", 5), ("old", 6):
        try runOld(
            arguments[2], seconds: Double(arguments[4]) ?? 1,
            seed: arguments.count > 5 ? UInt64(arguments[5]) : nil)
    case ("new", 4): try runNew(arguments[2], change: arguments[3])
    case ("ids", 4): try printIDs(arguments[2], change: arguments[3])
    case ("turns", 6):
        guard let type = turnType(arguments[3]), let seed = UInt64(arguments[4]), let ops = Int(arguments[5])
        else { throw HelperError.usage }
        try runTurn(type, path: arguments[2], seed: seed, ops: ops)
    case ("state", 4):
        guard let type = turnType(arguments[3]) else { throw HelperError.usage }
        try printState(type, path: arguments[2])
    default: throw HelperError.usage
    }
} catch {
    FileHandle.standardError.write(Data("lode-versions-helper: \(error)\n".utf8))
    exit(1)
}
