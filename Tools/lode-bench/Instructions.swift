import Foundation
import Lode
import LodeInspection

/// The code whose instructions a child counts: callgrind starts collecting when it enters this
/// function and stops when it leaves (`--toggle-collect`), so the fixture's setup is not counted.
@inline(never)
func measuredRegion(_ body: () throws -> Void) rethrows {
    try body()
}

/// A workload measured in instructions: its systems, built at a size, and how many objects one run of
/// a system's body handles.
struct InstructionWorkload: Sendable {
    var name: String
    var title: String
    var make: @Sendable (Settings) throws -> (systems: [System], objects: Int)
}

/// One system's count in an instruction workload.
struct InstructionCount {
    var system: String
    var instructions: Int
    var objects: Int
    var perObject: Double { objects > 0 ? Double(instructions) / Double(objects) : 0 }
}

/// `lode-bench --instructions`: each read and write workload at a small scale, each system in a
/// child process of its own under `valgrind --tool=callgrind`, counting the instructions of one run
/// of the system's body after an uncounted warm-up run. The same binary and inputs give the same
/// counts whatever else the machine does, so a change of a few percent is real.
enum Instructions {
    /// The default scale: 20,000 objects where the timed workloads use a million.
    static let defaultScale = 0.02

    static let all: [InstructionWorkload] = [
        InstructionWorkload(name: "decode", title: "decoding one record from memory (Codable, CBOR)") {
            settings in
            let rows = rows(settings.size(1_000_000))
            let records = try rows.map { try CBOREncoder().encode($0) }
            // The records one after another in one buffer, as a page holds them, each read where it
            // lies (as the store's walks read them: the field names passed, not read per record).
            let page = records.flatMap { $0 }
            var ends: [Int] = []
            for record in records { ends.append((ends.last ?? 0) + record.count) }
            let names = Row.recordFields
            let decoder = CBORDecoder()
            let sink = Sink()
            return (
                [
                    System(name: "Lode") {
                        try page.withUnsafeBytes { page in
                            var start = 0
                            for end in ends {
                                let record = UnsafeRawBufferPointer(rebasing: page[start..<end])
                                sink.value &+= try Row.decodeRecord(record, names: names).score
                                start = end
                            }
                        }
                    },
                    System(name: "Lode (Codable)") {
                        try page.withUnsafeBytes { page in
                            var start = 0
                            for end in ends {
                                let record = UnsafeRawBufferPointer(rebasing: page[start..<end])
                                sink.value &+= try decoder.decode(CodableRow.self, from: record).score
                                start = end
                            }
                        }
                    },
                    System(name: "Codable floor") {
                        // The same `init(from:)` over a decoder that reads nothing.
                        let floor = FloorDecoder()
                        for _ in records { sink.value &+= try decodeFromFloor(Row.self, floor).score }
                    },
                ], rows.count
            )
        },
        InstructionWorkload(
            name: "encode", title: "encoding one record with its shape, as writes do (Codable, CBOR)"
        ) { settings in
            let rows = rows(settings.size(1_000_000))
            let codableRows = rows.map(CodableRow.init)
            let encoder = CBOREncoder()
            let sink = Sink()
            return (
                [
                    System(name: "Lode") {
                        let buffer = RecordBuffer()
                        for row in rows {
                            sink.value &+= try row.withEncodedRecord(in: buffer) { Int($1 & 1) }
                        }
                    },
                    System(name: "Lode (Codable)") {
                        for row in codableRows {
                            sink.value &+= Int(try encoder.encodeRecord(row).shape & 1)
                        }
                    },
                ],
                rows.count
            )
        },
        InstructionWorkload(name: "point-reads", title: "random point reads by primary key (decoded)") {
            settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            var rng = Generator(2)
            let ids = (0..<Swift.max(fixture.rows.count / 10, 10)).map { _ in
                Int.random(in: 0..<fixture.rows.count, using: &rng)
            }
            return (try CoreSystems.pointReads(fixture, ids: ids, sink: Sink()), ids.count)
        },
        InstructionWorkload(name: "scan-decode", title: "full scan, every object decoded") { settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            return (CoreSystems.scan(fixture, sink: Sink()), fixture.rows.count)
        },
        InstructionWorkload(name: "range-query", title: "indexed range query returning 1%") { settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            let (lower, upper) = CoreSystems.rangeBounds
            let found = fixture.rows.count { $0.score >= lower && $0.score < upper }
            return (CoreSystems.range(fixture, sink: Sink()), found)
        },
        InstructionWorkload(
            name: "filtered-scan", title: "full scan keeping 1% by a property without an index"
        ) { settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            return (CoreSystems.filteredScan(fixture, sink: Sink()), fixture.rows.count)
        },
        InstructionWorkload(name: "sorted-top", title: "top 100 by a property without an index") { settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            return (CoreSystems.sortedTop(fixture, sink: Sink()), fixture.rows.count)
        },
        InstructionWorkload(
            name: "projection", title: "one field of every object (values(of:) / SELECT name)"
        ) {
            settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            return (CoreSystems.projection(fixture, sink: Sink()), fixture.rows.count)
        },
        InstructionWorkload(name: "links-inverse", title: "links: one project's tasks, decoded (per task)") {
            settings in
            let fixture = try LinkFixture(tasks: settings.size(1_000_000), projects: settings.size(1_000))
            let projects = Array(fixture.normal.prefix(10))
            let tasks = try fixture.store.read { tx in
                try projects.reduce(0) { total, project in
                    total
                        + (try tx.objects(
                            BenchTask.self, linkingTo: try Link<BenchProject>(key: project), via: \.project
                        ).count)
                }
            }
            return (LinkSystems.inverse(fixture, projects: projects), tasks)
        },
        InstructionWorkload(
            name: "links-eager", title: "links: eager loading of tasks with their projects (per task)"
        ) { settings in
            let fixture = try LinkFixture(tasks: settings.size(1_000_000), projects: settings.size(1_000))
            return (LinkSystems.eager(fixture), LinkSystems.eagerWindow(fixture).count)
        },
        InstructionWorkload(name: "encrypted-scan", title: "encrypted store: full scan, every object decoded")
        {
            settings in
            let fixture = try EncryptionFixture(count: settings.size(1_000_000))
            return (fixture.scans(sink: Sink()), fixture.rows.count)
        },
        InstructionWorkload(name: "encrypted-point-reads", title: "encrypted store: random point reads") {
            settings in
            let fixture = try EncryptionFixture(count: settings.size(1_000_000))
            var rng = Generator(2)
            let ids = (0..<Swift.max(fixture.rows.count / 10, 10)).map { _ in
                Int.random(in: 0..<fixture.rows.count, using: &rng)
            }
            return (fixture.pointReads(ids: ids, sink: Sink()), ids.count)
        },
        InstructionWorkload(
            name: "encrypted-insert", title: "encrypted store: bulk insert, one index, one transaction"
        ) { settings in
            let fixture = try EncryptionFixture(count: settings.size(1_000_000))
            return (fixture.inserts(), fixture.rows.count)
        },
        InstructionWorkload(
            name: "history-insert", title: "history kept: bulk insert, one index, one transaction"
        ) { settings in
            let count = settings.size(1_000_000)
            return (HistorySystems.bulkInsert(rows: rows(count)), count)
        },
        InstructionWorkload(
            name: "history-update", title: "history kept: update 10% of objects in one transaction"
        ) { settings in
            let rows = rows(settings.size(1_000_000))
            let stores = try HistorySystems.Stores(rows: rows, label: "history-update", durability: .noSync)
            let ids = Array(stride(from: 0, to: rows.count, by: 10))
            return (HistorySystems.update(stores, ids: ids), ids.count)
        },
        InstructionWorkload(
            name: "history-durable", title: "history kept: single-object durable commits (fsync each)"
        ) {
            settings in
            let perBody = Swift.max(settings.size(10_000), 10)
            let rows = rows(perBody * 2)
            let stores = try HistorySystems.Stores(rows: [], label: "history-durable")
            return (HistorySystems.durableCommits(stores, rows: rows, perBody: perBody), perBody)
        },
        InstructionWorkload(
            name: "history-read", title: "history(since:) of commits of one object each, per change"
        ) { settings in
            let commits = Swift.max(settings.size(10_000), 100)
            return (try HistorySystems.reading(commits: commits), commits)
        },
        InstructionWorkload(name: "bulk-insert", title: "bulk insert, one index, one transaction") {
            settings in
            let count = settings.size(1_000_000)
            let rows = rows(count)
            return (CoreSystems.bulkInsert(rows: rows, encoded: try rows.map(RawLMDB.bytes)), count)
        },
        InstructionWorkload(name: "update-10pct", title: "update 10% of objects in one transaction") {
            settings in
            let fixture = try Fixture(count: settings.size(1_000_000))
            let ids = Array(stride(from: 0, to: fixture.rows.count, by: 10))
            return (CoreSystems.update(fixture, ids: ids), ids.count)
        },
        InstructionWorkload(name: "durable-commits", title: "single-object durable commits (fsync each)") {
            settings in
            let scratch = Scratch("durable")
            let store = try Store(at: scratch.url.appendingPathComponent("lode"), types: [Row.self])
            let perBody = Swift.max(settings.size(10_000), 10)
            let rows = rows(perBody * 2)
            let systems = CoreSystems.durableCommits(
                store: store, raw: try RawLMDB(path: scratch.path("raw")),
                sqlite: try SQLiteBaseline(path: scratch.path("sqlite.db")), rows: rows,
                encoded: try rows.map(RawLMDB.bytes), perBody: perBody)
            // The stores live as long as the systems use them.
            return (
                systems.map { system in
                    System(name: system.name) {
                        _ = scratch
                        try system.body()
                    }
                }, perBody
            )
        },
        InstructionWorkload(
            name: "text-build", title: "full-text: indexing one document (title + body) in a bulk insert"
        ) { settings in
            let corpus = try TextCorpus(count: settings.size(200_000))
            let scratch = Scratch("text-build")
            var store: Store?
            var sqlite: SQLiteText?
            var run = 0
            return (
                [
                    System(
                        name: "Lode",
                        prepare: {
                            store?.close()
                            run += 1
                            store = try Store(
                                at: scratch.url.appendingPathComponent("lode\(run)"),
                                configuration: StoreConfiguration(durability: .noSync),
                                types: [BenchDocument.self])
                        },
                        body: {
                            try store!.write { tx in
                                for document in corpus.documents { try tx.insert(document) }
                            }
                        }),
                    System(
                        name: "SQLite FTS5",
                        prepare: {
                            run += 1
                            sqlite = try SQLiteText(path: scratch.path("fts\(run).db"))
                        },
                        body: { try sqlite!.load(corpus.documents) }),
                ], corpus.documents.count
            )
        },
        InstructionWorkload(
            name: "text-live",
            title: "full-text: a one-document update and the live ranked search's refresh (per commit)"
        ) { settings in
            let corpus = try TextCorpus(count: settings.size(200_000))
            let scratch = Scratch("text-live")
            let store = try Store(
                at: scratch.url.appendingPathComponent("lode"),
                configuration: StoreConfiguration(durability: .noSync), types: [BenchDocument.self])
            try store.write { tx in for document in corpus.documents { try tx.insert(document) } }
            let word = corpus.word(heldBy: min(1_000, corpus.documents.count / 4))
            let live = try store.objects(BenchDocument.self).matching(try TextQuery(word)).live()
            let sink = Sink()
            var round = 0
            return (
                [
                    System(name: "Lode") {
                        // Twenty commits: a document gets the word, the next commit takes it away.
                        for commit in 0..<20 {
                            let id = (round * 20 + commit / 2 * 7919) % corpus.documents.count
                            let body = corpus.documents[id].body + (commit % 2 == 0 ? " \(word)" : "")
                            try store.write { tx in
                                try tx.update(BenchDocument.self, key: id, \.body) { $0 = body }
                            }
                            sink.value &+= try live.refresh()?.insertions.count ?? 0
                        }
                        round += 1
                    }
                ], 20
            )
        },
        InstructionWorkload(
            name: "text-query", title: "full-text: ranked top 20 of a common term (per query)"
        ) { settings in
            let corpus = try TextCorpus(count: settings.size(200_000))
            let scratch = Scratch("text-query")
            let store = try Store(
                at: scratch.url.appendingPathComponent("lode"),
                configuration: StoreConfiguration(durability: .noSync), types: [BenchDocument.self])
            try store.write { tx in for document in corpus.documents { try tx.insert(document) } }
            let sqlite = try SQLiteText(path: scratch.path("fts.db"))
            try sqlite.load(corpus.documents)
            let word = corpus.word(heldBy: corpus.documents.count / 3)
            let query = try TextQuery(word)
            let documents = store.objects(BenchDocument.self)
            let sink = Sink()
            return (
                [
                    System(name: "Lode") {
                        for _ in 0..<20 {
                            sink.value &+= try documents.matching(query).limit(20).fetch().count
                        }
                    },
                    System(name: "SQLite FTS5") {
                        for _ in 0..<20 { sink.value &+= try sqlite.top(word, limit: 20).count }
                    },
                ], 20
            )
        },
    ]

