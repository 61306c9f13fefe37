import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Power cuts, staged (docs/POWERCUT.md): each workload runs as its own process under the power-cut
/// layer, which records every change it makes to the store's files and kills it at a seeded
/// operation; from the trace, the states a power cut could leave on disk are built — the files as of
/// their last sync plus a seeded subset of the later writes, in any order, torn at sector
/// boundaries, with unsynced name changes lost — and each is opened by a checker process as an app
/// would, with and without the page check, and compared with what the writer had acknowledged.
@Suite struct PowerCutTests {
    let tmp = TemporaryDirectory("powercut")

    /// Cut points per durability mode: `make test` runs 100 (plus 60 of `load` and `compact`),
    /// `make soak` 10,000 (LODE_POWERCUT_CUTS).
    static let cutsPerMode =
        ProcessInfo.processInfo.environment["LODE_POWERCUT_CUTS"].flatMap(Int.init) ?? 100

    /// Every mode keeps its promise in every crash state of the single-writer commits (with
    /// savepoints, bulk commits and map growth), of eight writers in group commit, and of a
    /// migration: `.full` and `.writeMap` lose no acknowledged commit, `.noMetaSync` at most the last
    /// one, and the no-sync modes show a consistent earlier state or refuse to open with the damage
    /// named — never a crash, never a state no commit made.
    @Test(arguments: Store.Durability.allCases)
    func everyCrashStateKeepsTheModesPromise(mode: Store.Durability) throws {
        let harness = try PowerCutHarness(tmp: tmp.url, mode: mode, seed: 0x9_0e7_c07 &+ UInt64(mode.index))
        // Half the cuts in single commits, three in ten among group commits, the rest in migrations.
        try harness.cut(workload: "commits", cuts: Self.cutsPerMode / 2)
        try harness.cut(workload: "group", cuts: Self.cutsPerMode * 3 / 10)
        try harness.cut(
            workload: "migrate", cuts: Self.cutsPerMode - Self.cutsPerMode / 2 - Self.cutsPerMode * 3 / 10)
        harness.report()
        #expect(harness.cuts >= Self.cutsPerMode)
        #expect(harness.failures.isEmpty, "\(harness.failures.prefix(5).joined(separator: "\n"))")
    }

