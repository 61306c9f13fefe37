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

/// Lode Studio as a user sees it: headless Chromium (Debian's `chromium`, as the documentation check
/// uses) opens the printed URL and the test reads the DOM the page's script renders, clicks, and
/// commits from another process while the page is open. Screenshots are kept under
/// `.build/studio-screenshots`.
@Suite(.serialized) struct StudioBrowserTests {
    /// The tasks `lode-test-helper commit-one` writes (the same type as the helper's).
    struct Task: Persistable {
        var id: Int
        var title: String
        var rank: Int
        var done: Bool
        var group: String
        static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
    }

    struct Detail: Codable {
        var owner: String
        var tags: [String]
    }

    struct Note: Persistable {
        var id: Int
        var title: String
        var rank: Int
        var detail: Detail
        var due: Date?
        static let schema = Schema<Note>(primaryKey: \.id, indexes: [.on(\.rank)])
    }

    struct Crew: Persistable {
        var id: String
        static let schema = Schema<Crew>(primaryKey: \.id)
    }

    struct Member: Persistable {
        var id: Int
        var crew: Link<Crew>?
        static let schema = Schema<Member>(primaryKey: \.id, links: [.to(\.crew, onDelete: .nullify)])
    }

    struct Project: Persistable {
        var id: String
        static let schema = Schema<Project>(primaryKey: \.id)
    }

    /// A served store of `types`, filled by `fill`, and a browser; both end with the value.
    final class Studio {
        let directory: URL
        let server: StudioServer
        let browser: HeadlessChromium