    static func rows(_ count: Int) -> [Row] {
        var rng = Generator(1)
        return (0..<count).map { Row.make($0, &rng) }
    }

    /// The child's side: builds `workload`, runs `system`'s body once uncounted and once inside
    /// ``measuredRegion(_:)``, and prints how many objects the counted run handled.
    static func runChild(workload name: String, system: String, settings: Settings) throws {
        guard let workload = all.first(where: { $0.name == name }) else {
            throw BenchError.usage("unknown instruction workload \(name)")
        }
        let (systems, objects) = try workload.make(settings)
        guard let chosen = systems.first(where: { $0.name == system }) else {
            throw BenchError.usage("workload \(name) has no system \(system)")
        }
        try chosen.prepare()
        try chosen.body()
        try chosen.prepare()
        try measuredRegion(chosen.body)
        print("objects \(objects)")
    }

    /// The parent's side: every system of every workload chosen, in children under callgrind, two at
    /// a time (the counts do not depend on what runs beside them).
    static func run(settings: Settings, only: Set<String>?) throws -> [(
        InstructionWorkload, [InstructionCount]
    )] {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let chosen = all.filter { only?.contains($0.name) ?? true }
        var jobs: [(workload: Int, system: String)] = []
        for (position, workload) in chosen.enumerated() {
            // The names only: building the systems here would build every fixture in this process too.
            for system in systemNames(workload.name) { jobs.append((position, system)) }
        }
        let directory = Scratch("callgrind")
        var counts = Array(repeating: [InstructionCount](), count: chosen.count)
        let parallel = Swift.max(1, Swift.min(ProcessInfo.processInfo.activeProcessorCount, 4))
        var next = 0
        while next < jobs.count {
            let batch = jobs[next..<Swift.min(next + parallel, jobs.count)]
            next += batch.count
            var running:
                [(job: (workload: Int, system: String), process: Process, out: String, log: String)] = []
            for job in batch {
                let tag =
                    "\(chosen[job.workload].name)-\(job.system.replacingOccurrences(of: " ", with: "_"))"
                let out = directory.path("\(tag).callgrind")
                let log = directory.path("\(tag).log")
                _ = FileManager.default.createFile(atPath: log, contents: nil)
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/valgrind")
                process.arguments = [
                    "--tool=callgrind", "--callgrind-out-file=\(out)", "--toggle-collect=*measuredRegion*",
                    executable, "--instruction-child", chosen[job.workload].name, job.system, "--scale",
                    String(settings.scale),
                ]
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
                process.standardOutput = handle
                process.standardError = handle
                try process.run()
                running.append((job, process, out, log))
            }
            for entry in running {
                entry.process.waitUntilExit()
                let log = (try? String(contentsOfFile: entry.log, encoding: .utf8)) ?? ""
                guard entry.process.terminationStatus == 0,
                    let objects = log.split(separator: "\n").last(where: { $0.hasPrefix("objects ") })
                        .flatMap({ Int($0.dropFirst("objects ".count)) }),
                    let instructions = totalInstructions(callgrindOutput: entry.out)
                else {
                    throw BenchError.usage(
                        "the callgrind run of \(chosen[entry.job.workload].name) / \(entry.job.system) failed:\n\(log.suffix(2000))"
                    )
                }
                counts[entry.job.workload].append(
                    InstructionCount(system: entry.job.system, instructions: instructions, objects: objects))
            }
        }
        return Array(zip(chosen, counts))
    }