    /// The findings of the first cuts, each as its crash state: the state with nothing pending
    /// (every file as of its last sync, every name as of its directory's last sync) right after the
    /// first acknowledgement holds what was acknowledged. Before the fixes, each was gone: LMDB never
    /// syncs a directory, so a new store's `data.mdb` (and with it every commit) could vanish; a
    /// compacted copy was never synced at all; a loaded store's rename into place was not synced.
    @Test(arguments: ["commits", "load", "compact"])
    func whatWasAcknowledgedIsOnDiskWithNothingPending(workload: String) throws {
        let harness = try PowerCutHarness(tmp: tmp.url, mode: .full, seed: 7)
        let outcome = try harness.stateAfterFirstAcknowledgement(workload)
        #expect(
            outcome.hasPrefix(
                workload == "commits"
                    ? "opened 1" : workload == "load" ? "opened complete" : "opened with copy"), "\(outcome)")
    }

    /// The states of many cuts, built in one pass over the trace (as the suite builds them), are
    /// byte for byte the states of each cut built on its own from the start of the trace.
    @Test func statesBuiltInOnePassAreTheStatesOfEachCutBuiltAlone() throws {
        let harness = try PowerCutHarness(tmp: tmp.url, mode: .noSync, seed: 11)
        let trace = try harness.traceOfAFullRun("commits")
        let count = trace.events.count
        #expect(count > 100)
        // Out of order, with a repeat and both ends: the builder sorts them and keeps their order.
        let positions = [count, count / 2, 1, count / 3, count / 2, count - 7]
        let variants: [CrashVariant] = [.nothingPending, .everything, .random(seed: 5)]
        func folder(_ way: String, _ cut: Int, _ variant: Int) -> URL {
            tmp.url.appendingPathComponent("\(way)/\(cut)-\(variant)")
        }
        let builder = CrashStateBuilder(trace)
        var stores = 0
        let together = try builder.build(
            cuts: positions.indices.map { cut in
                (positions[cut], variants.indices.map { (variants[$0], folder("together", cut, $0)) })
            })
        for cut in positions.indices {
            let alone = try builder.build(
                at: positions[cut],
                variants: variants.indices.map { (variants[$0], folder("alone", cut, $0)) })
            #expect(together[cut].map(\.description) == alone.map(\.description))
            for variant in variants.indices {
                let a = try Self.files(in: folder("together", cut, variant))
                let b = try Self.files(in: folder("alone", cut, variant))
                #expect(a == b, "cut \(cut) at \(positions[cut]), variant \(variant)")
                if a.keys.contains(where: { $0.hasSuffix("data.mdb") }) { stores += 1 }
            }
        }
        #expect(stores >= 12, "the cuts after the store's creation hold its data file")
    }

    /// Every file under `directory`, by relative path, with its bytes.
    static func files(in directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: directory.path) {
            let url = directory.appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            files[path] = isDirectory.boolValue ? Data() : try Data(contentsOf: url)
        }
        return files
    }

    /// A store a process was writing without syncing when the system went down (its marker names
    /// another boot) is checked at the next open, whatever the configuration: whole, it opens and
    /// the marker goes; with an index entry missing — what pages written back in any order leave —
    /// it is refused as damaged, naming the problem, and stays refused until repaired.
    @Test func afterASystemCrashTheStoreIsCheckedAndADamagedOneRefused() throws {
        let path = tmp.url.appendingPathComponent("crashed").path
        let marker = path + "/.unsynced-4194000"
        do {
            let store = try Store(
                atPath: path, configuration: StoreConfiguration(durability: .noSync), types: [Task.self])
            try store.write { tx in
                for id in 0..<50 {
                    try tx.insert(Task(id: id, title: "t\(id)", rank: id % 9, done: false, group: "g"))
                }
            }
            store.close()
        }
        try Data("an earlier boot\n".utf8).write(to: URL(fileURLWithPath: marker))
        do {
            let store = try Store(atPath: path, types: [Task.self])
            #expect(try store.read { try $0.objects(Task.self).count } == 50)
            store.close()
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "a store that passes forgets the crash")

        do {
            // (The environment closes at the end of this block: markers are read when it opens.)
            let environment = try LMDB.Environment.open(at: path)
            let rank = try environment.database(named: "Task.rank", kind: .duplicates, create: false)
            let encoder = KeyEncoder()
            try environment.write {
                try $0.delete(try encoder.encode(8), value: try encoder.encode(8), in: rank)
            }
        }
        // Without a crash marker, the open trusts the file (as before).
        do { try Store(atPath: path, types: [Task.self]).close() }
        try Data("an earlier boot\n".utf8).write(to: URL(fileURLWithPath: marker))
        for _ in 0..<2 {
            do {
                _ = try Store(atPath: path, types: [Task.self])
                Issue.record("a damaged store opened after a system crash")
            } catch LodeError.storage(let failure) {
                #expect(failure.reason == .damaged)
                #expect(failure.message.contains("Task 8 is missing"), "\(failure.message)")
            }
            #expect(
                FileManager.default.fileExists(atPath: marker),
                "the crash is remembered until the store passes")
        }
    }

    /// `lode-dump load` into a new store and `lode-dump compact`: the store or the copy is complete
    /// or not there, in every crash state, and is there once the command has returned.
    @Test func loadAndCompactAreAllOrNothing() throws {
        let harness = try PowerCutHarness(tmp: tmp.url, mode: .full, seed: 0x10ad)
        try harness.cut(workload: "load", cuts: Self.cutsPerMode * 3 / 10)
        try harness.cut(workload: "compact", cuts: Self.cutsPerMode * 3 / 10)
        harness.report()
        #expect(harness.failures.isEmpty, "\(harness.failures.prefix(5).joined(separator: "\n"))")
    }

    /// `Store.changeEncryption` encrypting a store in place: in every crash state the store opens
    /// whole with the old key (none) or the new one, and with the new one once the change returned.
    @Test func aKeyChangeIsAllOrNothing() throws {
        let harness = try PowerCutHarness(tmp: tmp.url, mode: .full, seed: 0x6b_6579)
        try harness.cut(workload: "key-change", cuts: Self.cutsPerMode * 3 / 10)
        harness.report()
        #expect(harness.failures.isEmpty, "\(harness.failures.prefix(5).joined(separator: "\n"))")
    }
}

