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

@Suite struct DumpToolTests {
    let tmp = TemporaryDirectory()

    /// A store written by the library: tasks and counters.
    func makeStore() throws -> String {
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 1...6 {
                try tx.insert(
                    Task(
                        id: id, title: "task \(id)", rank: 10 - id, done: id % 3 == 0,
                        group: id <= 3 ? "home" : "work"))
            }
            try tx.insert(Counter(name: "visits", value: -3))
        }
        try store.write { tx in try tx.update(Task.self, key: 2) { $0.title = "renamed" } }
        store.close()
        return tmp.path
    }

    func dataFile() throws -> Data { try Data(contentsOf: tmp.url.appendingPathComponent("data.mdb")) }

    @Test func summarySchemaAndStatsDescribeTheStoreAndChangeNothing() throws {
        let path = try makeStore()
        let before = try dataFile()
        let summary = try runDump([path])
        #expect(summary.status == 0, "\(summary.err)")
        #expect(summary.out.contains("format     2 "))
        #expect(summary.out.contains("  Task: 6 objects, primary key id, version 1\n"))
        #expect(summary.out.contains("    index done: done\n"))
        #expect(summary.out.contains("  Counter: 1 objects, primary key name, version 1\n"))
        let schema = try runDump(["schema", path, "--json"])
        let json = try JSONSerialization.jsonObject(with: Data(schema.out.utf8)) as? [String: Any]
        let types = json?["types"] as? [[String: Any]] ?? []
        #expect(types.map { $0["name"] as? String } == ["Counter", "Task"])
        #expect(types[1]["fields"] as? [String] == ["done", "group", "id", "rank", "title"])
        #expect((types[1]["indexes"] as? [[String: Any]])?.map { $0["entries"] as? Int } == [6, 6, 6])
        let stats = try runDump(["stats", path])
        #expect(stats.status == 0)
        #expect(stats.out.contains("Task.rank "))
        #expect(
            stats.out.split(separator: "\n").contains { $0.hasPrefix("Task ") && $0.contains("       6  ") })
        #expect(try dataFile() == before, "inspecting never changes the store")
    }

    /// Issue 23, finding 7: a dump piped into `head` was reported as a damaged store (the worker
    /// died of SIGPIPE) with exit status 1.
    @Test func aClosedPipeStopsTheToolQuietly() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in 0..<3_000 {
                try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "g"))
            }
        }
        store.close()
        // More output than a pipe holds, so the worker is still writing when head has gone.
        let piped = try shell(
            "bash -c \"set -o pipefail; '\(builtTool("lode-dump"))' dump '\(tmp.path)' Task --format ndjson | head -1\""
        )
        #expect(piped.err.isEmpty, "\(piped.err)")
        #expect(piped.out.split(separator: "\n").count == 1)
        #expect(piped.out.contains("\"task 0\""), "\(piped.out)")
        // As `yes | head -1` does: the producer ends by SIGPIPE, which the pipeline reports.
        #expect(piped.status == 128 + SIGPIPE)
    }

    @Test func dumpFiltersSortsProjectsAndFormats() throws {
        let path = try makeStore()
        let ndjson = try runDump([
            "dump", path, "Task", "--where", #"group == "work" or title hasPrefix "ren""#, "--sort", "-rank",
        ])
        #expect(ndjson.status == 0, "\(ndjson.err)")
        #expect(
            ndjson.out.split(separator: "\n").map {
                $0.contains(#""id":"#) ? String($0.split(separator: ",")[0]) : ""
            } == [
                #"{"id":2"#, #"{"id":4"#, #"{"id":5"#, #"{"id":6"#,
            ])
        let projected = try runDump([
            "dump", path, "Task", "--where", "not (done == true) and rank in [9, 8, 5]", "--fields",
            "id,title",
            "--format", "json",
        ])
        #expect(
            projected.out
                == "[{\"id\":1,\"title\":\"task 1\"},\n {\"id\":2,\"title\":\"renamed\"},\n {\"id\":5,\"title\":\"task 5\"}]\n"
        )
        let table = try runDump(["dump", path, "Counter", "--format", "table"])
        #expect(table.out == "name    value\n------  -----\nvisits  -3\n(1 object)\n")
        let limited = try runDump(["dump", path, "Task", "--limit", "2", "--sort", "title"])
        #expect(limited.out.split(separator: "\n").count == 2)
        #expect(limited.out.hasPrefix(#"{"id":2,"title":"renamed""#))
    }

    @Test func getAndChangesReadObjectsAndTheLog() throws {
        let path = try makeStore()
        #expect(
            try runDump(["get", path, "Task", "2"]).out
                == #"{"id":2,"title":"renamed","rank":8,"done":false,"group":"home"}"# + "\n")
        #expect(
            try runDump(["get", path, "Counter", "visits"]).out == #"{"name":"visits","value":-3}"# + "\n")
        let changes = try runDump(["changes", path])
        let lines = changes.out.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains("insert Task 1; insert Task 2"))
        #expect(lines[1].hasSuffix("update Task 2 (title)"))
        let version = try #require(Int(lines[1].split(separator: " ")[0]))
        #expect(
            try runDump(["changes", path, "--since", "\(version)"]).out.split(separator: "\n").count == 1)
    }

    @Test func badInputGetsAOneLineErrorAndTheRightStatus() throws {
        let path = try makeStore()
        let cases: [([String], Int32, String)] = [
            ([tmp.url.appendingPathComponent("missing").path], 1, "no such file or directory"),
            (["dump", path, "Nope"], 1, #"no type named "Nope" in the store"#),
            (["get", path, "Task", "99"], 1, "Task: no object with primary key 99"),
            (["dump", path, "Task", "--where", "rank >"], 2, "--where: expected a value"),
            (["dump", path, "Task", "--where", "rank ~ 3"], 2, #"--where: unexpected "~" at character 6"#),
            (["dump", path, "Task", "--limit", "many"], 2, "--limit needs a count, got many"),
            (["dump", path, "Task", "--format", "xml"], 2, "--format takes table, json or ndjson"),
            (["dump", path], 2, "dump takes STORE TYPE, got 1 arguments"),
            (["stats", path, "--bogus"], 2, "unknown option --bogus"),
            ([], 2, "no store given"),
        ]
        for (arguments, status, message) in cases {
            let run = try runDump(arguments)
            #expect(run.status == status, "\(arguments): \(run.err)")
            #expect(run.err.hasPrefix("lode-dump: ") && run.err.contains(message), "\(arguments): \(run.err)")
            #expect(!run.err.contains("Fatal error"), "\(arguments)")
        }
        let plain = tmp.url.appendingPathComponent("plain")
        try FileManager.default.createDirectory(at: plain, withIntermediateDirectories: true)
        let empty = try runDump([plain.path])
        #expect(empty.status == 1)
        #expect(empty.err.contains("not a Lode store") || empty.err.contains("no store"), "\(empty.err)")
        // A record that no longer decodes: named by type and key.
        let environment = try LMDB.Environment.open(at: path)
        let records = try environment.database(named: "Task", create: false)
        let key = try KeyEncoder().encode(3)
        try environment.write { txn in try txn.put([UInt8]([0x82, 0x01]), forKey: key, in: records) }
        let broken = try runDump(["dump", path, "Task"])
        #expect(broken.status == 1)
        #expect(
            broken.err.hasPrefix("lode-dump: Task 3: the stored record does not decode: "), "\(broken.err)")
    }

    /// Runs a shell pipeline; returns its exit status and output.
    @Test func rawIsMdbDumpAndRestoresWithMdbLoadAndLoad() throws {
        let path = try makeStore()
        let before = try dataFile()
        let raw = try runDump(["raw", path, "--all"])
        #expect(raw.status == 0, "\(raw.err)")
        #expect(raw.out == (try shell("mdb_dump -a '\(path)'").out), "byte for byte what mdb_dump -a writes")
        #expect(try runDump(["raw", path]).out == (try shell("mdb_dump '\(path)'").out))
        #expect(
            try runDump(["raw", path, "-s", "Task.done"]).out
                == (try shell("mdb_dump -s Task.done '\(path)'").out))
        #expect(try dataFile() == before)
        let dumpFile = tmp.url.appendingPathComponent("dump.txt")
        try Data(raw.out.utf8).write(to: dumpFile)

        // Stock mdb_load restores it, and the library reads the restored store.
        let restored = tmp.url.appendingPathComponent("restored")
        try FileManager.default.createDirectory(at: restored, withIntermediateDirectories: true)
        #expect(try shell("mdb_load -f '\(dumpFile.path)' '\(restored.path)'").status == 0)
        let store = try Store(at: restored, types: [Task.self, Counter.self])
        #expect(try store.objects(Task.self).sorted(by: \.rank).fetch().map(\.id) == [6, 5, 4, 3, 2, 1])
        #expect(
            try store.objects(Task.self).filter(#Predicate { $0.done == true }).fetch().map(\.id) == [3, 6])
        store.close()

        // lode-dump load restores it too, atomically, and refuses a store that holds data.
        let loaded = tmp.url.appendingPathComponent("loaded").path
        let binary = builtTool("lode-dump")
        #expect(
            try shell("'\(binary)' load '\(loaded)' < '\(dumpFile.path)'").out.hasPrefix(
                "loaded 8 databases"), "@catalog, @changes, @meta, Counter, Task and its three indexes")
        #expect(
            withoutMapSize(try runDump(["raw", loaded, "--all"]).out) == withoutMapSize(raw.out),
            "every entry restored")
        #expect(try runDump(["get", loaded, "Task", "2"]).out.contains(#""title":"renamed""#))
        #expect(try shell("'\(binary)' load '\(loaded)' < '\(dumpFile.path)'").status == 1)
        let broken = tmp.url.appendingPathComponent("broken.txt")
        try Data(raw.out.replacingOccurrences(of: "DATA=END", with: "").utf8).write(to: broken)
        let fresh = tmp.url.appendingPathComponent("fresh").path
        #expect(try shell("'\(binary)' load '\(fresh)' < '\(broken.path)'").status == 1)
        #expect(
            !FileManager.default.fileExists(atPath: fresh + "/data.mdb"), "a malformed dump creates nothing")

        // Backups and compacting copies are whole stores.
        let backup = tmp.url.appendingPathComponent("backup").path
        let compact = tmp.url.appendingPathComponent("compact").path
        #expect(try runDump(["backup", path, backup]).status == 0)
        #expect(try runDump(["compact", path, compact]).status == 0)
        for copy in [backup, compact] {
            #expect(try runDump(["dump", copy, "Task", "--limit", "1"]).out.hasPrefix(#"{"id":1,"#))
        }
        #expect(try runDump(["backup", path, backup]).err.contains("not empty"))
    }

    /// A dump without its `mapsize=` lines (a restored store may be given another map size).
    func withoutMapSize(_ dump: String) -> [Substring] {
        dump.split(separator: "\n").filter { !$0.hasPrefix("mapsize=") }
    }

    @Test func watchFollowsCommitsOfAnotherProcessAndStopsOnInterrupt() throws {
        let path = try makeStore()
        let watcher = try ToolProcess(
            ["watch", path, "Task", "--where", "done == false", "--for", "60"], tool: "lode-dump")
        watcher.read(until: "(Ctrl-C stops)\n")
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            try tx.insert(Task(id: 7, title: "new", rank: 0, done: false, group: "home"))
            try tx.insert(Task(id: 8, title: "hidden by --where", rank: 0, done: true, group: "home"))
            try tx.upsert(Counter(name: "visits", value: 4))
        }
        try store.write { tx in try tx.update(Task.self, key: 7) { $0.rank = 1 } }
        try store.write { tx in _ = try tx.delete(Task.self, key: 1) }
        watcher.read(until: "delete Task 1\n")
        kill(watcher.process.processIdentifier, SIGINT)
        let watched = watcher.finish()
        #expect(watched.status == 0, "\(watched.err)")
        let last = try store.read { $0.version }
        // Objects as they are at the version of the batch printed (the insert may come with the update
        // or alone); the counter and the `done` task are filtered out.
        let lines = Array(watched.out.split(separator: "\n").dropFirst())
        #expect(lines.count == 4, "\(watched.out)")
        #expect(
            [
                #"\#(last - 2)  insert Task 7  {"id":7,"title":"new","rank":0,"done":false,"group":"home"}"#,
                #"\#(last - 2)  insert Task 7  {"id":7,"title":"new","rank":1,"done":false,"group":"home"}"#,
            ].contains(String(lines.first ?? "")), "\(watched.out)")
        #expect(
            lines.dropFirst() == [
                #"\#(last - 1)  update Task 7 (rank)  {"id":7,"title":"new","rank":1,"done":false,"group":"home"}"#,
                "\(last)  delete Task 1", "stopped at version \(last) (interrupted)",
            ], "\(watched.out)")
    }

    /// `watch` prints every commit of two writing processes exactly once, in order: versions come
    /// from read transactions, so a commit the environment reported before a reader could see it is
    /// printed with the next batch instead of being skipped (2,987 of 3,000 inserts were printed before).
    @Test func watchPrintsEveryCommitOfTwoWritersOnce() throws {
        let path = try makeStore()
        let watcher = try ToolProcess(["watch", path, "Task", "--for", "120"], tool: "lode-dump")
        watcher.read(until: "(Ctrl-C stops)\n")
        let writers = try [100_000, 200_000].map { first -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: builtTool("lode-test-helper"))
            process.arguments = ["write", path, "\(first)", "500"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        for writer in writers {
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
        }
        let last = try Store(at: tmp.url).read { $0.version }
        watcher.read(until: "\n\(last)  ")
        watcher.read(until: "\n")
        kill(watcher.process.processIdentifier, SIGINT)
        let watched = watcher.finish()
        #expect(watched.status == 0, "\(watched.err)")
        let inserts = watched.out.split(separator: "\n").filter { $0.contains("  insert Task ") }
        let ids = inserts.compactMap { Int($0.split(separator: " ")[3]) }
        #expect(ids.count == 1000 && Set(ids).count == 1000, "\(ids.count) inserts printed")
        let versions = inserts.compactMap { Int($0.split(separator: " ")[0]) }
        #expect(versions == versions.sorted())
    }

    /// A damaged page is reported by the page check, page by page, before LMDB reads anything; the
    /// summary and `dump` refuse the file with the first problem; the library refuses it at open when
    /// asked to check pages.
    @Test func checkReportsDamagedPagesWithoutLettingLMDBReadThem() throws {
        let path = try makeStore()
        let healthy = try runDump(["check", path])
        #expect(healthy.status == 0, "\(healthy.out)")
        // Zero every leaf page (the page type is at byte 10 of each page).
        let file = URL(fileURLWithPath: path + "/data.mdb")
        var bytes = [UInt8](try Data(contentsOf: file))
        let pageSize = 4096
        for page in 2..<(bytes.count / pageSize) where bytes[page * pageSize + 10] == 0x02 {
            for index in (page * pageSize)..<((page + 1) * pageSize) { bytes[index] = 0 }
        }
        try Data(bytes).write(to: file)
        let broken = try runDump(["check", path])
        #expect(broken.status == 1)
        let lines = broken.out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("data.mdb: page ") == true, "\(broken.out)")
        #expect(
            lines.last?.hasSuffix("the file is damaged; its records were not read") == true, "\(broken.out)")
        for arguments in [[path], ["dump", path, "Task"]] {
            let refused = try runDump(arguments)
            #expect(refused.status == 1)
            #expect(refused.err.hasPrefix("lode-dump: check pages of "), "\(refused.err)")
            #expect(!refused.err.contains("failed hard"), "\(refused.err)")
        }
        #expect {
            _ = try Store(at: tmp.url, configuration: StoreConfiguration(pageCheck: .always))
        } throws: { error in
            guard case .storage(let failure) = error as? LodeError else { return false }
            return failure.reason == .damaged && failure.message.hasPrefix("page ")
        }
    }

    @Test func checkPassesAHealthyStoreAndReportsBrokenIndexesAndRecords() throws {
        let path = try makeStore()
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self, Todo.self])
        try store.write { tx in
            for index in 0..<30 {
                try tx.insert(
                    Todo(
                        id: UUID(), title: "todo \(index) ✓", status: Status.allCases[index % 3],
                        priority: index % 4 - 2,
                        due: index % 2 == 0 ? nil : Date(timeIntervalSince1970: 1e9 + Double(index) * 0.1),
                        tags: ["t\(index)"]))
            }
        }
        store.close()
        let healthy = try runDump(["check", path])
        #expect(healthy.status == 0, "\(healthy.out)")
        #expect(healthy.out == "ok: 3 types, 37 records, 168 index entries checked\n")

        // Break it behind the library's back: an index entry removed, one pointing nowhere, a record
        // that is not CBOR, and a database the catalog does not know.
        let environment = try LMDB.Environment.open(at: path)
        let rank = try environment.database(named: "Task.rank", kind: .duplicates, create: false)
        let records = try environment.database(named: "Task", create: false)
        let encoder = KeyEncoder()
        try environment.write { txn in
            try txn.delete(try encoder.encode(8), value: try encoder.encode(2), in: rank)
            try txn.put(try encoder.encode(99), forKey: try encoder.encode(50), in: rank)
            try txn.put([UInt8]([0xa1, 0x62]), forKey: try encoder.encode(4), in: records)
            _ = try txn.database(named: "stray", create: true)
        }
        let broken = try runDump(["check", path])
        #expect(broken.status == 1)
        let lines = broken.out.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("Task 4: the record is not CBOR: ") }, "\(broken.out)")
        #expect(
            lines.contains("index Task.rank: entry 50 points at Task 99, which does not exist"),
            "\(broken.out)")
        #expect(lines.contains("index Task.rank: Task 2 is missing (value 8)"), "\(broken.out)")
        #expect(
            lines.contains("database \"stray\" is not part of the layout the catalog describes"),
            "\(broken.out)")
        #expect(lines.last?.hasPrefix("\(lines.count - 1) problems: 3 types, ") == true, "\(broken.out)")
    }

    /// One to three atoms joined by `and` / `or`.
    func randomExpression(_ random: (Int) -> Int, _ atom: () -> String) -> String {
        var expression = atom()
        for _ in 0..<random(3) { expression += (random(2) == 0 ? " and " : " or ") + atom() }
        return expression
    }

    /// Dumps `type` with `expression` as planned and through a forced scan (`not not` defeats the
    /// planner), expects the same output, and returns the plan (what follows `plan: `).
    func expectPlanAgreesWithAScan(_ type: String, _ expression: String, keyFile: String? = nil) throws
        -> String
    {
        let key = keyFile.map { ["--key-file", $0] } ?? []
        let planned = try runDump(["dump", tmp.path, type, "--where", expression, "--explain"] + key)
        let scanned = try runDump(
            ["dump", tmp.path, type, "--where", "not not (\(expression))", "--explain"] + key)
        #expect(planned.status == 0 && scanned.status == 0, "\(planned.err) \(scanned.err)")
        #expect(scanned.err.hasPrefix("plan: scan"))
        #expect(planned.out == scanned.out, "\(expression) (\(planned.err))")
        return String(planned.err.dropFirst("plan: ".count))
    }

    @Test func dumpUsesIndexesAndAgreesWithAFullScan() throws {
        var rng = SeededGenerator(seed: 0xd0)
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Task.self])
        try store.write { tx in
            for id in 0..<300 {
                try tx.insert(
                    Task(
                        id: id, title: "t\(Int.random(in: 0..<40, using: &rng))",
                        rank: Int.random(in: -5..<25, using: &rng),
                        done: Bool.random(using: &rng),
                        group: ["a", "b", "c", "d"].randomElement(using: &rng)!))
            }
        }
        store.close()
        func atom() -> String {
            let op = ["==", "<", "<=", ">", ">=", "!="].randomElement(using: &rng)!
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: return "rank \(op) \(Int.random(in: -7..<27, using: &rng))"
            case 1: return "group \(op) \"\(["a", "b", "c", "d", "bb"].randomElement(using: &rng)!)\""
            case 2: return "done == \(Bool.random(using: &rng))"
            case 3:
                return
                    "rank in [\(Int.random(in: -5..<25, using: &rng)), \(Int.random(in: -5..<25, using: &rng))]"
            default: return "title \(op) \"t\(Int.random(in: 0..<40, using: &rng))\""
            }
        }
        var indexed = 0
        for _ in 0..<40 {
            let plan = try expectPlanAgreesWithAScan(
                "Task", randomExpression({ Int.random(in: 0..<$0, using: &rng) }, atom))
            if plan.hasPrefix("index") { indexed += 1 }
        }
        #expect(indexed >= 10, "most single comparisons and conjunctions use an index")
    }

    /// Tickets: a text primary key, a compound index, a text index holding some long values and an
    /// optional one.
    struct Ticket: Persistable {
        var code: String
        var team: String
        var priority: Int
        var title: String
        var due: Int?
        static let schema = Schema<Ticket>(
            primaryKey: \.code, indexes: [.on(\.team, \.priority), .on(\.title), .on(\.due)])
    }

    /// On a plain store, and on an encrypted one, whose indexes answer only whole keys (found by their
    /// keyed hash): every field of an index fixed by `==`, or the last by `in`; long values by their
    /// stored, truncated form.
    @Test(arguments: [false, true])
    func compoundIndexPrimaryKeyAndPrefixPlansAgreeWithAFullScan(encrypted: Bool) throws {
        var rng = SeededGenerator(seed: 0x7e)
        let long = String(repeating: "L", count: 560)
        let keyBytes = (0..<32).map { UInt8($0 * 3 + 7) }
        let keyFile = tmp.path + "-key"
        try Data(keyBytes).write(to: URL(fileURLWithPath: keyFile))
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let store = try Store(
            at: tmp.url,
            configuration: StoreConfiguration(
                durability: .noSync, encryption: encrypted ? .key(try StoreKey(bytes: keyBytes)) : nil),
            types: [Ticket.self])
        try store.write { tx in
            for n in 0..<400 {
                let title =
                    n % 9 == 0
                    ? long + "\(n % 4)" : "t\(Int.random(in: 0..<60, using: &rng))\u{0}x\(n % 3)"
                try tx.insert(
                    Ticket(
                        code: ["A", "B", "C"].randomElement(using: &rng)! + "\(n)",
                        team: ["red", "blue", "green"].randomElement(using: &rng)!,
                        priority: Int.random(in: 0..<6, using: &rng), title: title,
                        due: Bool.random(using: &rng) ? nil : Int.random(in: 0..<10, using: &rng)))
            }
        }
        store.close()
        func atom() -> String {
            let op = ["==", "<", "<=", ">", ">=", "!="].randomElement(using: &rng)!
            let team = "\"\(["red", "blue", "green", "gr"].randomElement(using: &rng)!)\""
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: return "team == \(team)"
            case 1: return "team == \(team) and priority \(op) \(Int.random(in: -1..<7, using: &rng))"
            case 2: return "priority \(op) \(Int.random(in: -1..<7, using: &rng))"
            case 3: return "code hasPrefix \"\(["A", "B1", "C2", "D"].randomElement(using: &rng)!)\""
            case 4: return "code \(op) \"\(["A", "B1", "B50", "C2", "D"].randomElement(using: &rng)!)\""
            case 5: return "title hasPrefix \"t\(Int.random(in: 0..<7, using: &rng))\""
            case 6: return "title \(op) \"\(Bool.random(using: &rng) ? long + "1" : "t1")\""
            case 7: return "title hasPrefix \"\(long.prefix(Int.random(in: 400..<560, using: &rng)))\""
            case 8:
                return
                    "due \(op) \(Bool.random(using: &rng) ? "null" : "\(Int.random(in: 0..<10, using: &rng))")"
            default: return "team in [\(team), \"blue\"] and priority in [1, 3]"
            }
        }
        var planned = [String: Int]()
        for _ in 0..<60 {
            let plan = try expectPlanAgreesWithAScan(
                "Ticket", randomExpression({ Int.random(in: 0..<$0, using: &rng) }, atom),
                keyFile: encrypted ? keyFile : nil)
            planned[String(plan.prefix { $0 != ":" }), default: 0] += 1
        }
        // Whole keys, then, on the encrypted store: each index planned from equalities alone.
        let wholeKeys = [
            "title == \"\(long)1\"", "due == 3", "team == \"red\" and priority == 2",
            "team == \"blue\" and priority in [1, 3]",
        ]
        for expression in wholeKeys {
            let plan = try expectPlanAgreesWithAScan(
                "Ticket", expression, keyFile: encrypted ? keyFile : nil)
            planned[String(plan.prefix { $0 != ":" }), default: 0] += 1
        }
        #expect(planned["primary key of Ticket", default: 0] >= 3, "\(planned)")
        #expect(planned["index Ticket.team+priority", default: 0] >= (encrypted ? 2 : 5), "\(planned)")
        #expect(planned["index Ticket.title", default: 0] >= 1, "\(planned)")
        #expect(planned["index Ticket.due", default: 0] >= 1, "\(planned)")
        let explained = try runDump(
            [
                "dump", tmp.path, "Ticket", "--where", "priority > 2 and team == \"red\" and priority <= 4",
                "--explain",
            ] + (encrypted ? ["--key-file", keyFile] : []))
        #expect(
            explained.err
                == (encrypted
                    ? "plan: scan every Ticket record (no index answers the expression)\n"
                    : "plan: index Ticket.team+priority: team == \"red\" and priority > 2 and priority <= 4\n"),
            "\(explained.err)")
    }

    /// Hostile `--where` expressions are refused or evaluated without recursing through the stack
    /// (each of the first two crashed the tool with exit 139 before).
    @Test func deeplyNestedExpressionsAreRefusedAndLongChainsEvaluated() throws {
        let path = try makeStore()
        let parentheses =
            String(repeating: "(", count: 5000) + "rank == 1" + String(repeating: ")", count: 5000)
        let nots = String(repeating: "not ", count: 10_000) + "rank == 1"
        for expression in [parentheses, nots] {
            let result = try runDump(["dump", path, "Task", "--where", expression])
            #expect(result.status == 2)
            #expect(
                result.err.hasPrefix("lode-dump: --where: parentheses and `not` nest deeper than 100 levels"))
        }
        // 8,000 comparisons in one argument (kept under Linux's 128 KiB limit for one argument).
        let chain = Array(repeating: "rank != -1", count: 8000).joined(separator: " and ")
        let result = try runDump([
            "dump", path, "Task", "--where", chain + " and rank < 5", "--format", "ndjson",
        ])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.split(separator: "\n").map { $0.hasPrefix(#"{"id":6,"#) } == [true])  // rank 4
        let nested = String(repeating: "(", count: 100) + "rank < 5" + String(repeating: ")", count: 100)
        #expect(try runDump(["dump", path, "Task", "--where", nested, "--format", "ndjson"]).status == 0)
    }

    /// Records the library would not restore are found by `check` and stop `export` (which used to exit
    /// 0 on them, making a backup `load` refuses): a repeated field, a field name that is not text, a
    /// record stored under another key than its primary key, a record that is not a map.
    @Test func recordsThatCannotBeRestoredAreReportedAndStopAnExport() throws {
        let path = try makeStore()
        let encoder = CBOREncoder()
        // {"id": 2, "id": 2, …}, {1: "x", "id": 3}, the record of 5 stored under 6's key, a bare number.
        let repeated: [UInt8] = [0xa2, 0x62, 0x69, 0x64, 0x02, 0x62, 0x69, 0x64, 0x02]
        let numericName: [UInt8] = [0xa2, 0x01, 0x61, 0x78, 0x62, 0x69, 0x64, 0x03]
        do {
            let environment = try LMDB.Environment.open(at: path)
            let records = try environment.database(named: "Task", create: false)
            try environment.write { txn in
                let key = KeyEncoder()
                try txn.put(repeated, forKey: try key.encode(2), in: records)
                try txn.put(numericName, forKey: try key.encode(3), in: records)
                let five = try #require(try txn.get(try key.encode(5), in: records))
                try txn.put(five, forKey: try key.encode(6), in: records)
                try txn.put(try encoder.encode(7), forKey: try key.encode(1), in: records)
            }
        }
        let check = try runDump(["check", path])
        #expect(check.status == 1)
        let lines = check.out.split(separator: "\n").map(String.init)
        for expected in [
            "Task 1: the record is not a CBOR map",
            "Task 2: field \"id\": the field appears twice in the record",
            "Task 3: field \"1\": a field name is not text",
            "Task 6: its id is 5, not the key it is stored under",
        ] {
            #expect(lines.contains(expected), "missing \"\(expected)\" in \(check.out)")
        }
        // The records exist: the index entries that point at them say nothing false about them.
        #expect(!check.out.contains("which does not exist"), "\(check.out)")
        let export = try runDump(["export", path])
        #expect(export.status == 1)
        #expect(export.err.contains("Task 1"), "\(export.err)")
        #expect(!export.out.contains(#"{"end""#))
    }

    /// Issue 23, finding 9: records the store's history cannot explain — a flipped bit that renames a
    /// field, a value of a kind the field never held, an indefinite-length map — passed `check`.
    @Test func checkReportsRecordsTheTypesHistoryCannotExplain() throws {
        let path = try makeStore()
        #expect(try runDump(["check", path]).status == 0)
        do {
            let environment = try LMDB.Environment.open(at: path)
            let records = try environment.database(named: "Task", create: false)
            try environment.write { txn in
                let key = KeyEncoder()
                // Task 1: one bit of the name "title" flipped ("tiTle").
                var one = try #require(try txn.get(try key.encode(1), in: records))
                let name: [UInt8] = [0x65] + Array("title".utf8)
                let at = try #require(
                    (0...(one.count - name.count)).first { Array(one[$0..<($0 + name.count)]) == name })
                one[at + 3] ^= 0x20
                try txn.put(one, forKey: try key.encode(1), in: records)
                // Task 2: an integer where text always was.
                let two = try CBORValue(decoding: try #require(try txn.get(try key.encode(2), in: records)))
                guard case .map(var entries) = two else { throw LodeError.typeNotFound("a map") }
                for position in entries.indices where entries[position].key == .text("title") {
                    entries[position].value = .unsigned(7)
                }
                try txn.put(CBORValue.map(entries).encoded, forKey: try key.encode(2), in: records)
                // Task 4: the same fields as an indefinite-length map.
                let four = try CBORValue(decoding: try #require(try txn.get(try key.encode(4), in: records)))
                guard case .map(let fields) = four else { throw LodeError.typeNotFound("a map") }
                let inside: [UInt8] = fields.flatMap { $0.key.encoded + $0.value.encoded }
                let indefinite: [UInt8] = [0xbf] + inside + [0xff]
                try txn.put(indefinite, forKey: try key.encode(4), in: records)
            }
        }
        let check = try runDump(["check", path])
        #expect(check.status == 1)
        let lines = check.out.split(separator: "\n").map(String.init)
        for expected in [
            "Task 1: field \"tiTle\" is not one the type's records have ever had (they had: done, group, id, rank, title)",
            "Task 2: field \"title\" holds integer, a kind of value it never held (it held text)",
            "Task 4: an indefinite-length map at byte 0, a form Lode neither writes nor reads",
        ] {
            #expect(lines.contains(expected), "missing \"\(expected)\" in \(check.out)")
        }
        #expect(check.out.contains("3 problems"), "\(check.out)")
    }

    /// A reader that holds an old version keeps the file from reusing pages: the summary names the
    /// oldest version held, how far behind it is and which process holds it.
    @Test func theSummaryNamesTheOldestReaderAndItsProcess() throws {
        let path = try makeStore()
        let holder = try ToolProcess(["hold-read", path], tool: "lmdb-test-helper")
        holder.read(until: "ready")
        defer {
            kill(holder.process.processIdentifier, SIGKILL)
            _ = holder.finish()
        }
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        let held = try store.read { $0.version }
        for value in 0..<3 { try store.write { try $0.upsert(Counter(name: "visits", value: value)) } }
        store.close()
        let summary = try runDump([path])
        #expect(summary.status == 0, "\(summary.err)")
        #expect(
            summary.out.contains(
                "oldest     version \(held) (3 behind), held by pid \(holder.process.processIdentifier)\n"),
            "\(summary.out)")
    }

    @Test func aStoreLeftByCrashedProcessesIsStillInspected() throws {
        let path = try makeStore()
        // One process killed inside a write transaction, one killed holding a read.
        for mode in ["hold-write", "hold-read"] {
            let helper = try ToolProcess([mode, path], tool: "lmdb-test-helper")
            helper.read(until: "ready")
            kill(helper.process.processIdentifier, SIGKILL)
            #expect(helper.finish().out.contains("ready"), "\(mode)")
        }
        let summary = try runDump([path])
        #expect(summary.status == 0, "\(summary.err)")
        #expect(summary.out.contains("  Task: 6 objects"))
        let check = try runDump(["check", path])
        // The helper's committed `data` database is foreign to the layout; its killed write left nothing.
        #expect(
            check.out == "database \"data\" is not part of the layout the catalog describes\n"
                + "1 problem: 2 types, 7 records, 18 index entries checked\n")
        #expect(try runDump(["raw", path, "-s", "data"]).out.hasSuffix("HEADER=END\nDATA=END\n"))
        // The writer lock of the killed process is released: the library writes again.
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in try tx.insert(Counter(name: "after", value: 1)) }
        #expect(try runDump(["get", path, "Counter", "after"]).out == #"{"name":"after","value":1}"# + "\n")
    }
}

