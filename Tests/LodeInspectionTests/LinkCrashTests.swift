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

/// A writer process building linked projects and deleting them by cascade is SIGKILLed at random
/// moments, most of them inside a cascade's commit; after each kill the graph is whole: every project
/// has all its tasks or is gone with all of them, no link dangles, every inverse index agrees with
/// the records.
@Suite struct LinkCrashTests {
    let tmp = TemporaryDirectory("link-crash")

    @Test func aWriterKilledMidCascadeLeavesTheGraphWhole() throws {
        let path = tmp.url.appendingPathComponent("cascade").path
        var rng = SeededGenerator(seed: 0xca5c)
        var cascadesSeen = 0
        var killedMidCascade = 0
        var checking = 0.0
        let started = Date()
        let rounds =
            ProcessInfo.processInfo.environment["LODE_CRASH_KILLS"].flatMap(Int.init).map { $0 / 3 } ?? 16
        defer {
            print(
                "link crash test: \(rounds) kills in \(Date().timeIntervalSince(started)) s, checking \(checking) s, \(killedMidCascade) mid-cascade"
            )
        }
        for round in 0..<rounds {
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: builtTool("lode-test-helper"))
            writer.arguments = ["cascade-writer", path]
            let output = Pipe()
            writer.standardOutput = output
            try writer.run()
            // Most rounds kill the writer just after it announced a cascade (deleting 400 tasks and
            // their subtasks takes far longer than the few milliseconds allowed); every fourth waits
            // for a finished cascade and kills at any moment after.
            let anyMoment = round % 4 == 3
            var printed = Data()
            while !String(decoding: printed, as: UTF8.self).split(separator: "\n").contains(where: {
                anyMoment ? $0.hasPrefix("deleted ") && $0 != "deleted 0" : $0.hasPrefix("cascading ")
            }) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                printed.append(chunk)
            }
            Thread.sleep(forTimeInterval: Double.random(in: 0.0...(anyMoment ? 0.03 : 0.003), using: &rng))
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            printed.append(output.fileHandleForReading.readDataToEndOfFile())
            let lines = String(decoding: printed, as: UTF8.self).split(separator: "\n")
            cascadesSeen += lines.filter { $0.hasPrefix("deleted ") && $0 != "deleted 0" }.count
            if lines.last?.hasPrefix("cascading ") == true { killedMidCascade += 1 }

            let checkStarted = Date()
            defer { checking += Date().timeIntervalSince(checkStarted) }
            let store = try Store(at: URL(fileURLWithPath: path), types: [])
            defer { store.close() }
            try store.inspect { (tx: Transaction) throws in
                let problems = try tx.checkIntegrity().problems
                #expect(problems.isEmpty, "round \(round): \(problems.prefix(5))")
                let projects = try tx.storedRecords(of: "Project").map {
                    try CBORValue(decoding: $0.bytes)["id"]?.json ?? "?"
                }
                var tasksPerProject: [String: Int] = [:]
                for record in try tx.storedRecords(of: "Task") {
                    let task = try CBORValue(decoding: record.bytes)
                    tasksPerProject[task["project"]?.json ?? "none", default: 0] += 1
                }
                #expect(tasksPerProject["none"] == nil, "round \(round): a task lost its project")
                for project in projects {
                    #expect(
                        tasksPerProject[project] == 400,
                        "round \(round): project \(project) has \(tasksPerProject[project] ?? 0) tasks")
                }
                #expect(
                    tasksPerProject.count == projects.count,
                    "round \(round): tasks of a deleted project remain")
            }
        }
        // The kills landed where they were meant to: inside cascades, and after finished ones.
        #expect(cascadesSeen >= rounds / 4)
        #expect(killedMidCascade >= rounds / 4)
    }
}