extension Store.Durability {
    fileprivate var index: Int { Self.allCases.firstIndex(of: self) ?? 0 }
    fileprivate var keepsEveryCommit: Bool { self == .full || self == .writeMap }
    fileprivate var syncs: Bool { keepsEveryCommit || self == .noMetaSync }
}

/// Runs workloads under the power-cut layer, builds their crash states and judges them.
final class PowerCutHarness {
    let tmp: URL
    let mode: Store.Durability
    var rng: SeededGenerator
    let seed: UInt64
    private(set) var cuts = 0
    private(set) var states = 0
    private(set) var failures: [String] = []
    private var outcomes: [String: Int] = [:]
    private var runs = 0

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let layer = packageRoot.appendingPathComponent(".build/powercut/libpowercut.so")
    static let failuresDirectory = packageRoot.appendingPathComponent(".build/powercut-failures")
    /// The writers and the checker: `make test` passes a release build (LODE_POWERCUT_HELPER), three
    /// to four times faster at checking a state than the debug build, which is used otherwise.
    static let helper =
        ProcessInfo.processInfo.environment["LODE_POWERCUT_HELPER"] ?? builtTool("lode-test-helper")

    init(tmp: URL, mode: Store.Durability, seed: UInt64) throws {
        self.tmp = tmp.appendingPathComponent("\(mode)")
        self.mode = mode
        self.seed = seed
        rng = SeededGenerator(seed: seed)
        try FileManager.default.createDirectory(at: self.tmp, withIntermediateDirectories: true)
        try Self.buildLayer()
    }