/// `Task`'s records read through `Codable` instead of the generated codec.
private struct CodableTask: Persistable, Codable, Equatable {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    var group: String
    static let schema = Schema<CodableTask>(
        name: "Task", primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
}

extension DumpToolTests {
    /// Issue 64, finding 2: a record holding a string of indefinite length (valid CBOR, which no
    /// version of Lode writes) passed `check`, `dump`, `get` and `export` while every read of the
    /// library threw. The tools and both codecs now read it alike: refused, naming the field and
    /// the byte — a string, an array nested in a field the type does not know, the record's own map.
    @Test func recordsOfIndefiniteLengthAreRefusedAlikeByTheToolsAndTheLibrary() async throws {
        // The tool runs are waited for on an executor of their own, not the cooperative pool.
        try await onDedicatedExecutor { try indefiniteLengthRecords() }
    }

    func indefiniteLengthRecords() throws {
        let path = try makeStore()
        var offsets: [Int: Int] = [:]
        do {
            let environment = try LMDB.Environment.open(at: path)
            let records = try environment.database(named: "Task", create: false)
            try environment.write { txn in
                let key = KeyEncoder()
                /// The record of `id` rewritten entry by entry, `replace` giving a field's bytes.
                func rewrite(_ id: Int, adding extra: [UInt8] = [], _ replace: (String) -> [UInt8]?) throws {
                    let value = try CBORValue(
                        decoding: try #require(try txn.get(try key.encode(id), in: records)))
                    guard case .map(let entries) = value else { throw LodeError.typeNotFound("a map") }
                    var bytes: [UInt8] = [0xa0 | UInt8(entries.count + (extra.isEmpty ? 0 : 1))]
                    for entry in entries {
                        guard case .text(let name) = entry.key else { continue }
                        bytes += entry.key.encoded
                        if let replaced = replace(name) {
                            offsets[id] = bytes.count
                            bytes += replaced
                        } else {
                            bytes += entry.value.encoded
                        }
                    }
                    if !extra.isEmpty {
                        bytes += CBORValue.text("notes").encoded
                        offsets[id] = bytes.count
                        bytes += extra
                    }
                    try txn.put(bytes, forKey: try key.encode(id), in: records)
                }
                // Task 3's title "task 3" as two chunks of an indefinite-length text string.
                try rewrite(3) {
                    $0 == "title"
                        ? [0x7f, 0x63] + Array("tas".utf8) + [0x63] + Array("k 3".utf8) + [0xff] : nil
                }
                // Task 5 with a field no version of the type has, holding [_ 1] (an indefinite array).
                try rewrite(5, adding: [0x9f, 0x01, 0xff]) { _ in nil }
            }
        }
        let check = try runDump(["check", path])
        #expect(check.status == 1, "\(check.out)")
        let lines = check.out.split(separator: "\n").map(String.init)
        let three = try #require(offsets[3])
        let five = try #require(offsets[5])
        for expected in [
            "Task 3: field \"title\": an indefinite-length text string at byte \(three), a form Lode neither writes nor reads",
            "Task 5: field \"notes\": an indefinite-length array at byte \(five), a form Lode neither writes nor reads",
        ] {
            #expect(lines.contains(expected), "missing \"\(expected)\" in \(check.out)")
        }
        // The records exist: their index entries are not reported; each record is reported once.
        #expect(lines.count == 3, "\(check.out)")
        for id in [3, 5] {
            let get = try runDump(["get", path, "Task", "\(id)"])
            #expect(get.status != 0 && get.err.contains("indefinite-length"), "\(get.err)")
        }
        let dump = try runDump(["dump", path, "Task", "--format", "ndjson"])
        #expect(dump.status != 0 && dump.err.contains("field \"title\""), "\(dump.err)")
        let export = try runDump(["export", path])
        #expect(export.status == 1 && export.err.contains("Task 3"), "\(export.err)")

        // The library, through the generated codec and through Codable: the same records refused
        // with the same reason, the others read.
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        defer { store.close() }
        func expectRefused(_ body: () throws -> Void, field: String, offset: Int) {
            guard case .recordDoesNotDecode(_, _, let found, let reason)? = lodeError(body) else { return }
            #expect(found.hasSuffix(field) || found.isEmpty, "\(found)")
            #expect(reason.contains("indefinite-length") && reason.contains("at byte \(offset)"), "\(reason)")
        }
        expectRefused({ _ = try store.objects(Task.self).fetch() }, field: "title", offset: three)
        expectRefused(
            { _ = try store.read { try $0.object(Task.self, key: 3) } }, field: "title", offset: three)
        expectRefused(
            { _ = try store.read { try $0.object(Task.self, key: 5) } }, field: "notes", offset: five)
        #expect(try store.read { try $0.object(Task.self, key: 4) }?.title == "task 4")
        store.close()
        let codable = try Store(at: tmp.url, types: [CodableTask.self, Counter.self])
        defer { codable.close() }
        expectRefused(
            { _ = try codable.read { try $0.object(CodableTask.self, key: 3) } }, field: "title",
            offset: three)
        expectRefused(
            { _ = try codable.read { try $0.object(CodableTask.self, key: 5) } }, field: "notes", offset: five
        )
        #expect(try codable.read { try $0.object(CodableTask.self, key: 4) }?.title == "task 4")
    }
}

extension DumpToolTests {
    /// A store that keeps history: `changes` shows each commit's values (and JSON with `--json`),
    /// `get --as-of` an object as an earlier version left it.
    @Test func changesShowTheHistoryWithValuesAndGetReadsAsOfAVersion() throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(history: .forever),
            types: [Task.self, Counter.self])
        try store.write { tx in
            tx.author = "ann"
            try tx.insert(Task(id: 1, title: "first", rank: 1, done: false, group: "home"))
        }
        let early = try store.read { $0.version }
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.title = "second" } }
        try store.write { tx in try tx.delete(Task.self, key: 1) }
        let path = tmp.url.path
        let run = try runDump(["changes", path])
        let text = run.out.split(separator: "\n").map(String.init)
        #expect(text.count == 6, "\(run)")
        #expect(text[0].hasSuffix("by ann"))
        #expect(text[1] == #"  insert Task 1 {"done":false,"group":"home","id":1,"rank":1,"title":"first"}"#)
        #expect(text[3] == #"  update Task 1: title: "first" → "second""#)
        #expect(text[5] == #"  delete Task 1 {"done":false,"group":"home","id":1,"rank":1,"title":"second"}"#)
        let json = try runDump(["changes", path, "--json", "--since", "\(early + 1)"]).out.split(
            separator: "\n")
        #expect(json.count == 2)
        let update = try #require(
            try JSONSerialization.jsonObject(with: Data(json[0].utf8)) as? [String: Any])
        #expect(update["version"] as? Int == early + 1)
        let change = try #require((update["changes"] as? [[String: Any]])?.first)
        #expect(change["op"] as? String == "update")
        #expect((change["before"] as? [String: Any])?["title"] as? String == "first")
        #expect((change["after"] as? [String: Any])?["title"] as? String == "second")
        #expect(
            try runDump(["get", path, "Task", "1", "--as-of", "\(early)"]).out
                == #"{"id":1,"title":"first","rank":1,"done":false,"group":"home"}"# + "\n")
        let gone = try runDump(["get", path, "Task", "1"])
        #expect(gone.status == 1 && gone.err.contains("no object with primary key 1"))
        let before = try runDump(["get", path, "Task", "1", "--as-of", "\(early - 1)"])
        #expect(
            before.status == 1 && before.err.contains("no object with primary key 1 at version \(early - 1)"))
        let malformed = try runDump(["get", path, "Task", "1", "--as-of", "yesterday"])
        #expect(malformed.status == 2 && malformed.err.contains("--as-of needs a version, got yesterday"))
    }
}