        init(
            _ types: [any Persistable.Type], encryption: StoreEncryption? = nil,
            history: HistoryRetention? = nil,
            fill: (Store) throws -> Void
        ) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "studio-browser-\(UUID().uuidString)")
            do {
                let writer = try Store(
                    at: directory,
                    configuration: StoreConfiguration(encryption: encryption, history: history),
                    types: types)
                try fill(writer)
            }
            let store = try Store(
                atPath: directory.path,
                configuration: StoreConfiguration(readOnly: true, encryption: encryption))
            server = try StudioServer(store: store, path: directory.path)
            browser = try HeadlessChromium()
        }

        /// Opens the printed URL and waits for its page: the cookie that carries the token is then set
        /// for the pages the test opens next. (A new tab's first document is `about:blank`, complete
        /// at once: waiting for `readyState` alone would race the first response.)
        func openWithToken() throws {
            try browser.open(server.url)
            try browser.waitFor(
                "location.pathname === '/' && document.body && document.body.dataset.page === 'summary'")
        }

        deinit {
            browser.quit()
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// The text of the column `field` in each row of the table, as a JavaScript array expression.
    static func column(_ field: String) -> String {
        """
        (() => {
          const n = [...document.querySelectorAll('#records thead th a')].findIndex(a => a.textContent === \(CBORValue.quoted(field)));
          return [...document.querySelectorAll('#records tbody tr')].map(r => r.children[n].textContent);
        })()
        """
    }

    /// Opens the check page, runs the check and returns the records check's text once it passed.
    static func runCheck(_ browser: HeadlessChromium, base: String) throws -> String? {
        try browser.navigate(base + "/check")
        try browser.waitFor(
            "document.getElementById('run') && document.getElementById('status').textContent === 'Ready.'"
        )
        try browser.evaluate("document.getElementById('run').click()")
        return try browser.waitFor(
            "document.getElementById('status').textContent.startsWith('ok') && document.getElementById('records-check').innerText"
        ).value as? String
    }

    /// The page's text of the elements `selector` finds, as a JavaScript array expression.
    static func texts(_ selector: String) -> String {
        "[...document.querySelectorAll(\(CBORValue.quoted(selector)))].map(node => node.textContent)"
    }

    @Test func theSummaryShowsTypesCountsReadersAndTheLiveFigures() throws {
        let studio = try Studio(
            [Task.self, Project.self],
            fill: { store in
                try store.write { tx in
                    for id in 0..<37 {
                        try tx.insert(
                            Task(id: id, title: "<b>task \(id)</b>", rank: id % 5, done: false, group: "g"))
                    }
                    try tx.insert(Project(id: "<img src=x onerror=alert(1)>"))
                }
            }
        )
        let (server, browser, directory) = (studio.server, studio.browser, studio.directory)
        // Without the token the page is refused, and nothing of the store shows.
        try browser.open("http://127.0.0.1:\(server.access.port)/")
        let refused =
            try browser.waitFor("document.body && document.body.innerText").value as? String ?? ""
        #expect(refused.contains("refused") && !refused.contains("Task"), "\(refused)")

        try browser.navigate(server.url)
        try browser.waitFor("document.querySelector('#types tr[data-type=\"Task\"]')")
        let task = try browser.evaluate(Self.texts("#types tr[data-type=\"Task\"] td")) as? [String]
        #expect(task?.prefix(4) == ["Task", "37", "id", "rank, done, group"], "\(task ?? [])")
        let project = try browser.evaluate(Self.texts("#types tr[data-type=\"Project\"] td")) as? [String]
        #expect(project?.prefix(2) == ["Project", "1"])
        #expect(
            try browser.evaluate("document.getElementById('store').textContent") as? String
                == directory.path)
        // Nothing from the store became markup.
        #expect(try browser.evaluate("document.querySelectorAll('img').length") as? Int == 0)
        // The live feed is connected and the charts get their figures.
        try browser.waitFor("document.getElementById('live').classList.contains('on')")
        try browser.waitFor("document.getElementById('value-file').textContent")
        let file = try browser.evaluate(Self.texts("#file dt")) as? [String] ?? []
        #expect(file.contains("free pages") && file.contains("oldest pinned version"), "\(file)")
        try browser.screenshot(HeadlessChromium.screenshots.appendingPathComponent("summary.png"))
        // A commit of another process: the count follows and the commit is listed with its change —
        // and the commit rate counts it as soon as it is listed (it said "0 in the last minute"
        // beside a commit listed a second before: it counted the versions between ticks).
        _ = try browser.evaluate(
            """
            window.captionsWhenListed = [];
            new MutationObserver(() => window.captionsWhenListed.push(
              document.getElementById('value-commits').textContent))
              .observe(document.getElementById('commits'), { childList: true });
            true
            """)
        let result = try shell(
            "'\(builtTool("lode-test-helper"))' commit-one '\(directory.path)' insert 100")
        #expect(result.status == 0, "\(result.err)")
        try browser.waitFor(
            "document.querySelector('#types tr[data-type=\"Task\"] td:nth-child(2)').textContent === '38'")
        try browser.waitFor("document.querySelector('#commits li span').textContent === 'insert Task 100'")
        let captions = try browser.evaluate("window.captionsWhenListed") as? [String] ?? []
        #expect(
            !captions.isEmpty && captions.allSatisfy { $0.hasPrefix("1 in the last minute") }, "\(captions)")

        // Activity a person can read: a burst of commits shows as bars over a labelled time axis, in a
        // window that fits the minute the page has been open, and the caption keeps the count after
        // the burst (it read "commits per second 0.0" three seconds later, the bars a few pixels at
        // the right edge of an empty frame).
        let burst = try shell("'\(builtTool("lode-test-helper"))' write '\(directory.path)' 1000 12")
        #expect(burst.status == 0, "\(burst.err)")
        let counted = "parseInt(document.getElementById('value-commits').textContent) >= 14"
        try browser.waitFor(counted)
        let bars = try browser.evaluate(
            "[...document.querySelectorAll('#chart-commits rect.bar')].reduce((sum, bar) => sum + Number(bar.dataset.value), 0)"
        )
        #expect((bars as? Int ?? 0) >= 14, "the bars add up to \(String(describing: bars))")
        let times = try browser.evaluate(Self.texts("#chart-commits text.axis.time")) as? [String] ?? []
        #expect(times.first == "now" && times.contains("−30 s") && times.last == "−60 s", "\(times)")
        let values = try browser.evaluate(Self.texts("#chart-commits text.axis.value")) as? [String] ?? []
        #expect(values.first == "0" && values.count == 3, "\(values)")
        #expect(
            try browser.evaluate("document.getElementById('chart-commits').dataset.window") as? String == "60"
        )
        let sizes = try browser.evaluate(Self.texts("#chart-file text.axis.value")) as? [String] ?? []
        #expect(sizes.last?.hasSuffix("iB") == true, "\(sizes)")
        Thread.sleep(forTimeInterval: 3)
        let caption = try browser.evaluate("document.getElementById('value-commits').textContent") as? String
        #expect(try browser.evaluate(counted) as? Bool == true, "three seconds later: \(caption ?? "-")")
        try browser.screenshot(HeadlessChromium.screenshots.appendingPathComponent("activity.png"))
    }

    @Test func aTypePagesFiltersSortsAndOpensAnObject() throws {
        let studio = try Studio(
            [Note.self],
            fill: { store in
                try store.write { tx in
                    for id in 0..<1_234 {
                        try tx.insert(
                            Note(
                                id: id, title: "note \(id)", rank: (id * 7) % 13,
                                detail: Detail(owner: "owner \(id % 3)", tags: ["a", "b\(id % 2)"]),
                                due: id % 4 == 0
                                    ? nil : Date(timeIntervalSince1970: 1_800_000_000 + Double(id))))
                    }
                }
            }
        )
        let (server, browser, _) = (studio.server, studio.browser, studio.directory)
        let base = "http://127.0.0.1:\(server.access.port)"
        try studio.openWithToken()
        try browser.navigate(base + "/type?name=Note")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 50")
        // Fields with their stored kinds, the plan, the first page in key order.
        let headers = try browser.evaluate(Self.texts("#records thead th")) as? [String] ?? []
        #expect(
            headers == ["idinteger", "detailmap", "duedate", "rankinteger", "titletext"], "\(headers)")
        #expect(
            try browser.evaluate("document.getElementById('plan').textContent") as? String
                == "plan: scan every Note record; in primary-key order · 50 records read")
        let labels =
            try browser.evaluate("[...document.querySelectorAll('#records tbody tr')].map(r => r.title)")
            as? [String]
        #expect(labels?.first == "0" && labels?.last == "49")
        // Nested values fold open.
        let folds =
            try browser.evaluate("document.querySelectorAll('#records tbody details').length") as? Int
        let firstRow = try browser.evaluate("document.querySelector('#records tbody tr').innerHTML")
        #expect(folds == 100, "\(String(describing: firstRow))")
        let folded =
            try browser.evaluate(
                "(() => { const d = document.querySelector('#records tbody details'); d.open = true; return d.innerText; })()"
            ) as? String
        #expect(folded?.contains("owner 0") == true, "\(folded ?? "")")

        // Next and Previous.
        try browser.evaluate("document.getElementById('next').click()")
        try browser.waitFor("document.querySelector('#records tbody tr').title === '50'")
        #expect(
            try browser.evaluate("document.getElementById('position').textContent") as? String == "page 2"
        )
        try browser.evaluate("document.getElementById('previous').click()")
        try browser.waitFor("document.querySelector('#records tbody tr').title === '0'")

        // A filter the rank index answers, and a sort by clicking a header (descending on the second).
        try browser.navigate(
            base + "/type?name=Note&where=" + "rank >= 11 and title hasPrefix \"note 1\""
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        try browser.waitFor("document.getElementById('plan').textContent.includes('index Note.rank')")
        let ranks = try browser.evaluate(Self.column("rank")) as? [String]
        let titles = try browser.evaluate(Self.column("title")) as? [String]
        #expect(ranks?.isEmpty == false && ranks?.allSatisfy { Int($0)! >= 11 } == true, "\(ranks ?? [])")
        #expect(titles?.allSatisfy { $0.hasPrefix("note 1") } == true)
        try browser.navigate(base + "/type?name=Note")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 50")
        try browser.evaluate(
            "[...document.querySelectorAll('#records thead th a')].find(a => a.textContent === 'rank').click()"
        )
        try browser.waitFor(
            "location.search.includes('sort=rank') && document.getElementById('plan').textContent.includes('in the order of index Note.rank')"
        )
        try browser.evaluate(
            "[...document.querySelectorAll('#records thead th a')].find(a => a.textContent === 'rank').click()"
        )
        try browser.waitFor(
            "location.search.includes('sort=-rank') && document.getElementById('plan').textContent.includes('in the order of index Note.rank (rank), descending')"
        )
        let sorted = (try browser.evaluate(Self.column("rank")) as? [String] ?? []).compactMap { Int($0) }
        #expect(sorted.count == 50 && sorted == sorted.sorted(by: >) && sorted.first == 12)
        try browser.screenshot(HeadlessChromium.screenshots.appendingPathComponent("type.png"))

        // A hostile filter: the page says what is wrong and stays up.
        try browser.navigate(
            base + "/type?name=Note&where=" + String(repeating: "(", count: 300).addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!)
        let refusal =
            try browser.waitFor(
                "document.querySelector('#status.error') && document.querySelector('#status').textContent"
            ).value as? String
        #expect(refusal?.contains("nest deeper than 100 levels") == true, "\(refusal ?? "")")

        // One object, from its row.
        try browser.navigate(base + "/type?name=Note")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 50")
        try browser.evaluate("document.querySelector('#records tbody tr[title=\"7\"] a').click()")
        let json =
            try browser.waitFor(
                "document.getElementById('json') && document.getElementById('json').textContent"
            ).value as? String
        #expect(
            json?.contains("\"title\": \"note 7\"") == true && json?.contains("owner 1") == true,
            "\(json ?? "")")
        let kinds =
            try browser.evaluate(
                "[...document.querySelectorAll('#fields tbody tr')].map(r => r.children[0].textContent + ':' + r.children[1].textContent)"
            ) as? [String]
        #expect(
            kinds == ["id:integer", "title:text", "rank:integer", "detail:map", "due:date"],
            "\(kinds ?? [])")
    }

    /// The object page of a store that keeps history lists the object's changes, newest first, each
    /// field's old value struck through and its new one beside it.
    @Test func anObjectPageShowsTheObjectsHistoryAsADiff() throws {
        let studio = try Studio([Note.self], history: .forever) { store in
            let detail = Detail(owner: "ann", tags: [])
            try store.write { tx in
                try tx.insert(Note(id: 7, title: "note 7", rank: 1, detail: detail, due: nil))
            }
            try store.write { tx in
                tx.author = "bob"
                try tx.update(Note.self, key: 7) {
                    $0.title = "renamed"
                    $0.rank = 2
                }
            }
        }
        try studio.openWithToken()
        let base = "http://127.0.0.1:\(studio.server.access.port)"
        let key = KeyText.hex(try KeyEncoder().encode(7))
        try studio.browser.navigate(base + "/object?type=Note&key=\(key)")
        try studio.browser.waitFor("document.querySelectorAll('#history tbody tr').length === 2")
        let rows =
            try studio.browser.evaluate(
                "[...document.querySelectorAll('#history tbody tr')].map(r => r.children[2].textContent + '|' + [...r.querySelectorAll('td.diff div')].map(d => d.textContent).join(';'))"
            ) as? [String]
        #expect(rows?.first == #"bob|rank: 1 → 2;title: "note 7" → "renamed""#, "\(rows ?? [])")
        #expect(rows?.last?.hasPrefix("|") == true && rows?.last?.contains(#"title: "note 7""#) == true)
        let struck = try studio.browser.evaluate("document.querySelector('#history td.diff del').textContent")
        #expect(struck as? String == "1")
    }

    @Test func aCommitFromAnotherProcessAppearsHighlightedWithinASecond() throws {
        let studio = try Studio(
            [Task.self],
            fill: { store in
                try store.write { tx in
                    for id in 0..<20 where id != 5 {
                        try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "g"))
                    }
                }
            }
        )
        let (server, browser, directory) = (studio.server, studio.browser, studio.directory)
        let base = "http://127.0.0.1:\(server.access.port)"
        try studio.openWithToken()
        try browser.navigate(base + "/type?name=Task&sort=rank")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 19")
        try browser.waitFor("document.getElementById('live').classList.contains('on')")
        func commit(_ operation: String, _ id: Int) throws {
            let result = try shell(
                "'\(builtTool("lode-test-helper"))' commit-one '\(directory.path)' \(operation) \(id)")
            #expect(result.status == 0 && result.out.contains("committed"), "\(result.err)")
        }
        // An insert: the row appears, marked, within a second of the other process's commit.
        try commit("insert", 5)
        let inserted = try browser.waitFor(
            "document.querySelector('#records tbody tr.inserted[title=\"5\"]')", timeout: 10)
        #expect(inserted.seconds < 1, "the inserted row was marked after \(inserted.seconds) s")
        // An update that moves the row to the end of the rank order: modified and moved, the others stay.
        try commit("update", 3)
        let updated = try browser.waitFor(
            "document.querySelector('#records tbody tr.modified.moved[title=\"3\"]')", timeout: 10)
        #expect(updated.seconds < 1, "the updated row was marked after \(updated.seconds) s")
        #expect(
            try browser.evaluate("document.querySelectorAll('#records tbody tr.moved').length") as? Int
                == 1)
        #expect(
            try browser.evaluate("document.querySelector('#records tbody tr:last-child').title")
                as? String == "3")
        // (The README's screenshot: docs/images/lode-studio.png is a copy of this one.)
        try browser.screenshot(HeadlessChromium.screenshots.appendingPathComponent("live.png"))
        // A delete: the row goes.
        try commit("delete", 8)
        try browser.waitFor("!document.querySelector('#records tbody tr[title=\"8\"]')", timeout: 10)
        // Each commit's change set, newest first.
        let commits = try browser.evaluate(Self.texts("#commits li span")) as? [String]
        #expect(
            commits?.prefix(3) == ["delete Task 8", "update Task 3 (rank, title)", "insert Task 5"],
            "\(commits ?? [])")
    }

    @Test func theSchemaChangeLogAndCheckPagesShowTheStore() throws {
        let studio = try Studio(
            [Task.self, Note.self, Crew.self, Member.self],
            fill: { store in
                for id in 0..<6 {
                    try store.write { tx in
                        try tx.insert(
                            Task(id: id, title: "task \(id)", rank: id, done: id % 2 == 0, group: "g"))
                    }
                }
                try store.write { tx in
                    try tx.insert(Crew(id: "red"))
                    try tx.insert(Member(id: 1, crew: try Link(key: "red")))
                    try tx.insert(Member(id: 2, crew: nil))
                }
            }
        )
        let (server, browser, _) = (studio.server, studio.browser, studio.directory)
        let base = "http://127.0.0.1:\(server.access.port)"
        try studio.openWithToken()
        try browser.navigate(base + "/schema")
        let schema =
            try browser.waitFor(
                "document.getElementById('type-Task') && document.getElementById('type-Task').innerText"
            ).value as? String ?? ""
        #expect(
            schema.contains("index rank") && schema.contains("primary key")
                && schema.contains("done, group, id, rank, title"), "\(schema)")
        // The type's name links to its table.
        try browser.evaluate("document.querySelector('#type-Note h3 a').click()")
        try browser.waitFor(
            "location.pathname === '/type' && document.getElementById('title').textContent === 'Note'")

        try browser.navigate(base + "/changes")
        try browser.waitFor("document.querySelectorAll('#changes tbody tr').length === 7")
        let newest = try browser.evaluate(Self.texts("#changes tbody tr td:nth-child(3)")) as? [String]
        #expect(
            newest?.prefix(2) == ["insert Crew \"red\"; insert Member 1; insert Member 2", "insert Task 5"],
            "\(newest ?? [])")

        let status = try Self.runCheck(browser, base: base)
        #expect(status?.contains("9 records") == true, "\(status ?? "")")

        // A link opens the object it points at.
        try browser.navigate(base + "/type?name=Member")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 2")
        #expect(try browser.evaluate(Self.column("crew")) as? [String] == ["\"red\"", ""])
        try browser.evaluate("document.querySelector('#records tbody tr[title=\"1\"] .links a').click()")
        let crew =
            try browser.waitFor(
                "location.pathname === '/object' && document.getElementById('json').textContent"
            )
            .value as? String
        #expect(crew?.contains("\"id\": \"red\"") == true, "\(crew ?? "")")
        #expect(try browser.evaluate("new URLSearchParams(location.search).get('type')") as? String == "Crew")
    }

    /// An encrypted store browsed as a plain one is: the summary, a type's pages in primary-key order
    /// (its records lie in hash order), an equality its hashed index answers, a range and a sort it
    /// cannot walk (answered by reading the type's records), an object, and the check.
    @Test func anEncryptedStoreBrowsesAsAPlainOneDoes() throws {
        let studio = try Studio(
            [Note.self], encryption: .key(try StoreKey.random()),
            fill: { store in
                try store.write { tx in
                    for id in 0..<120 {
                        try tx.insert(
                            Note(
                                id: id, title: "note \(id)", rank: (id * 7) % 13,
                                detail: Detail(owner: "owner \(id % 3)", tags: ["a"]), due: nil))
                    }
                }
            }
        )
        let (server, browser, _) = (studio.server, studio.browser, studio.directory)
        let base = "http://127.0.0.1:\(server.access.port)"
        try studio.openWithToken()
        try browser.waitFor("document.querySelector('#types tr[data-type=\"Note\"]')")
        let note = try browser.evaluate(Self.texts("#types tr[data-type=\"Note\"] td")) as? [String]
        #expect(note?.prefix(2) == ["Note", "120"], "\(note ?? [])")

        try browser.navigate(base + "/type?name=Note")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 50")
        let labels =
            try browser.evaluate("[...document.querySelectorAll('#records tbody tr')].map(r => r.title)")
            as? [String]
        #expect(labels == (0..<50).map { "\($0)" }, "\(labels ?? [])")
        try browser.evaluate("document.getElementById('next').click()")
        try browser.waitFor("document.querySelector('#records tbody tr').title === '50'")

        func filtered(_ query: String) throws -> (plan: String, ranks: [Int], labels: [String]) {
            try browser.navigate(base + "/type?name=Note&" + query)
            try browser.waitFor(
                "location.search.includes('where') || location.search.includes('sort') ? document.getElementById('plan').textContent.startsWith('plan') : false"
            )
            let plan = try browser.evaluate("document.getElementById('plan').textContent") as? String ?? ""
            let ranks = (try browser.evaluate(Self.column("rank")) as? [String] ?? []).compactMap { Int($0) }
            let labels =
                try browser.evaluate("[...document.querySelectorAll('#records tbody tr')].map(r => r.title)")
                as? [String] ?? []
            return (plan, ranks, labels)
        }
        let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
        // Equalities: of the primary key, and of an indexed field.
        let one = try filtered("where=" + encode("id == 7"))
        #expect(one.labels == ["7"], "\(one.plan) \(one.labels)")
        let equal = try filtered("where=" + encode("rank == 3"))
        let expectedEqual = (0..<120).filter { ($0 * 7) % 13 == 3 }.map { "\($0)" }
        #expect(equal.plan.contains("index Note.rank"), "\(equal.plan)")
        #expect(equal.labels == expectedEqual, "\(equal.labels)")
        // A range and a sort: read from the records, in the order asked.
        let range = try filtered("where=" + encode("rank >= 11") + "&sort=-rank")
        #expect(range.plan.hasPrefix("plan: scan every Note record"), "\(range.plan)")
        #expect(
            range.ranks == (0..<120).map { ($0 * 7) % 13 }.filter { $0 >= 11 }.sorted(by: >),
            "\(range.ranks)")
        try browser.screenshot(HeadlessChromium.screenshots.appendingPathComponent("encrypted-type.png"))

        try browser.navigate(base + "/type?name=Note")
        try browser.waitFor("document.querySelectorAll('#records tbody tr').length === 50")
        try browser.evaluate("document.querySelector('#records tbody tr[title=\"7\"] a').click()")
        let json =
            try browser.waitFor(
                "document.getElementById('json') && document.getElementById('json').textContent"
            ).value as? String
        #expect(json?.contains("\"title\": \"note 7\"") == true, "\(json ?? "")")

        let status = try Self.runCheck(browser, base: base)
        #expect(status?.contains("120 records") == true, "\(status ?? "")")
    }
}