    /// Builds the layer when it is missing or older than its source (`make powercut` does the same).
    static func buildLayer() throws {
        let source = packageRoot.appendingPathComponent("Tools/powercut/powercut.c")
        let manager = FileManager.default
        func modified(_ url: URL) -> Date? {
            (try? manager.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
        }
        if let built = modified(layer), let written = modified(source), built >= written { return }
        try manager.createDirectory(at: layer.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try shell("cc -O2 -Wall -shared -fPIC -o '\(layer.path)' '\(source.path)' -ldl")
        guard result.status == 0 else { throw PowerCutError("building the power-cut layer: \(result.err)") }
    }

    /// Cuts `workload` about `cuts` times: a first run to its end, then runs cut for real at a
    /// seeded operation; each trace gives cut points before its operations.
    func cut(workload: String, cuts wanted: Int) throws {
        var done = 0
        var operations: Int?
        var round = 0
        while done < wanted {
            let directory = tmp.appendingPathComponent("\(workload)-\(round)")
            try? FileManager.default.removeItem(at: directory)
            let root = directory.appendingPathComponent("root")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try prepare(workload, root: root)
            let at = operations.map { Int.random(in: 1...$0, using: &rng) }
            let (trace, status) = try run(workload, root: root, directory: directory, cutAt: at)
            runs += 1
            if operations == nil {
                guard status == 0 else {
                    failures.append("\(mode) \(workload): the run without a cut failed (\(status))")
                    return
                }
                operations = trace.cutPoints.count - 1
            }
            // The process acknowledges by marks; `lode-dump` by returning, which is after its last
            // operation.
            let returned = !trace.wasCut && status == 0
            var points = trace.cutPoints
            let last = points.removeLast()
            let perTrace = max(1, min(points.count + 1, (wanted - done) / max(1, 4 - round)))
            var chosen = [last]
            chosen += points.shuffled(using: &rng).prefix(perTrace - 1)
            try judge(
                workload, trace: trace, positions: chosen, acknowledgedAtEnd: returned, directory: directory,
                round: round)
            done += chosen.count
            round += 1
            try? FileManager.default.removeItem(at: directory)
        }
        cuts += done
    }

    /// Runs `workload` to its end and checks the state with nothing pending just after its first
    /// acknowledgement (the first mark, or the end for `lode-dump`); returns the checker's outcome.
    func stateAfterFirstAcknowledgement(_ workload: String) throws -> String {
        let directory = tmp.appendingPathComponent("\(workload)-acknowledged")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try prepare(workload, root: root)
        let (trace, status) = try run(workload, root: root, directory: directory, cutAt: nil)
        guard status == 0 else { return "the workload failed (\(status))" }
        let position =
            trace.events.firstIndex { if case .mark = $0 { true } else { false } }.map { $0 + 1 }
            ?? trace.events.count
        let state = directory.appendingPathComponent("state")
        try CrashStateBuilder(trace).build(at: position, variant: .nothingPending, into: state)
        return try check(workload, states: [state.path])["\(state.path) default"] ?? "no outcome"
    }

    /// The trace of `workload` run to its end, without a cut.
    func traceOfAFullRun(_ workload: String) throws -> PowerCutTrace {
        let directory = tmp.appendingPathComponent("\(workload)-full")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try prepare(workload, root: root)
        let (trace, status) = try run(workload, root: root, directory: directory, cutAt: nil)
        guard status == 0 else { throw PowerCutError("\(workload) failed (\(status))") }
        return trace
    }

    private func prepare(_ workload: String, root: URL) throws {
        let store = root.appendingPathComponent("store").path
        switch workload {
        case "migrate":
            let result = try shell("'\(Self.helper)' powercut-items '\(store)'")
            guard result.status == 0 else { throw PowerCutError("powercut-items: \(result.err)") }
        case "compact", "key-change":
            let result = try shell("'\(Self.helper)' powercut-source '\(store)'")
            guard result.status == 0 else { throw PowerCutError("powercut-source: \(result.err)") }
        case "load":
            _ = try exportFile()
        default: break
        }
    }

    private var export: URL?

    /// The ndjson export `load` reads: the source store of `powercut-source`, exported once.
    private func exportFile() throws -> URL {
        if let export { return export }
        let source = tmp.appendingPathComponent("source").path
        let file = tmp.appendingPathComponent("source.ndjson")
        let helper = try shell("'\(Self.helper)' powercut-source '\(source)'")
        guard helper.status == 0 else { throw PowerCutError("powercut-source: \(helper.err)") }
        let dump = try shell("'\(builtTool("lode-dump"))' export '\(source)' > '\(file.path)'")
        guard dump.status == 0 else { throw PowerCutError("export: \(dump.err)") }
        export = file
        return file
    }

    /// Runs the workload's process under the layer; returns its trace and exit status.
    private func run(_ workload: String, root: URL, directory: URL, cutAt: Int?) throws -> (
        PowerCutTrace, Int32
    ) {
        let process = Process()
        let traceFile = directory.appendingPathComponent("trace")
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = Self.layer.path
        environment["LODE_POWERCUT_DIR"] = root.path
        environment["LODE_POWERCUT_LOG"] = traceFile.path
        environment["LODE_POWERCUT_MARKS"] = directory.appendingPathComponent("marks").path
        environment["LODE_POWERCUT_AT"] = cutAt.map(String.init)
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let store = root.appendingPathComponent("store").path
        switch workload {
        case "load", "compact":
            process.executableURL = URL(fileURLWithPath: builtTool("lode-dump"))
            // `lode-dump` works in a child process: the layer follows that one.
            environment["LODE_POWERCUT_WHEN"] = "LODE_DUMP_WORKER"
            environment["LODE_DUMP_LOAD_BATCH"] = "500"
            if workload == "load" {
                process.arguments = ["load", store]
                process.standardInput = try FileHandle(forReadingFrom: try exportFile())
            } else {
                process.arguments = ["compact", store, root.appendingPathComponent("copy").path]
            }
        default:
            process.executableURL = URL(fileURLWithPath: Self.helper)
            process.arguments = [
                "powercut-writer", workload, "\(mode)", store, directory.appendingPathComponent("marks").path,
            ]
        }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        let errors = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        process.waitUntilExit()
        let trace = try PowerCutTrace(contentsOf: traceFile)
        let status =
            process.terminationReason == .uncaughtSignal
            ? 128 + process.terminationStatus : process.terminationStatus
        if cutAt == nil || !trace.wasCut, status != 0 {
            let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            failures.append(
                "\(mode) \(workload): the process failed (\(status)) without a cut: \(text.prefix(500))")
        }
        return (trace, status)
    }

    /// Builds the crash states of `positions` (each with nothing pending, everything, and a random
    /// subset), checks them in a checker process and judges each outcome.
    private func judge(
        _ workload: String, trace: PowerCutTrace, positions: [Int], acknowledgedAtEnd: Bool, directory: URL,
        round: Int
    ) throws {
        var cuts: [(position: Int, variants: [(CrashVariant, URL)])] = []
        for position in positions {
            let variants: [CrashVariant] = [.nothingPending, .everything, .random(seed: rng.next())]
            let states = variants.indices.map { directory.appendingPathComponent("state-\(position)-\($0)") }
            cuts.append((position, Array(zip(variants, states))))
        }
        var built: [(path: String, summary: CrashStateBuilder.Summary)] = []
        for (cut, summaries) in zip(cuts, try CrashStateBuilder(trace).build(cuts: cuts)) {
            built += zip(cut.variants.map(\.1.path), summaries).map { ($0, $1) }
        }
        states += built.count
        let results = try check(workload, states: built.map(\.path))
        for (path, summary) in built {
            let acknowledged = trace.marks(before: summary.position)
            let ended = acknowledgedAtEnd && summary.position == trace.events.count
            for open in ["check", "default"] {
                let outcome = results["\(path) \(open)"] ?? "crashed (the checker process died)"
                outcomes[(outcome.split(separator: " ").first.map(String.init) ?? outcome), default: 0] += 1
                if let problem = verdict(
                    workload, outcome: outcome, acknowledged: acknowledged, returned: ended)
                {
                    keep(
                        path, workload: workload, trace: directory.appendingPathComponent("trace"),
                        summary: summary,
                        open: open, problem: problem, round: round)
                }
            }
        }
    }

    /// Runs the checker over `states`, again after any state that killed it; returns the outcome
    /// line of each state and open.
    private func check(_ workload: String, states: [String]) throws -> [String: String] {
        var results: [String: String] = [:]
        var remaining = states[...]
        while !remaining.isEmpty {
            let command =
                "'\(Self.helper)' powercut-check \(workload) \(mode) "
                + remaining.map { "'\($0)'" }.joined(separator: " ")
            let output = try shell("SWIFT_BACKTRACE=enable=no " + command)
            var begun: String?
            for line in output.out.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 2)
                guard parts.count == 3 else { continue }
                let key = "\(parts[0]) \(parts[1])"
                if parts[2] == "begin" {
                    begun = key
                } else {
                    results[key] = String(parts[2])
                    begun = nil
                }
            }
            guard output.status != 0 || begun != nil else { break }
            // The checker died at `begun`: that open crashed; go on after its state.
            guard let begun else {
                failures.append("\(mode) \(workload): the checker failed: \(output.err.prefix(300))")
                break
            }
            results[begun] = "crashed \(output.status)"
            let state = String(begun.split(separator: " ")[0])
            guard let index = remaining.firstIndex(of: state) else { break }
            if begun.hasSuffix(" check") { results[state + " default"] = "crashed (not reached)" }
            remaining = remaining[(index + 1)...]
        }
        return results
    }

