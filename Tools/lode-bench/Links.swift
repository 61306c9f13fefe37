import CMalloc
import CSQLite
import Foundation
import Lode
import LodeMacros

/// A project of the link workloads (a model of the macro, like ``Row``).
@Model(name: "Project")
struct BenchProject {
    @PrimaryKey var id: Int
    @Indexed var name: String
    var archived: Bool
}

/// A task of the link workloads: it belongs to a project, and goes with it (cascade).
@Model(name: "Task")
struct BenchTask {
    @PrimaryKey var id: Int
    @Indexed var title: String
    var done: Bool
    @Linked(onDelete: .cascade) var project: Link<BenchProject>?
}

/// The same projects and tasks in a Lode store and in SQLite (a foreign key with an index and
/// `ON DELETE CASCADE`, foreign keys enforced): `tasks` tasks over 1,000 projects (at full size), of
/// which the first ten have a tenth of the tasks between them (10,000 each at full size) and the next
/// 900 share the rest evenly (1,000 each); the last 90 have none.
final class LinkFixture {
    let scratch = Scratch("links")
    let store: Store
    let sqlite: SQLiteLinks
    let tasks: Int
    let projects: Int
    /// Projects with a tenth of the tasks between them, and projects with an even share of the rest.
    let big: Range<Int>
    let normal: Range<Int>

    init(tasks: Int, projects: Int) throws {
        self.tasks = tasks
        self.projects = projects
        big = 0..<Swift.max(1, projects / 100)
        normal = big.upperBound..<Swift.max(big.upperBound + 1, projects * 91 / 100)
        let projectRows = (0..<projects).map {
            BenchProject(
                id: $0, name: String(format: "project %04d", ($0 * 7919) % projects), archived: false)
        }
        var taskRows: [BenchTask] = []
        taskRows.reserveCapacity(tasks)
        var normalIndex = 0
        for id in 0..<tasks {
            let project: Int
            if id % 10 == 0 {
                project = big.lowerBound + (id / 10) % big.count
            } else {
                project = normal.lowerBound + normalIndex % normal.count
                normalIndex += 1
            }
            taskRows.append(
                BenchTask(
                    id: id, title: String(format: "task %07d", (id &* 104_729) % tasks), done: id % 3 == 0,
                    project: try Link(key: project)))
        }
        store = try Store(
            at: scratch.url.appendingPathComponent("lode"),
            configuration: StoreConfiguration(durability: .noSync, initialMapSize: 4 << 30),
            types: [BenchProject.self, BenchTask.self])
        try store.write { tx in
            for project in projectRows { try tx.insert(project) }
            for task in taskRows { try tx.insert(task) }
        }
        sqlite = try SQLiteLinks(path: scratch.path("links.db"))
        try sqlite.insert(projects: projectRows, tasks: taskRows)
    }
}