/// `lode-dump serve` as a user runs it: it prints the URL with the token, serves the store, and
/// stops cleanly on Ctrl-C; a bad command line or a missing store is a clear error.
@Suite struct ServeCommandTests {
    struct Note: Persistable {
        var id: Int
        static let schema = Schema<Note>(primaryKey: \.id)
    }

    @Test func servePrintsTheURLServesAndStopsOnInterrupt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-serve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try Store(at: directory, types: [Note.self])
            try store.write { tx in for id in 0..<5 { try tx.insert(Note(id: id)) } }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtTool("lode-dump"))
        process.arguments = ["serve", directory.path, "--for", "60"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The first line names the URL.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self)
        let url = try #require(
            text.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }.map(String.init), "\(text)"
        )
        let components = try #require(URLComponents(string: url))
        let port = try #require(components.port.map(UInt16.init))
        let answer = try HTTPServerTests.get(
            "/api/summary?token=\(components.queryItems![0].value!)", port: port)
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains(#""name":"Note""#), "\(answer)")
        #expect(try HTTPServerTests.get("/api/summary", port: port).hasPrefix("HTTP/1.1 403"))
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rest.contains("stopped"), "\(rest)")
    }

    @Test func badCommandLinesAndMissingStoresAreClearErrors() throws {
        let port = try runDump(["serve", "/tmp/lode-no-such-store-\(UUID())", "--for", "1"])
        #expect(port.status == 1 && port.err.contains("no such file or directory"), "\(port.err)")
        let badPort = try runDump(["serve", "/tmp", "--port", "seventy"])
        #expect(badPort.status == 2 && badPort.err.contains("--port needs a port number"), "\(badPort.err)")
    }
}