    /// The systems a workload compares, Lode first.
    static func systemNames(_ workload: String) -> [String] {
        switch workload {
        case "decode": return ["Lode", "Lode (Codable)", "Codable floor"]
        case "encode": return ["Lode", "Lode (Codable)"]
        case "range-query", "projection", "filtered-scan", "sorted-top":
            return ["Lode", "SQLite", "Lode (Codable)"]
        case "update-10pct": return ["Lode", "raw LMDB", "SQLite", "Lode (whole object)", "Lode (Codable)"]
        case "durable-commits": return ["Lode", "raw LMDB", "SQLite"]
        case "links-inverse", "links-eager": return ["Lode", "SQLite"]
        case "text-build", "text-query": return ["Lode", "SQLite FTS5"]
        case "text-live": return ["Lode"]
        case "encrypted-scan", "encrypted-point-reads", "encrypted-insert": return ["Lode encrypted", "Lode"]
        case "history-insert", "history-update", "history-durable": return HistorySystems.names
        case "history-read": return ["history(since:)"]
        default: return ["Lode", "raw LMDB", "SQLite", "Lode (Codable)"]
        }
    }

    /// The event total of a callgrind output file (its `totals:` line, or `summary:` in older ones).
    static func totalInstructions(callgrindOutput path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for prefix in ["totals:", "summary:"] {
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }),
                let value = line.dropFirst(prefix.count).split(separator: " ").first.flatMap({ Int($0) })
            {
                return value
            }
        }
        return nil
    }

    static func printTable(_ workload: InstructionWorkload, _ counts: [InstructionCount]) {
        let objects = counts.first?.objects ?? 0
        print("\n## \(workload.title) — \(objects) objects, instructions per object (callgrind)")
        print("system".padding(toLength: 40, withPad: " ", startingAt: 0) + "instructions/object   total")
        for count in counts {
            print(
                count.system.padding(toLength: 40, withPad: " ", startingAt: 0)
                    + String(format: "%.0f", count.perObject).padding(
                        toLength: 22, withPad: " ", startingAt: 0)
                    + String(count.instructions))
        }
        guard let lode = counts.first, lode.perObject > 0 else { return }
        for baseline in counts.dropFirst() {
            print(String(format: "ratio to %@: %.2f×", baseline.system, baseline.perObject / lode.perObject))
        }
    }

    static func json(_ results: [(InstructionWorkload, [InstructionCount])]) -> [[String: Any]] {
        results.map { workload, counts in
            [
                "workload": workload.title, "name": workload.name, "objects": counts.first?.objects ?? 0,
                "systems": counts.map {
                    [
                        "name": $0.system, "instructions": $0.instructions,
                        "instructionsPerObject": $0.perObject,
                    ]
                },
                "ratios": Dictionary(
                    uniqueKeysWithValues: counts.dropFirst().map {
                        ($0.system, counts[0].perObject > 0 ? $0.perObject / counts[0].perObject : 0)
                    }),
            ]
        }
    }
}
