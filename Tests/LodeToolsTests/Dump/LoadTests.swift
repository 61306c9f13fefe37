import Foundation
import Lode
import ModelStorage
import StoredQuery
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeStudio
@testable import LodeTestModels
@testable import LodeTestSupport

/// `lode-dump load` (run with batches of 1,000, `LODE_DUMP_LOAD_BATCH`) into a new store: streamed in batches of transactions into a staging directory
/// renamed into place, so a load larger than a batch is complete, a killed load leaves nothing at
/// the target, and files that are not a store are never replaced.
@Suite struct LoadTests {
    let tmp = TemporaryDirectory()
    let binary = "LODE_DUMP_LOAD_BATCH=1000 '\(builtTool("lode-dump"))'"

    /// A store with more records than one batch of a load, in two types with indexes.
    func bigStore() throws -> URL {
        let source = tmp.url.appendingPathComponent("source")
        let store = try Store(at: source, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<4_500 {
                try tx.insert(
                    Task(id: id, title: "task \(id)", rank: id % 101, done: id % 2 == 0, group: "g\(id % 9)"))
            }
            for name in 0..<300 { try tx.insert(Counter(name: "c\(name)", value: name)) }
        }
        store.close()
        return source
    }

    @Test func exportsAndRawDumpsLargerThanABatchLoadCompletely() throws {
        let source = try bigStore()
        let export = tmp.url.appendingPathComponent("export.ndjson").path
        #expect(try shell("\(binary) export '\(source.path)' > '\(export)'").status == 0)
        let raw = tmp.url.appendingPathComponent("raw.txt").path
        #expect(try shell("\(binary) raw '\(source.path)' --all > '\(raw)'").status == 0)
        for (input, name) in [(export, "from-export"), (raw, "from-raw")] {
            let target = tmp.url.appendingPathComponent(name)
            let loaded = try shell("\(binary) load '\(target.path)' < '\(input)'")
            #expect(loaded.status == 0, "\(loaded.err)")
            let check = try shell("\(binary) check '\(target.path)'")
            #expect(check.status == 0, "\(check.out)")
            let store = try Store(at: target, types: [Task.self, Counter.self])
            #expect(try store.read { try $0.count(Task.self) } == 4_500)
            #expect(try store.read { try $0.count(Counter.self) } == 300)
            #expect(try store.read { try $0.object(Task.self, key: 4_499) }?.rank == 4_499 % 101)
            let staged = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter {
                $0.hasPrefix(".")
            }
            #expect(staged.isEmpty, "staging left behind: \(staged)")
            store.close()
        }
        // The raw load reproduces the source byte for byte, database by database.
        let again = try shell("\(binary) raw '\(tmp.url.appendingPathComponent("from-raw").path)' --all")
        let original = try String(contentsOfFile: raw, encoding: .utf8)
        func withoutMapSize(_ dump: String) -> [Substring] {
            dump.split(separator: "\n").filter { !$0.hasPrefix("mapsize=") }
        }
        #expect(withoutMapSize(again.out) == withoutMapSize(original))
    }

