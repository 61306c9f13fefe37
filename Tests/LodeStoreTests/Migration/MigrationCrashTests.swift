import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct MigrationCrashTests {
    let tmp = TemporaryDirectory()

    /// Every item as stored, read without Swift types: id → (fields, name or title, value).
    func items() throws -> [Int: CBORValue] {
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        defer { store.close() }
        var result: [Int: CBORValue] = [:]
        for record in try store.read({ try $0.storedRecords(of: "Item") }) {
            let value = try CBORValue(decoding: record.bytes)
            guard case .unsigned(let id) = value["id"] else { continue }
            result[Int(id)] = value
        }
        return result
    }

    func history() throws -> Int {
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        defer { store.close() }
        return try store.read { try $0.schemaHistory() }.version
    }

    /// A process SIGKILLed in the middle of a large migration leaves the store exactly at its old
    /// version with every record as it was; the next open runs the migration again, to its end.
    @Test func aMigrationKilledHalfwayLeavesTheOldVersionAndRunsAgain() throws {
        let helper = builtTool("lode-test-helper")
        let count = 20_000
        #expect(try shell("'\(helper)' migration-seed '\(tmp.path)' \(count)").status == 0)
        var kills = 0
        for delay in [0.02, 0.1, 0.3] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: helper)
            process.arguments = ["migration-run", tmp.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("migrating") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
            }
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            guard process.terminationReason == .uncaughtSignal else { continue }  // it finished first
            kills += 1
            #expect(try history() == 0)
            let stored = try items()
            #expect(stored.count == count)
            #expect(stored.values.allSatisfy { $0["title"] == nil && $0["note"] == nil })
            #expect(stored[77]?["name"] == .text("item 77") && stored[77]?["value"] == .unsigned(77))
        }
        #expect(kills > 0, "every run finished before the kill")
        let finished = try shell("'\(helper)' migration-run '\(tmp.path)'")
        #expect(finished.status == 0 && finished.out.contains("done"), "\(finished.err)")
        #expect(try history() == 1)
        let stored = try items()
        #expect(stored.count == count)
        #expect(stored[77]?["title"] == .text("item 77") && stored[77]?["value"] == .unsigned(154))
        #expect(stored.values.allSatisfy { $0["name"] == nil && $0["note"] == .text("migrated") })
        let check = try shell("'\(builtTool("lode-dump"))' check '\(tmp.path)'")
        #expect(check.status == 0, "\(check.out)")
    }
}
