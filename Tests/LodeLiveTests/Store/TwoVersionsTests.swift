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

/// Two versions of one app on one store, as separate processes (`lode-versions-helper`): version 1
/// writes, reads and observes throughout while version 2 opens the store with one schema change and
/// writes. Neither may crash; version 1 either goes on working or gets a typed error naming the
/// change; no commit either acknowledged is lost. `LODE_VERSIONS_ROUNDS` (`make soak`) repeats each
/// change with other random timings and a longer run.
@Suite struct TwoVersionsTests {
    /// Each schema change the migrations support, and what version 1 is told once it happened
    /// (nil: it keeps working).
    static let changes: [(change: String, refusal: String?)] = [
        (
            "index-added",
            "typeChangedByAnotherProcess: Item was changed by another process since this one registered it: index \"note\" was added"
        ),
        (
            "index-dropped",
            "typeChangedByAnotherProcess: Item was changed by another process since this one registered it: index \"tag\" was dropped"
        ),
        (
            "link-added",
            "typeChangedByAnotherProcess: Item was changed by another process since this one registered it: link \"previous\" was added, which this process does not maintain"
        ),
        ("field-added", nil),
        (
            "field-renamed",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (rename note to text)"
        ),
        (
            "field-removed",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (remove note)"
        ),
        (
            "field-retyped",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (note as words)"
        ),
        (
            "type-renamed",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (Item is Thing)"
        ),
        (
            "type-deleted",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (no more items)"
        ),
        (
            "primary-key-changed",
            "storeNewerThanCode: the store at PATH has run migrations this code does not know (key items by note)"
        ),
    ]

    static var rounds: Int {
        ProcessInfo.processInfo.environment["LODE_VERSIONS_ROUNDS"].flatMap(Int.init) ?? 1
    }

    @Test(arguments: changes.map(\.change))
    func bothVersionsRunWithoutCrashingOrLosingCommits(change: String) throws {
        let refusal = Self.changes.first { $0.change == change }!.refusal
        for round in 0..<Self.rounds {
            try run(change: change, refusal: refusal, round: round)
        }
    }

    func run(change: String, refusal: String?, round: Int) throws {
        let tmp = TemporaryDirectory()
        // The store in a directory of its own; the stop file beside it, inside `tmp`.
        let storeURL = tmp.url.appendingPathComponent("store")
        let path = storeURL.path
        let helper = builtTool("lode-versions-helper")
        // Version 1 made the store and wrote to it before version 2 ever ran.
        let seeded = try shell("'\(helper)' old '\(path)' \(change) -0.2")
        #expect(seeded.status == 0, "\(seeded.err)")
        var acknowledged = Self.acks(seeded.out)
        #expect(!acknowledged.isEmpty, "\(seeded.out)")
        // Version 1 again, running while version 2 opens the store, changes it and writes.
        // Version 1 goes on this long after version 2 finished.
        let seconds = round == 0 ? 1.0 : 2.0 + Double(round % 3)
        let old = Process()
        old.executableURL = URL(fileURLWithPath: helper)
        old.arguments = ["old", path, change, "\(seconds)", "\(round * 7919 + 1)"]
        let output = Pipe()
        old.standardOutput = output
        let errors = Pipe()
        old.standardError = errors
        try old.run()
        let collected = Locked<Data>(Data())
        let reading = Thread {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            collected.withLock { $0 = data }
        }
        reading.start()
        let errorText = Locked<Data>(Data())
        Thread { errorText.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() } }.start()
        Thread.sleep(forTimeInterval: 0.5 + Double(round % 4) * 0.2)
        let new = try shell("'\(helper)' new '\(path)' \(change)")
        #expect(new.status == 0, "version 2 failed: \(new.err)")
        #expect(new.out.contains("new done items="), "\(new.out)")
        #expect(FileManager.default.createFile(atPath: path + ".stop", contents: nil))
        old.waitUntilExit()
        let deadline = Date().addingTimeInterval(30)
        while collected.withLock({ $0.isEmpty }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let text = String(decoding: collected.withLock { $0 }, as: UTF8.self)
        // Version 1 never crashed: it ran to its end and said so.
        #expect(old.terminationReason == .exit && old.terminationStatus == 0, "version 1 died: \(text)")
        #expect(
            text.contains("old done acks="),
            "\(text)\n\(String(decoding: errorText.withLock { $0 }, as: UTF8.self))")
        acknowledged.formUnion(Self.acks(text))
        let problems = text.split(separator: "\n").filter {
            $0.hasPrefix("refused") || $0.hasPrefix("read-error") || $0.hasPrefix("observe-")
                || $0.hasPrefix("open-error")
        }
        // Every failure is a typed LodeError.
        #expect(!problems.contains { $0.contains("not-a-lode-error") }, "\(problems)")
        if let refusal {
            // Version 1 was refused with an error naming the change.
            let expected = refusal.replacingOccurrences(of: "PATH", with: URL(fileURLWithPath: path).path)
            #expect(
                problems.contains { $0.hasPrefix("refused") && $0.contains(expected) },
                "\(change): \(problems)")
        } else {
            #expect(problems.isEmpty, "\(change): version 1 should keep working: \(problems)")
        }
        // No acknowledged commit is lost: version 2 reads every item version 1 was told it wrote
        // (a deleted type's items are gone with it, and none came back).
        let listed = try shell("'\(helper)' ids '\(path)' \(change)")
        #expect(listed.status == 0, "\(listed.err)")
        let ids = Set(listed.out.split(separator: "\n").compactMap { Int($0) })
        if change == "type-deleted" {
            #expect(ids == Set(20_000_000..<20_000_010))
            let store = try Store(at: storeURL, configuration: StoreConfiguration(readOnly: true))
            #expect(try store.read { try $0.storedTypes().map(\.name) } == ["Other"])
            store.close()
        } else {
            #expect(acknowledged.isSubset(of: ids), "lost: \(acknowledged.subtracting(ids).sorted())")
            #expect(Set(20_000_000..<20_000_010).isSubset(of: ids))
        }
        // The store is whole.
        let check = try shell("'\(builtTool("lode-dump"))' check '\(path)'")
        #expect(check.status == 0, "\(check.out)\(check.err)")
    }

    static func acks(_ output: String) -> Set<Int> {
        Set(output.split(separator: "\n").compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil })
    }
}

