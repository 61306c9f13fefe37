import Dispatch
import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct CrashDurabilityTests {
    let tmp = TemporaryDirectory()

    /// A writer process is SIGKILLed at random moments — in small commits, in 1,000-object commits
    /// that grow a map that started at 64 KiB, in commits of a 200 KB record — 50 times. After each
    /// kill every commit it acknowledged is there, nothing of a commit it did not finish is visible,
    /// the store's records and indexes check clean, and an observer in this process, which survives
    /// every kill, keeps receiving exact changes.
    @Test func acknowledgedCommitsSurviveKillsAndNothingPartialIsVisible() throws {
        let path = tmp.url.appendingPathComponent("crash").path
        var rng = SeededGenerator(seed: 0xdead)
        var model = CrashModel()
        var acknowledged = 0
        var kills = 0
        var checking = 0.0

        // The surviving observer: a live sorted list replayed on the list mirror.
        let store = try Store(atPath: path, types: [Task.self, Counter.self])
        // A seventh of the tasks, so replaying each change stays cheap.
        let observed = store.objects(Task.self).filter(#Predicate { $0.group == "g0" }).sorted(by: \.rank)
        let replayer = ListReplayer("observer across kills")
        let started = DispatchSemaphore(value: 0)
        let token = observed.observe { replayer.follow($0, started: started) }
        #expect(started.wait(timeout: .now() + 10) == .success)

        // `make soak` raises the number of kills (LODE_CRASH_KILLS); `make test` runs 50.
        let rounds = ProcessInfo.processInfo.environment["LODE_CRASH_KILLS"].flatMap(Int.init) ?? 50
        for round in 0..<rounds {
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: builtTool("lode-test-helper"))
            writer.arguments = ["crash-writer", path]
            let output = Pipe()
            writer.standardOutput = output
            try writer.run()
            // Every other round waits for the writer's first acknowledged commit, so the kill lands
            // among commits rather than while it opens the store; then a random moment.
            var early = Data()
            if round % 2 == 0 {
                while !String(decoding: early, as: UTF8.self).contains("ack ") {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    early.append(chunk)
                }
            }
            Thread.sleep(forTimeInterval: Double.random(in: 0.001...0.06, using: &rng))
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            kills += 1
            let printed = String(
                decoding: early + output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in printed.split(separator: "\n") where line.hasPrefix("ack ") {
                acknowledged = max(acknowledged, Int(line.dropFirst(4)) ?? 0)
            }

            let started = Date()
            let (counter, tasks, report) = try store.read { tx in
                (
                    try tx.object(Counter.self, key: "commits")?.value ?? 0,
                    try tx.objects(Task.self).fetch(),
                    try tx.checkIntegrity()
                )
            }
            checking += Date().timeIntervalSince(started)
            #expect(
                counter >= acknowledged,
                "round \(round): commit \(acknowledged) was acknowledged, the store holds \(counter)")
            model.advance(to: counter)
            // Exactly the state after commit `counter`: the commit in flight left nothing.
            #expect(tasks.count == model.tasks.count, "round \(round) at commit \(counter)")
            for task in tasks {
                guard let writtenBy = model.tasks[task.id] else {
                    Issue.record("round \(round): task \(task.id) should not exist at commit \(counter)")
                    continue
                }
                #expect(task.rank == writtenBy && task.title == CrashPlan.title(writtenBy, task.id))
            }
            #expect(report.problems.isEmpty, "round \(round): \(report.problems.prefix(3))")
        }
        #expect(acknowledged > rounds, "the writer acknowledged only \(acknowledged) commits")
        #expect(model.version >= 3 + 29, "fewer than two bulk commits were made (\(model.version) commits)")

        // The observer reaches the last version and shows exactly a fresh read.
        try store.write { try $0.upsert(Counter(name: "observer", value: 1)) }
        try store.write { try $0.insert(Task(id: 99_999, title: "last", rank: -1, done: false, group: "g0")) }
        let last = try store.read { $0.version }
        #expect(eventually(30) { replayer.state.withLock { $0.version } == last })
        let state = replayer.state.withLock { $0 }
        #expect(state.sections == [ids(observed.copyingQuery(of: observed))])
        #expect(state.failures.isEmpty, "\(state.failures.prefix(3))")
        print(
            "crash durability: \(kills) kills, \(model.version) commits verified, \(acknowledged) acknowledged, "
                + "\(Int(checking * 1000)) ms checking")
        token.cancel()
    }
}
