import Foundation
import Lode
import LodeSync
import LodeTestSupport
import ModelStorage

/// The object the convergence test's clients write: each write gives it a token naming the client
/// and the write, so the server's audit table tells which write a row holds.
struct SyncItem: Persistable, Equatable {
    var id: Int
    var token: String
    var rank: Int
    static let schema = Schema<SyncItem>(name: "Item", primaryKey: \.id, indexes: [.on(\.rank)])
}

/// `sync-client STORE NAME SECONDS SEED LOG`: syncs STORE with the server in `LODE_SYNC_SERVER`
/// while making random writes for SECONDS (0: none), then synchronizes and exits. Before each commit
/// it appends `attempt TOKEN` (or `attempt delete ID SEQ`) to LOG, after it `ack …`, each line
/// flushed to the file. A live result of every item, sorted by rank, is checked on a list mirror the
/// whole time: a change that does not replay exactly, or an error delivered, exits with status 3.
func syncClientProcess(_ path: String, name: String, seconds: Double, seed: UInt64, log logPath: String)
    throws
{
    guard let connection = ProcessInfo.processInfo.environment["LODE_SYNC_SERVER"] else {
        throw HelperError("LODE_SYNC_SERVER is not set")
    }
    let store = try Store(
        atPath: path,
        configuration: StoreConfiguration(durability: .noSync, encryption: try testEncryption()),
        types: [SyncItem.self])
    let client = try SyncClient(
        store: store, server: SyncServer(connectionString: connection), types: [.type(SyncItem.self)],
        options: SyncOptions(
            pollInterval: .milliseconds(500), minimumBackoff: .milliseconds(50),
            maximumBackoff: .milliseconds(500)))
    let failures = LockedFailures()
    let shown = LockedRows()
    let token = store.objects(SyncItem.self).sorted(by: \.rank).observe(on: DispatchQueue(label: "check")) {
        change in
        switch change {
        case .initial(let results):
            do { shown.set(try results.fetch()) } catch { failures.add("initial: \(error)") }
        case .update(let results, let change):
            do {
                let new = try results.fetch()
                var mirror = ListMirror(sections: [shown.get()])
                try mirror.apply(change.storageUpdate { new[$0] }, dataSource: [new])
                if mirror.sections[0] != new { failures.add("replay of \(change) differs from a fresh read") }
                shown.set(new)
            } catch {
                failures.add("\(change): \(error)")
            }
        case .error(let error):
            failures.add("delivered error: \(error)")
        }
    }
    defer { token.cancel() }
    client.start()
    if !FileManager.default.fileExists(atPath: logPath) {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }
    let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
    try log.seekToEnd()
    func note(_ line: String) throws {
        try log.write(contentsOf: Data((line + "\n").utf8))
    }
    var rng = SeededGenerator(seed: seed)
    let end = Date().addingTimeInterval(seconds)
    // Tokens name the run too: a restarted client counts its writes from 1 again.
    let run = "\(name).\(String(seed % 1_000_000, radix: 36))"
    var sequence = 0
    while Date() < end {
        sequence += 1
        let id = Int(rng.next() % 40)
        if rng.next() % 5 == 0 {
            try note("attempt delete \(id) \(run)-\(sequence)")
            try store.write { tx in _ = try tx.delete(SyncItem.self, key: id) }
            try note("ack delete \(id) \(run)-\(sequence)")
        } else {
            let item = SyncItem(id: id, token: "\(run)-\(sequence)", rank: Int(rng.next() % 100))
            try note("attempt \(item.token) \(id)")
            try store.write { tx in try tx.upsert(item) }
            try note("ack \(item.token) \(id)")
        }
        usleep(useconds_t(rng.next() % 40_000))
    }
    try client.synchronize(timeout: .seconds(60))
    // No more downloads: the live result must reach the store's last version and stay there.
    client.stop()
    let deadline = Date().addingTimeInterval(30)
    var expected = try store.objects(SyncItem.self).sorted(by: \.rank).fetch()
    while shown.get() != expected && Date() < deadline {
        usleep(10_000)
        expected = try store.objects(SyncItem.self).sorted(by: \.rank).fetch()
    }
    if shown.get() != expected { failures.add("the live result did not reach the store's last version") }
    let found = failures.get()
    if !found.isEmpty {
        FileHandle.standardError.write(Data((found.prefix(5).joined(separator: "\n") + "\n").utf8))
        exit(3)
    }
}

/// The encryption of the key file `LODE_TEST_KEY_FILE` names, if set (a test's encrypted client).
func testEncryption() throws -> StoreEncryption? {
    try ProcessInfo.processInfo.environment["LODE_TEST_KEY_FILE"].flatMap { try encryption(keyFile: $0) }
}

/// `sync-dump STORE`: every item as `id token`, by id.
func syncDump(_ path: String) throws {
    let store = try Store(
        atPath: path, configuration: StoreConfiguration(encryption: try testEncryption()),
        types: [SyncItem.self])
    for item in try store.objects(SyncItem.self).fetch().sorted(by: { $0.id < $1.id }) {
        print("\(item.id) \(item.token)")
    }
}

private final class LockedFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var found: [String] = []
    func add(_ failure: String) { lock.withLock { found.append(failure) } }
    func get() -> [String] { lock.withLock { found } }
}

private final class LockedRows: @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [SyncItem] = []
    func set(_ new: [SyncItem]) { lock.withLock { rows = new } }
    func get() -> [SyncItem] { lock.withLock { rows } }
}

struct HelperError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
