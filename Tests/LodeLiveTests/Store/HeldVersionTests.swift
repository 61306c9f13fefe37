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

/// Versions held by results an app keeps: reported with their holders, warned about once when they
/// fall behind, and bounded when the app asks for it.
@Suite struct HeldVersionTests {
    let tmp = TemporaryDirectory()

    /// Collects what the lag handler is told.
    final class Warnings: @unchecked Sendable {
        private let lock = NSLock()
        private var received: [HeldVersion] = []
        private let arrived = DispatchSemaphore(value: 0)

        var all: [HeldVersion] { lock.withLock { received } }

        func record(_ held: HeldVersion) {
            lock.withLock { received.append(held) }
            arrived.signal()
        }

        /// Waits for one more warning; false after `seconds` without one.
        func next(within seconds: Double = 5) -> Bool { arrived.wait(timeout: .now() + seconds) == .success }
    }

    func store(_ configuration: StoreConfiguration) throws -> Store {
        let store = try Store(at: tmp.url, configuration: configuration, types: [Task.self])
        try store.write { tx in
            for id in 0..<20 {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g"))
            }
        }
        return store
    }

    func touch(_ store: Store, _ round: Int) throws {
        try store.write { tx in try tx.update(Task.self, key: round % 20) { $0.rank += 1 } }
    }

    @Test func keptResultsAreReportedWithTheirHolderAndWarnedAboutOnce() throws {
        let store = try store(StoreConfiguration(versionLagWarning: 10))
        let warnings = Warnings()
        store.versionLagHandler = { warnings.record($0) }
        var kept: Results<Task>? = store.objects(Task.self).filter(#Predicate { $0.rank < 10 })
        #expect(try kept?.count == 10)
        let version = try #require(try store.heldVersions().first?.version)
        #expect(try store.heldVersions().map(\.owners) == [["Results<Task>"]])
        for round in 0..<25 { try touch(store, round) }
        #expect(warnings.next(), "no warning after 25 commits")
        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.version == version)
        #expect(warnings.all.first?.owners == ["Results<Task>"])
        #expect(warnings.all.first?.behind == 10)
        #expect(try store.heldVersions().first?.behind == 25)
        // Once per holder and version: more commits say nothing more.
        for round in 0..<15 { try touch(store, round) }
        #expect(!warnings.next(within: 0.3))
        #expect(warnings.all.count == 1)
        kept = nil
        #expect(try store.heldVersions().isEmpty)
    }

    @Test func liveResultsAreHoldersUntilTheyRefresh() throws {
        let store = try store(StoreConfiguration(versionLagWarning: 5))
        let warnings = Warnings()
        store.versionLagHandler = { warnings.record($0) }
        let live = try LiveResults(store.objects(Task.self).sorted(by: \.rank))
        for round in 0..<6 { try touch(store, round) }
        #expect(warnings.next())
        #expect(warnings.all.first?.owners == ["LiveResults<Task>"])
        _ = try live.refresh()
        #expect(try store.heldVersions().allSatisfy { $0.behind == 0 })
        // Refreshed, it is a new holder at a new version: it warns again when it falls behind again.
        for round in 0..<5 { try touch(store, round) }
        #expect(warnings.next())
        #expect(warnings.all.count == 2)
    }

    @Test func aLimitRefusesWritesUntilTheHolderLetsGo() throws {
        let store = try store(StoreConfiguration(versionLagWarning: 0, maxVersionLag: 5))
        var kept: Results<Task>? = store.objects(Task.self)
        #expect(try kept?.count == 20)
        for round in 0..<5 { try touch(store, round) }
        #expect {
            try touch(store, 5)
        } throws: { error in
            guard case .versionHeldTooLong(let held, let limit) = error as? LodeError else { return false }
            return limit == 5 && held.owners == ["Results<Task>"] && held.behind == 6
        }
        // Nothing was written by the refused write.
        #expect(try store.read { try $0.object(Task.self, key: 5) }?.rank == 5)
        kept = nil
        try touch(store, 5)
        #expect(try store.read { try $0.object(Task.self, key: 5) }?.rank == 6)
    }

    /// Issue 23, finding 8: the warning ran on a queue of its own, and a process that exited right
    /// after the commit that crossed the threshold printed it in one run of three.
    @Test func theWarningIsGivenBeforeTheWriteReturns() throws {
        for run in 0..<3 {
            let directory = tmp.url.appendingPathComponent("exit-\(run)")
            let result = try shell("'\(builtTool("lode-test-helper"))' lag-and-exit '\(directory.path)' 100")
            #expect(result.status == 0, "\(result.err)")
            #expect(
                result.err.contains("(held by Results<Task>) is 100 versions behind the last commit"),
                "run \(run): \(result.err)")
        }
        // In process: told on the committing thread, before write returns.
        let store = try store(StoreConfiguration(versionLagWarning: 5))
        let warnings = Warnings()
        store.versionLagHandler = { warnings.record($0) }
        let kept = store.objects(Task.self)
        _ = try kept.count
        for round in 0..<5 { try touch(store, round) }
        #expect(warnings.all.count == 1)
    }

    /// Issue 23, finding 8: a reader of another process that fell behind (frozen, or slow) grew the
    /// file while no process was told.
    @Test func aReaderOfAnotherProcessIsWarnedAboutWithItsProcess() throws {
        let store = try store(StoreConfiguration(versionLagWarning: 50))
        let warnings = Warnings()
        store.versionLagHandler = { warnings.record($0) }
        let reader = try ToolProcess(["hold-reader", tmp.path], tool: "lode-test-helper")
        let pid = reader.process.processIdentifier
        defer {
            kill(pid, SIGKILL)
            reader.process.waitUntilExit()
        }
        reader.read(until: "\n")
        let line = reader.output
        #expect(line.hasPrefix("holding"), "\(line)")
        let version = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        // Stopped, as a frozen process would be.
        kill(pid, SIGSTOP)
        for round in 0..<60 { try touch(store, round) }
        let told = warnings.all.filter { $0.processID != nil }
        #expect(told.count == 1, "\(warnings.all)")
        #expect(told.first?.processID == pid)
        #expect(told.first?.version == version)
        #expect(told.first?.owners == ["a reader of process \(pid)"])
        #expect((told.first?.behind ?? 0) >= 50)
        // Once per process and version.
        for round in 0..<60 { try touch(store, round) }
        #expect(warnings.all.filter { $0.processID != nil }.count == 1)
    }

    @Test func theDefaultWarningIsOneLineOnStandardError() {
        let held = HeldVersion(version: 12, owners: ["LiveResults<Task>", "Results<Task> ×2"], behind: 1000)
        #expect(
            held.description
                == "version 12 (held by LiveResults<Task>, Results<Task> ×2) is 1000 versions behind the last commit"
        )
    }
}
