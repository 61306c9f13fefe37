import Dispatch
import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct FileSafetyTests {
    let tmp = TemporaryDirectory()

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    /// A store, its copies and the stores `lode-dump load` makes are owner-only under the usual umask
    /// 022 (they were 755 directories of 644 files, readable by every user); a configuration can widen
    /// them.
    @Test func storesAndTheirCopiesAreOwnerOnlyByDefault() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let path = tmp.url.appendingPathComponent("private").path
        let store = try Store(atPath: path, types: [Task.self])
        try store.write { try $0.insert(Task(id: 1, title: "t", rank: 1, done: false, group: "x")) }
        #expect(try mode(path) == 0o700)
        #expect(try mode(path + "/data.mdb") == 0o600)
        #expect(try mode(path + "/lock.mdb") == 0o600)
        let copy = tmp.url.appendingPathComponent("copy").path
        try store.copy(to: copy, compacting: true)
        #expect(try mode(copy) == 0o700)
        #expect(try mode(copy + "/data.mdb") == 0o600)
        let backup = tmp.url.appendingPathComponent("backup").path
        #expect(try runDump(["backup", path, backup]).status == 0)
        #expect(try mode(backup) == 0o700 && mode(backup + "/data.mdb") == 0o600)
        let loaded = tmp.url.appendingPathComponent("loaded").path
        let raw = try shell(
            "'\(builtTool("lode-dump"))' raw '\(path)' --all | '\(builtTool("lode-dump"))' load '\(loaded)'")
        #expect(raw.status == 0, "\(raw.err)")
        #expect(try mode(loaded) == 0o700 && mode(loaded + "/data.mdb") == 0o600)
        let exported = tmp.url.appendingPathComponent("exported").path
        let export = try shell(
            "'\(builtTool("lode-dump"))' export '\(path)' | '\(builtTool("lode-dump"))' load '\(exported)'")
        #expect(export.status == 0, "\(export.err)")
        #expect(try mode(exported) == 0o700 && mode(exported + "/data.mdb") == 0o600)

        let shared = tmp.url.appendingPathComponent("shared").path
        _ = try Store(atPath: shared, configuration: StoreConfiguration(fileMode: 0o640))
        #expect(try mode(shared) == 0o750 && mode(shared + "/data.mdb") == 0o640)
    }

    /// A data file cut short (a failed copy, a full disk during a backup) used to crash the library and
    /// the tools with SIGBUS at the first read of a missing page. It is refused at open, by name, and
    /// left as it was.
    @Test func aTruncatedDataFileIsRefusedAtOpen() throws {
        let path = tmp.url.appendingPathComponent("cut").path
        do {
            let store = try Store(atPath: path, types: [Task.self])
            try store.write { tx in
                for id in 0..<300 {
                    try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "g"))
                }
            }
            store.close()
        }
        let data = path + "/data.mdb"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: data)[.size] as? Int)
        let handle = try #require(FileHandle(forWritingAtPath: data))
        try handle.truncate(atOffset: UInt64(size / 3))
        try handle.close()
        let cut = try Data(contentsOf: URL(fileURLWithPath: data))
        guard case .storage(let failure) = lodeError({ _ = try Store(atPath: path) }) else {
            Issue.record("a truncated store opened")
            return
        }
        #expect(failure.reason == .damaged)
        #expect(failure.message.contains("data.mdb is truncated"), "\(failure)")
        // A write-map open would extend the file with zeros before anything could look at it: the
        // check comes first, in every mode, and the file stays as it was.
        for durability in [Store.Durability.writeMap, .writeMapAsync, .writeMapNoSync, .noSync] {
            let configuration = StoreConfiguration(durability: durability)
            guard
                case .storage(let failure) = lodeError({
                    _ = try Store(atPath: path, configuration: configuration)
                })
            else {
                Issue.record("a truncated store opened with \(durability)")
                continue
            }
            #expect(failure.message.contains("data.mdb is truncated"), "\(durability): \(failure)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: data)) == cut, "\(durability) changed the file")
        }
        let readOnly = StoreConfiguration(readOnly: true)
        #expect(lodeError({ _ = try Store(atPath: path, configuration: readOnly) }) != nil)
        for arguments in [[path], ["check", path], ["dump", path, "Task"]] {
            let result = try runDump(arguments)
            #expect(result.status == 1 && result.err.contains("is truncated"), "\(arguments): \(result.err)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: data)) == cut)
    }

    /// Idle pooled read transactions hold reader slots shared by every process: the pool is bounded by
    /// the configuration, so many concurrent reads leave at most that many slots behind.
    @Test func idleReadersAreBoundedByThePoolSize() throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(readTransactionPoolSize: 2), types: [Task.self])
        try store.write { try $0.insert(Task(id: 1, title: "t", rank: 1, done: false, group: "x")) }
        let group = DispatchGroup()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Threads of their own: eight reads open at once whatever else the machine runs (a dispatch
        // queue may not give eight blocked blocks eight threads).
        for _ in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                _ = try? store.read { tx -> Int in
                    inside.signal()
                    release.wait()
                    return try tx.count(Task.self)
                }
                group.leave()
            }
        }
        for _ in 0..<8 { #expect(inside.wait(timeout: .now() + 10) == .success) }
        let pid = getpid()
        #expect(try store.readers().filter { $0.processID == pid && $0.version != nil }.count >= 8)
        for _ in 0..<8 { release.signal() }
        #expect(group.wait(timeout: .now() + 10) == .success)
        let held = try store.readers().filter { $0.processID == pid }.count
        #expect(held <= 2 + 1, "\(held) reader slots held after the reads")  // the pool and one snapshot
    }

    /// A commit that does not fit on the disk fails as `diskFull` (LMDB reports it as "Input/output
    /// error"), and the store stays at its last commit, readable and consistent. The disk is a 1 MiB
    /// tmpfs mounted for the test, which needs root (CI runs as root).
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskIsNamedAndTheStoreKeepsItsLastCommit() throws {
        let mountPoint = tmp.url.appendingPathComponent("small-disk").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mounted = try shell("mount -t tmpfs -o size=1m tmpfs '\(mountPoint)'")
        try #require(mounted.status == 0, "mount: \(mounted.err)")
        defer { _ = try? shell("umount '\(mountPoint)'") }
        let store = try Store(atPath: mountPoint + "/store", types: [Task.self, Counter.self])
        var committed = 0
        var failure: LodeError?
        let title = String(repeating: "t", count: 1000)
        for round in 1...400 {
            do {
                try store.write { tx in
                    for index in 0..<20 {
                        let id = round * 100 + index
                        try tx.insert(Task(id: id, title: title + "\(id)", rank: id, done: false, group: "g"))
                    }
                    try tx.upsert(Counter(name: "commits", value: round))
                }
                committed = round
            } catch let error as LodeError {
                failure = error
                break
            }
        }
        guard case .storage(let storage)? = failure else {
            Issue.record(
                "expected the disk to fill, got \(String(describing: failure)) after \(committed) commits")
            return
        }
        #expect(storage.reason == .diskFull, "\(storage)")
        #expect(storage.description.contains("no space left"), "\(storage)")
        let (counter, tasks, report) = try store.read { tx in
            (
                try tx.object(Counter.self, key: "commits")?.value, try tx.count(Task.self),
                try tx.checkIntegrity()
            )
        }
        #expect(counter == committed && tasks == committed * 20)
        #expect(report.problems.isEmpty, "\(report.problems.prefix(3))")
        store.close()
    }
}