/// SQLite through its C API with the schema a careful user would write for the same data.
final class SQLiteLinks {
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(path: String) throws {
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError.sqlite("open \(path)") }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=NORMAL")
        try exec("PRAGMA foreign_keys=ON")
        // Room to sort a million rows in memory, as a careful user would give it.
        try exec("PRAGMA cache_size=-262144")
        try exec("PRAGMA temp_store=MEMORY")
        try exec(
            "CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL, archived INTEGER NOT NULL)")
        try exec(
            "CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, done INTEGER NOT NULL, "
                + "project INTEGER REFERENCES projects(id) ON DELETE CASCADE)")
        try exec("CREATE INDEX tasks_project ON tasks(project)")
        try exec("CREATE INDEX tasks_title ON tasks(title)")
        try exec("CREATE INDEX projects_name ON projects(name)")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError.sqlite("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// The prepared statement for `sql`, reset.
    private func statement(_ sql: String) throws -> OpaquePointer {
        if let prepared = statements[sql] {
            sqlite3_reset(prepared)
            return prepared
        }
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else {
            throw BenchError.sqlite("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        statements[sql] = prepared
        return prepared
    }

    func insert(projects: [BenchProject], tasks: [BenchTask]) throws {
        try exec("BEGIN")
        let project = try statement("INSERT INTO projects (id, name, archived) VALUES (?, ?, ?)")
        for row in projects {
            sqlite3_reset(project)
            sqlite3_bind_int64(project, 1, Int64(row.id))
            sqlite3_bind_text(project, 2, row.name, -1, Self.transient)
            sqlite3_bind_int64(project, 3, row.archived ? 1 : 0)
            guard sqlite3_step(project) == SQLITE_DONE else { throw BenchError.sqlite("insert project") }
        }
        let task = try statement("INSERT INTO tasks (id, title, done, project) VALUES (?, ?, ?, ?)")
        for row in tasks {
            sqlite3_reset(task)
            sqlite3_bind_int64(task, 1, Int64(row.id))
            sqlite3_bind_text(task, 2, row.title, -1, Self.transient)
            sqlite3_bind_int64(task, 3, row.done ? 1 : 0)
            sqlite3_bind_int64(task, 4, Int64(try row.project!.key(as: Int.self)))
            guard sqlite3_step(task) == SQLITE_DONE else { throw BenchError.sqlite("insert task") }
        }
        try exec("COMMIT")
    }

    private func task(_ statement: OpaquePointer, from column: Int32 = 0) throws -> BenchTask {
        BenchTask(
            id: Int(sqlite3_column_int64(statement, column)),
            title: String(cString: sqlite3_column_text(statement, column + 1)),
            done: sqlite3_column_int64(statement, column + 2) != 0,
            project: sqlite3_column_type(statement, column + 3) == SQLITE_NULL
                ? nil : try Link(key: Int(sqlite3_column_int64(statement, column + 3))))
    }

    /// The tasks of one project, through the foreign key's index.
    func tasks(ofProject project: Int) throws -> [BenchTask] {
        let select = try statement("SELECT id, title, done, project FROM tasks WHERE project = ?")
        sqlite3_bind_int64(select, 1, Int64(project))
        var found: [BenchTask] = []
        while sqlite3_step(select) == SQLITE_ROW { found.append(try task(select)) }
        return found
    }

    /// The tasks with ids in `range`, each with its project: one join.
    func tasksWithProjects(_ range: Range<Int>) throws -> [(BenchTask, BenchProject?)] {
        let select = try statement(
            "SELECT t.id, t.title, t.done, t.project, p.id, p.name, p.archived FROM tasks t "
                + "LEFT JOIN projects p ON p.id = t.project WHERE t.id >= ? AND t.id < ?")
        sqlite3_bind_int64(select, 1, Int64(range.lowerBound))
        sqlite3_bind_int64(select, 2, Int64(range.upperBound))
        var found: [(BenchTask, BenchProject?)] = []
        while sqlite3_step(select) == SQLITE_ROW {
            let project =
                sqlite3_column_type(select, 4) == SQLITE_NULL
                ? nil
                : BenchProject(
                    id: Int(sqlite3_column_int64(select, 4)),
                    name: String(cString: sqlite3_column_text(select, 5)),
                    archived: sqlite3_column_int64(select, 6) != 0)
            found.append((try task(select), project))
        }
        return found
    }

    /// Deletes a project; its tasks go by the foreign key's cascade. One transaction.
    func deleteProject(_ id: Int) throws {
        try exec("BEGIN")
        let delete = try statement("DELETE FROM projects WHERE id = ?")
        sqlite3_bind_int64(delete, 1, Int64(id))
        guard sqlite3_step(delete) == SQLITE_DONE else { throw BenchError.sqlite("delete project") }
        try exec("COMMIT")
    }

    /// Renames a project (in its own transaction).
    func rename(project id: Int, to name: String) throws {
        let update = try statement("UPDATE projects SET name = ? WHERE id = ?")
        sqlite3_bind_text(update, 1, name, -1, Self.transient)
        sqlite3_bind_int64(update, 2, Int64(id))
        guard sqlite3_step(update) == SQLITE_DONE else { throw BenchError.sqlite("rename project") }
    }

    /// Every task's id in the order of the list sectioned by project name (tasks by title), cut into
    /// sections: what a naive live list re-fetches after each change.
    func sectionsByProjectName() throws -> [[Int]] {
        let select = try statement(
            "SELECT t.id, p.name FROM tasks t JOIN projects p ON p.id = t.project ORDER BY p.name, t.title, t.id"
        )
        var sections: [[Int]] = []
        var current: String?
        while sqlite3_step(select) == SQLITE_ROW {
            let name = String(cString: sqlite3_column_text(select, 1))
            if name != current {
                current = name
                sections.append([])
            }
            sections[sections.count - 1].append(Int(sqlite3_column_int64(select, 0)))
        }
        return sections
    }
}

extension Workloads {
    /// The relationship workloads at 1M tasks over 1,000 projects, Lode against SQLite with a foreign
    /// key (indexed, `ON DELETE CASCADE`) and a join, and against the naive live way: memory of a
    /// live result sectioned across the link against a plain one; renaming a project of 1,000 tasks
    /// in a live result sectioned by project name; one project's tasks; eager loading 10,000 tasks
    /// with their projects; cascade-deleting a project of 10,000 tasks.
    /// One project's tasks through the inverse link, against SQLite's indexed foreign key: random
    /// projects, each task decoded.
    static func inverseLink(_ fixture: LinkFixture, _ settings: Settings) throws -> Figure {
        var rng = Generator(27)
        let lookups = (0..<(settings.quick ? 5 : 100)).map { _ in fixture.normal.randomElement(using: &rng)! }
        let found = try fixture.store.read { tx in
            try tx.objects(BenchTask.self, linkingTo: try Link<BenchProject>(key: lookups[0]), via: \.project)
                .count
        }
        let inverse = try alternate(runs: settings.runs, LinkSystems.inverse(fixture, projects: lookups))
        return Figure(
            workload: "links: one project's tasks (\(found) each), decoded", size: fixture.tasks,
            timings: [
                Timing(system: "Lode", runs: inverse[0], operations: lookups.count),
                Timing(system: "SQLite indexed foreign key", runs: inverse[1], operations: lookups.count),
            ])
    }

    /// ``inverseLink(_:_:)`` alone (`--only links-inverse`, and in `--scales`), on a fixture of its own.
    static func linksInverse(_ settings: Settings) throws -> [Figure] {
        let fixture = try LinkFixture(tasks: settings.size(1_000_000), projects: settings.size(1_000))
        return [try inverseLink(fixture, settings)]
    }

    static func links(_ settings: Settings) throws -> [Figure] {
        let fixture = try LinkFixture(tasks: settings.size(1_000_000), projects: settings.size(1_000))
        var figures: [Figure] = []
        let tasks = fixture.store.objects(BenchTask.self)

        // Memory: a live result sectioned by project name against a plain live result of the same
        // tasks in the same order of titles.
        func allocated() -> Int {
            malloc_trim(0)
            let info = mallinfo2()
            return Int(info.uordblks) + Int(info.hblkhd)
        }
        var base = allocated()
        var plain: LiveResults<BenchTask>? = try tasks.sorted(by: \.title).live()
        let plainBytes = allocated() - base
        plain = nil
        _ = plain
        base = allocated()
        let sectioned = tasks.sorted(by: \.title).sectioned(through: \.project, by: \.name)
        let made = try measure(runs: 1) { _ = try sectioned.live() }
        base = allocated()
        let live = try sectioned.live()
        let sectionedBytes = allocated() - base
        figures.append(
            Figure(
                workload: "links: memory of a live result sectioned by project name", size: fixture.tasks,
                timings: [Timing(system: "Lode live (made in)", runs: made, operations: 1)],
                notes: [
                    String(
                        format:
                            "allocations kept: %.1f MB sectioned across the link, %.1f MB plain (sorted by title): %.2f×",
                        Double(sectionedBytes) / 1e6, Double(plainBytes) / 1e6,
                        Double(sectionedBytes) / Double(Swift.max(plainBytes, 1)))
                ]))

        // Renaming a project of 1,000 tasks: its section moves to the end and back.
        let delivered = DispatchSemaphore(value: 0)
        let token = sectioned.observe { _ in delivered.signal() }
        delivered.wait()
        var previous = try fixture.sqlite.sectionsByProjectName()
        let renamed = fixture.normal.lowerBound
        let original = try fixture.store.read { try $0.object(BenchProject.self, key: renamed)!.name }
        let clock = ContinuousClock()
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        var endToEnd: [Double] = []
        var incremental: [Double] = []
        var naive: [Double] = []
        var rows = 0
        let commits = settings.quick ? 4 : 10
        for commit in 0..<commits {
            let name = commit % 2 == 0 ? "zz renamed \(commit)" : original
            let start = clock.now
            try fixture.store.write { tx in try tx.update(BenchProject.self, key: renamed) { $0.name = name }
            }
            delivered.wait()
            endToEnd.append(seconds(clock.now - start))
            try fixture.store.write { tx in
                try tx.update(BenchProject.self, key: renamed) { $0.name = name + "!" }
            }
            delivered.wait()
            incremental += try measure(runs: 1) {
                let change = try live.refresh()
                rows = Swift.max(rows, change?.moves.count ?? 0, change?.insertions.count ?? 0)
            }
            // The naive way re-reads the whole list: a few samples of it are plenty.
            guard commit < 3 || fixture.tasks <= 100_000 else { continue }
            naive += try measure(runs: 1) {
                try fixture.sqlite.rename(project: renamed, to: name)
                let fresh = try fixture.sqlite.sectionsByProjectName()
                for (index, section) in fresh.enumerated() where index < previous.count {
                    _ = section.difference(from: previous[index])
                }
                previous = fresh
            }
        }
        token.cancel()
        let projectTasks = try fixture.store.read {
            try $0.count(
                BenchTask.self, linkingTo: try Link<BenchProject>(key: renamed), via: \BenchTask.project)
        }
        figures.append(
            Figure(
                workload:
                    "links: rename a project of \(projectTasks) tasks, live result sectioned by project name",
                size: fixture.tasks,
                timings: [
                    Timing(system: "Lode observe (write → delivered)", runs: endToEnd, operations: 1),
                    Timing(
                        system: "naive: SQLite update, re-fetch join, sections, difference", runs: naive,
                        operations: 1),
                ],
                notes: [
                    "incremental part alone (refresh after the commit): \(format(Timing(system: "", runs: incremental, operations: 1).median)) median"
                ]))

        // One project's tasks: the inverse link against the foreign key's index.
        figures.append(try inverseLink(fixture, settings))

        // Eager loading: 10,000 tasks with their projects.
        let loaded = LinkSystems.eagerWindow(fixture).count
        let eager = try alternate(runs: settings.runs, LinkSystems.eager(fixture))
        figures.append(
            Figure(
                workload: "links: eager loading of \(loaded) tasks with their projects", size: fixture.tasks,
                timings: [
                    Timing(system: "Lode fetch(including:)", runs: eager[0], operations: loaded),
                    Timing(system: "SQLite join", runs: eager[1], operations: loaded),
                ]))

        // Cascade: a big project and its tasks, a different one each run.
        var lodeNext = fixture.big.lowerBound
        var sqliteNext = fixture.big.lowerBound
        let bigTasks = try fixture.store.read {
            try $0.count(
                BenchTask.self, linkingTo: try Link<BenchProject>(key: fixture.big.lowerBound),
                via: \BenchTask.project)
        }
        let runs = Swift.min(settings.runs, fixture.big.count)
        let cascade = try alternate(
            runs: runs,
            [
                System(name: "Lode") {
                    try fixture.store.write { tx in _ = try tx.delete(BenchProject.self, key: lodeNext) }
                    lodeNext += 1
                },
                System(name: "SQLite") {
                    try fixture.sqlite.deleteProject(sqliteNext)
                    sqliteNext += 1
                },
            ])
        figures.append(
            Figure(
                workload: "links: cascade-delete a project of \(bigTasks) tasks", size: fixture.tasks,
                timings: [
                    Timing(system: "Lode (one commit, no sync)", runs: cascade[0], operations: 1),
                    Timing(
                        system: "SQLite ON DELETE CASCADE (WAL, synchronous=NORMAL)", runs: cascade[1],
                        operations: 1),
                ]))
        _ = live
        return figures
    }
}

/// The systems of the link workloads measured both in time and in instructions.
enum LinkSystems {
    /// The tasks of each of `projects`, decoded: the inverse link against the foreign key's index.
    static func inverse(_ fixture: LinkFixture, projects: [Int]) -> [System] {
        let sink = Sink()
        return [
            System(name: "Lode") {
                try fixture.store.read { tx in
                    for project in projects {
                        sink.value &+= try tx.objects(
                            BenchTask.self, linkingTo: try Link<BenchProject>(key: project), via: \.project
                        ).count
                    }
                }
            },
            System(name: "SQLite") {
                try fixture.sqlite.exec("BEGIN")
                for project in projects { sink.value &+= try fixture.sqlite.tasks(ofProject: project).count }
                try fixture.sqlite.exec("COMMIT")
            },
        ]
    }

    /// The ids of the tasks eager loading reads: 10,000 (at full size) from a third of the way in.
    static func eagerWindow(_ fixture: LinkFixture) -> Range<Int> {
        let first = fixture.tasks / 3
        return first..<(first + Swift.min(10_000, fixture.tasks))
    }

    /// The tasks of ``eagerWindow(_:)`` with their projects: `fetch(including:)` against a join.
    static func eager(_ fixture: LinkFixture) -> [System] {
        let sink = Sink()
        let window = eagerWindow(fixture)
        let (first, end) = (window.lowerBound, window.upperBound)
        let page = fixture.store.objects(BenchTask.self).filter(#Predicate { $0.id >= first && $0.id < end })
        return [
            System(name: "Lode") { sink.value &+= try page.reevaluated().fetch(including: \.project).count },
            System(name: "SQLite") {
                try fixture.sqlite.exec("BEGIN")
                sink.value &+= try fixture.sqlite.tasksWithProjects(window).count
                try fixture.sqlite.exec("COMMIT")
            },
        ]
    }
}