    /// Issue 23, finding 1: a load into a store that exists (in place, one transaction) kept only the
    /// last batch of each type, said it loaded everything and exited 0.
    @Test func aLoadIntoAnExistingStoreKeepsEveryBatch() throws {
        let source = try bigStore()
        let export = tmp.url.appendingPathComponent("export.ndjson").path
        #expect(try shell("\(binary) export '\(source.path)' > '\(export)'").status == 0)
        // One target holding other objects of the same types (--force), one empty store.
        let full = tmp.url.appendingPathComponent("full")
        let store = try Store(at: full, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 10_000..<10_020 {
                try tx.insert(Task(id: id, title: "old \(id)", rank: 1, done: false, group: "old"))
            }
        }
        store.close()
        let empty = tmp.url.appendingPathComponent("empty")
        try Store(at: empty, types: [Task.self]).close()
        for (target, flags) in [(full, "--force"), (empty, "")] {
            let loaded = try shell("\(binary) load '\(target.path)' \(flags) < '\(export)'")
            #expect(loaded.status == 0, "\(loaded.err)")
            let reopened = try Store(at: target, types: [Task.self, Counter.self])
            #expect(try reopened.read { try $0.count(Task.self) } == 4_500, "\(target.lastPathComponent)")
            #expect(try reopened.read { try $0.count(Counter.self) } == 300, "\(target.lastPathComponent)")
            #expect(try reopened.read { try $0.object(Task.self, key: 0) }?.title == "task 0")
            #expect(try reopened.read { try $0.object(Task.self, key: 10_000) } == nil)
            // Indexes hold every record too.
            let group = reopened.objects(Task.self).filter(#Predicate { $0.group == "g3" })
            #expect(try group.count == 500)
            reopened.close()
            let check = try shell("\(binary) check '\(target.path)'")
            #expect(check.status == 0, "\(check.out)")
        }
    }

    @Test func aLoadKilledHalfwayLeavesNoStoreAtTheTarget() throws {
        let source = try bigStore()
        let export = try shell("\(binary) export '\(source.path)'").out
        let target = tmp.url.appendingPathComponent("target")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtTool("lode-dump"))
        process.environment = ProcessInfo.processInfo.environment.merging(["LODE_DUMP_LOAD_BATCH": "1000"]) {
            $1
        }
        process.arguments = ["load", target.path]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Two thirds of the export: more than a batch has been committed in the staging directory.
        let bytes = Data(export.utf8)
        input.fileHandleForWriting.write(bytes.prefix(bytes.count * 2 / 3))
        // The work runs in lode-dump's worker process: find its staging directory by name.
        func staging() -> String? {
            (try? FileManager.default.contentsOfDirectory(atPath: tmp.path))?.first {
                $0.hasPrefix(".target.loading-")
            }
        }
        let deadline = Date().addingTimeInterval(60)
        var committed = 0
        while Date() < deadline, committed < 2_000 {
            if let staging = staging(),
                let store = try? Store(
                    at: tmp.url.appendingPathComponent(staging),
                    configuration: StoreConfiguration(readOnly: true))
            {
                committed = (try? store.read { try $0.storedTypes() }.reduce(0) { $0 + $1.objectCount }) ?? 0
                store.close()
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(committed >= 2_000, "the load never committed two batches")
        // SIGKILL cannot be forwarded: the worker notices its supervisor is gone and stops too.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let worker = try #require(staging().flatMap { Int32($0.split(separator: "-").last ?? "") })
        func workerIsRunning() -> Bool {
            guard let status = try? String(contentsOfFile: "/proc/\(worker)/status", encoding: .utf8) else {
                return false
            }
            return !status.contains("State:\tZ")
        }
        let stopDeadline = Date().addingTimeInterval(10)
        while workerIsRunning() && Date() < stopDeadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(!workerIsRunning(), "the worker went on after its supervisor was killed")
        input.fileHandleForWriting.closeFile()
        #expect(!FileManager.default.fileExists(atPath: target.path), "a partial store at the target")
        #expect(staging() != nil, "the staging directory is what a killed load leaves")
    }

    @Test func filesThatAreNotAStoreAreNeverReplaced() throws {
        let target = tmp.url.appendingPathComponent("notes")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: target.appendingPathComponent("notes.txt"))
        let source = tmp.url.appendingPathComponent("small")
        let store = try Store(at: source, types: [Counter.self])
        try store.write { tx in try tx.insert(Counter(name: "a", value: 1)) }
        store.close()
        let export = tmp.url.appendingPathComponent("small.ndjson").path
        #expect(try shell("\(binary) export '\(source.path)' > '\(export)'").status == 0)
        let refused = try shell("\(binary) load '\(target.path)' --force < '\(export)'")
        #expect(refused.status == 1)
        #expect(refused.err.contains("holds files that are not a store"), "\(refused.err)")
        #expect(
            try String(contentsOf: target.appendingPathComponent("notes.txt"), encoding: .utf8) == "keep me")
    }
}