    /// Whether an outcome breaks the mode's promise, and how; nil when it keeps it.
    private func verdict(_ workload: String, outcome: String, acknowledged: [String], returned: Bool)
        -> String?
    {
        let words = outcome.split(separator: " ", maxSplits: 1).map(String.init)
        let kind = words.first ?? ""
        let detail = words.count > 1 ? words[1] : ""
        switch kind {
        case "wrong": return "a state no commit made: \(detail)"
        case "crashed": return "the open crashed: \(detail)"
        default: break
        }
        switch workload {
        case "commits", "group":
            // The last acknowledged commit of each writer ("ack N" or "wW N").
            var last: [String: Int] = [:]
            for mark in acknowledged {
                let parts = mark.split(separator: " ")
                if parts.count == 2, let n = Int(parts[1]) {
                    last[String(parts[0]), default: 0] = max(last[String(parts[0]), default: 0], n)
                }
            }
            let writers = workload == "commits" ? ["ack"] : (0..<8).map { "w\($0)" }
            if kind == "refused" || kind == "absent" {
                if !mode.syncs { return nil }
                // A store not created yet, or refused, is only right before anything was acknowledged.
                let allowed = mode.keepsEveryCommit ? 0 : 1
                return writers.allSatisfy({ (last[$0] ?? 0) <= allowed })
                    ? nil : "\(kind) after \(last): \(detail)"
            }
            let found = detail.split(separator: ",").compactMap { Int($0) }
            for (index, writer) in writers.enumerated() {
                let acked = last[writer] ?? 0
                let held = index < found.count ? found[index] : 0
                if held > acked + 1 {
                    return "\(writer) holds commit \(held), only \(acked) was acknowledged and one more begun"
                }
                let lost = mode.keepsEveryCommit ? 0 : mode == .noMetaSync ? 1 : Int.max
                if acked - held > lost {
                    return "\(writer): commit \(acked) was acknowledged, the store holds \(held)"
                }
            }
            return nil
        case "migrate":
            if kind == "refused" || kind == "absent" {
                return mode.syncs ? "\(kind): \(detail)" : nil
            }
            if mode.keepsEveryCommit && acknowledged.contains("migrated") && detail == "migrated at reopen" {
                return "the acknowledged migration was lost"
            }
            return nil
        case "key-change":
            guard kind == "opened" else { return "\(kind): \(detail)" }
            return acknowledged.contains("changed") && detail != "new"
                ? "the acknowledged change was lost" : nil
        default:  // load, compact
            if kind == "opened" { return nil }
            if kind == "absent" { return returned ? "the command returned, the store is not there" : nil }
            return "\(kind): \(detail)"
        }
    }