/// Two versions of an app rewriting each other's objects, as processes taking turns
/// (`lode-versions-helper turns`): version 1 stores `payload`, version 2 dropped it and added an
/// indexed `priority` with a default. Every insert, update, field update, upsert and delete either
/// makes is replayed here; at the end each version reads exactly what the replay says — the field it
/// does not know kept through the other's rewrites — and the store is whole. `LODE_VERSIONS_ROUNDS`
/// (`make soak`) runs more rounds of other seeds.
@Suite struct TwoVersionsTurnsTests {
    /// What one object holds after the turns: nil for a field no version wrote.
    struct Expected: Equatable {
        var batch: Int
        var payload: Int?
        var priority: Int?
    }

    /// Applies a turn's printed writes to `state`.
    static func replay(_ output: String, into state: inout [Int: Expected]) {
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 2, let id = Int(words[1]) else { continue }
            if words[0] == "del" {
                state[id] = nil
                continue
            }
            var object = state[id] ?? Expected(batch: 0, payload: nil, priority: nil)
            for word in words.dropFirst(2) {
                let parts = word.split(separator: "=")
                guard parts.count == 2 else { continue }
                switch parts[0] {
                case "batch": object.batch = Int(parts[1])!
                case "payload": object.payload = Int(parts[1].dropFirst())!
                case "priority": object.priority = Int(parts[1])!
                default: break
                }
            }
            state[id] = object
        }
    }

    /// Waits for processes by blocking: on an executor of its own, not the pool.
    @Test(arguments: ["codable", "generated"])
    func twoVersionsRewriteEachOthersObjectsInTurns(codec: String) async throws {
        try await onDedicatedExecutor { try rewriteInTurns(codec: codec) }
    }

    func rewriteInTurns(codec: String) throws {
        let (old, new) = codec == "codable" ? ("v1", "v2") : ("g1", "g2")
        let helper = builtTool("lode-versions-helper")
        for round in 0..<TwoVersionsTests.rounds {
            let tmp = TemporaryDirectory()
            let path = tmp.url.appendingPathComponent("store").path
            var state: [Int: Expected] = [:]
            for turn in 0..<6 {
                let version = turn % 2 == 0 ? old : new
                let seed = UInt64(round * 100 + turn + (codec == "codable" ? 0 : 50))
                let result = try shell("'\(helper)' turns '\(path)' \(version) \(seed) 30")
                #expect(result.status == 0, "turn \(turn) (\(version)) failed: \(result.err)")
                #expect(result.out.hasSuffix("turn done\n"), "\(result.out)")
                Self.replay(result.out, into: &state)
            }
            let asOld = try shell("'\(helper)' state '\(path)' \(old)")
            let asNew = try shell("'\(helper)' state '\(path)' \(new)")
            #expect(asOld.status == 0 && asNew.status == 0, "\(asOld.err)\(asNew.err)")
            let expectedOld = state.keys.sorted().map { id in
                "\(id) batch=\(state[id]!.batch) payload=p\(state[id]!.payload ?? -1)"
            }
            let expectedNew = state.keys.sorted().map { id in
                "\(id) batch=\(state[id]!.batch) priority=\(state[id]!.priority ?? 0)"
            }
            #expect(asOld.out.split(separator: "\n").map(String.init) == expectedOld, "round \(round)")
            #expect(asNew.out.split(separator: "\n").map(String.init) == expectedNew, "round \(round)")
            // Both versions wrote objects the other made.
            #expect(state.values.contains { $0.payload != nil && $0.priority != nil })
        }
    }
}