    /// Keeps a failing state under `.build/powercut-failures` with its trace and what rebuilds it.
    private func keep(
        _ path: String, workload: String, trace: URL, summary: CrashStateBuilder.Summary, open: String,
        problem: String, round: Int
    ) {
        let name = "\(mode)-\(workload)-\(seed)-\(round)-\(summary.position)-\(open)"
        failures.append("\(name): \(problem) [\(summary)]")
        let kept = Self.failuresDirectory.appendingPathComponent(name)
        let manager = FileManager.default
        try? manager.removeItem(at: kept)
        do {
            try manager.createDirectory(at: kept, withIntermediateDirectories: true)
            try manager.copyItem(atPath: path, toPath: kept.appendingPathComponent("state").path)
            try manager.copyItem(at: trace, to: kept.appendingPathComponent("trace"))
            let note = """
                \(mode) \(workload), harness seed \(seed), round \(round): \(problem)
                \(summary)
                Rebuild: CrashStateBuilder(try PowerCutTrace(contentsOf: trace)).build(at: \(summary.position), \
                variant: \(summary.variant), into: …); open it with `lode-test-helper powercut-check \(workload) \(mode) DIR`.

                """
            try Data(note.utf8).write(to: kept.appendingPathComponent("README"))
        } catch {
            failures.append("\(name): could not be kept: \(error)")
        }
    }

    func report() {
        print(
            "power cuts, \(mode): \(runs) runs, \(cuts) cut points, \(states) crash states, outcomes "
                + outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                + "; \(failures.count) broken promises")
    }
}
