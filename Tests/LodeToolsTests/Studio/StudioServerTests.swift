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
@testable import LodeText

/// Lode Studio's server over a real store and real sockets: the token and the loopback `Host` are
/// required, the first visit leaves the token in a cookie, the summary arrives as JSON, and paths
/// outside the served ones are not found.
@Suite struct StudioServerTests {
    struct Task: Persistable {
        var id: Int
        var title: String
        static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.title)])
    }

    static func body(of answer: String) -> String {
        answer.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }

    @Test func pagesAndTheSummaryAreServedToTheTokenHolderOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try Store(at: directory, types: [Task.self])
        try writer.write { tx in
            for id in 0..<12 { try tx.insert(Task(id: id, title: "task <\(id)>")) }
        }
        let store = try Store(atPath: directory.path, configuration: StoreConfiguration(readOnly: true))
        let server = try StudioServer(store: store, path: directory.path)
        defer { server.stop() }
        let port = server.access.port
        let token = server.access.token
        #expect(server.url == "http://127.0.0.1:\(port)/?token=\(token)")

        // No token, a wrong one, a foreign Host: refused, with the safety headers.
        let bare = try HTTPServerTests.get("/", port: port)
        #expect(bare.hasPrefix("HTTP/1.1 403"), "\(bare)")
        #expect(bare.contains("X-Frame-Options: DENY") && bare.contains("Cache-Control: no-store"))
        #expect(
            try HTTPServerTests.get("/?token=\(String(token.reversed()))", port: port).hasPrefix(
                "HTTP/1.1 403"))
        let rebound = try HTTPServerTests.exchange(
            port: port, "GET /?token=\(token) HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        #expect(rebound.hasPrefix("HTTP/1.1 421"), "\(rebound)")

        // The first visit: the page, and the token in a cookie for what the page asks next.
        let page = try HTTPServerTests.get("/?token=\(token)", port: port)
        #expect(page.hasPrefix("HTTP/1.1 200"), "\(page)")
        #expect(
            page.contains(
                "Set-Cookie: \(StudioAccess.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict"))
        #expect(page.contains("Content-Security-Policy: default-src 'self'"))
        #expect(Self.body(of: page).contains("<title>Lode Studio</title>"))
        let cookie = "Cookie: \(StudioAccess.cookieName)=\(token)"
        let script = try HTTPServerTests.get("/static/studio.js", port: port, headers: [cookie])
        #expect(script.hasPrefix("HTTP/1.1 200") && script.contains("Content-Type: text/javascript"))

        // The summary, as JSON.
        let answer = try HTTPServerTests.get("/api/summary", port: port, headers: [cookie])
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let summary = try JSONDecoder().decode(StoreSummary.self, from: Data(Self.body(of: answer).utf8))
        #expect(summary.types.map(\.name) == ["Task"] && summary.types[0].objectCount == 12)

        // Paths that are not served, however spelled, are not found.
        for target in ["/static/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/static/", "/api/summary/x"]
        {
            let missing = try HTTPServerTests.get(target, port: port, headers: [cookie])
            #expect(
                missing.hasPrefix("HTTP/1.1 404") || missing.hasPrefix("HTTP/1.1 400"),
                "\(target): \(missing)")
            #expect(!missing.contains("root:"))
        }
    }

    @Test func aStoreThatCannotBeReadIsAnErrorInJSON() throws {
        // A store whose file is gone after it was opened for serving: the summary says why, as JSON.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-gone-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Store(at: directory, types: [Task.self])
        let store = try Store(atPath: directory.path, configuration: StoreConfiguration(readOnly: true))
        let server = try StudioServer(store: store, path: directory.path)
        defer { server.stop() }
        store.close()
        let cookie = "Cookie: \(StudioAccess.cookieName)=\(server.access.token)"
        let answer = try HTTPServerTests.get("/api/summary", port: server.access.port, headers: [cookie])
        #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
        let body =
            try JSONSerialization.jsonObject(with: Data(Self.body(of: answer).utf8)) as? [String: String]
        #expect(body?["error"]?.contains(directory.lastPathComponent) == true, "\(answer)")
    }

    /// A served store of `count` tasks (titles `task N`), the server, and the cookie that carries the
    /// token.
    final class Served {
        let directory: URL
        let writer: Store
        let server: StudioServer
        var port: UInt16 { server.access.port }
        var cookie: String { "Cookie: \(StudioAccess.cookieName)=\(server.access.token)" }

        init(count: Int, encryption: StoreEncryption? = nil, history: HistoryRetention? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "studio-api-\(UUID().uuidString)")
            writer = try Store(
                at: directory, configuration: StoreConfiguration(encryption: encryption, history: history),
                types: [Task.self])
            try writer.write { tx in
                for id in 0..<count { try tx.insert(Task(id: id, title: "task \(id)")) }
            }
            let store = try Store(
                atPath: directory.path,
                configuration: StoreConfiguration(readOnly: true, encryption: encryption))
            server = try StudioServer(store: store, path: directory.path)
        }

        /// GETs `target` with the cookie: the status and the body as JSON.
        func get(_ target: String) throws -> (status: Int, json: [String: Any]) {
            let answer = try HTTPServerTests.get(target, port: port, headers: [cookie])
            let status = Int(answer.dropFirst(9).prefix(3)) ?? 0
            let json =
                (try? JSONSerialization.jsonObject(with: Data(StudioServerTests.body(of: answer).utf8)))
                as? [String: Any] ?? [:]
            return (status, json)
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// An object's page shows its history: each commit that changed it, newest first, with each
    /// field's value before and after.
    @Test func theObjectPageShowsTheObjectsHistory() throws {
        let served = try Served(count: 10, history: .forever)
        try served.writer.write { tx in
            tx.author = "ann"
            try tx.update(Task.self, key: 7) { $0.title = "renamed" }
        }
        try served.writer.write { tx in try tx.update(Task.self, key: 6) { $0.title = "other" } }
        let key = KeyText.hex(try KeyEncoder().encode(7))
        let object = try served.get("/api/object?type=Task&key=\(key)")
        let history = try #require(object.json["history"] as? [[String: Any]])
        #expect(history.map { $0["op"] as? String } == ["update", "insert"], "6's change is not 7's")
        #expect(history[0]["op"] as? String == "update" && history[0]["author"] as? String == "ann")
        let fields = try #require(history[0]["fields"] as? [[String: Any]])
        #expect(fields.count == 1)
        #expect(fields[0]["name"] as? String == "title")
        #expect(fields[0]["before"] as? String == "task 7" && fields[0]["after"] as? String == "renamed")
        try served.writer.write { tx in try tx.delete(Task.self, key: 7) }
        try served.writer.write { tx in try tx.insert(Task(id: 7, title: "again")) }
        let again = try #require(
            try served.get("/api/object?type=Task&key=\(key)").json["history"] as? [[String: Any]])
        #expect(again.map { $0["op"] as? String } == ["insert", "delete", "update", "insert"])
    }

    @Test func theAPIServesPagesObjectsTheChangeLogAndTheCheck() throws {
        let served = try Served(count: 130)
        // A page, its plan, its cursor, and the next page from it.
        let first = try served.get("/api/records?type=Task&limit=50")
        #expect(first.status == 200)
        #expect(first.json["plan"] as? String == "scan every Task record; in primary-key order")
        #expect(first.json["fields"] as? [String] == ["id", "title"])
        #expect(first.json["objectCount"] as? Int == 130)
        let rows = try #require(first.json["rows"] as? [[String: Any]])
        #expect(rows.count == 50 && rows.first?["label"] as? String == "0")
        #expect((rows.first?["kinds"] as? [String: String]) == ["id": "integer", "title": "text"])
        let next = try #require(first.json["next"] as? String)
        let second = try served.get("/api/records?type=Task&limit=50&after=\(next)")
        #expect((second.json["rows"] as? [[String: Any]])?.first?["label"] as? String == "50")
        // A filter an index answers, sorted by it.
        let query = "where=title%20hasPrefix%20%22task%2012%22&sort=-title"
        let filtered = try served.get("/api/records?type=Task&\(query)")
        #expect(
            filtered.json["plan"] as? String
                == "index Task.title: title hasPrefix \"task 12\"; in the order of index Task.title (title), descending"
        )
        #expect(
            (filtered.json["rows"] as? [[String: Any]])?.map { $0["label"] as? String }
                == ["129", "128", "127", "126", "125", "124", "123", "122", "121", "120", "12"])

        try expectObjectsChangesAndCheck(served, key: try #require(rows[7]["key"] as? String))
    }

    /// What every served store of `Served(count: 130)` answers alike: one object by its key (`key`,
    /// object 7's) and 404 for a missing one or a missing type; a rename at the head of the change
    /// log; a check without problems.
    func expectObjectsChangesAndCheck(_ served: Served, key: String) throws {
        let object = try served.get("/api/object?type=Task&key=\(key)")
        #expect(
            ((object.json["object"] as? [String: Any])?["value"] as? [String: Any])?["title"] as? String
                == "task 7")
        #expect(object.json["history"] is NSNull, "a store without history shows none")
        #expect(try served.get("/api/object?type=Task&key=2080000000000fffff").status == 404)
        #expect(try served.get("/api/records?type=Nothing").status == 404)
        #expect(try served.get("/api/object?type=Nothing&key=00").status == 404)

        // The change log, newest first.
        try served.writer.write { tx in try tx.update(Task.self, key: 3) { $0.title = "renamed" } }
        let changes = try served.get("/api/changes?limit=5")
        let commits = try #require(changes.json["commits"] as? [[String: Any]])
        let change = (commits.first?["changes"] as? [[String: Any]])?.first
        #expect(change?["op"] as? String == "update" && change?["fields"] as? [String] == ["title"])
        #expect(change?["label"] as? String == "3")

        // The check.
        let check = try served.get("/api/check")
        #expect((check.json["pages"] as? [String: Any])?["problems"] as? [String] == [], "\(check.json)")
        #expect((check.json["records"] as? [String: Any])?["records"] as? Int == 130, "\(check.json)")
    }

    /// An encrypted store served: pages in primary-key order, a filter its hashed index cannot walk
    /// answered by a scan and sorted in memory, objects by key, the change log and the check.
    @Test func anEncryptedStoreIsServedAsAPlainOneIs() throws {
        let served = try Served(count: 130, encryption: .key(try StoreKey.random()))
        let first = try served.get("/api/records?type=Task&limit=50")
        #expect(first.status == 200)
        #expect(first.json["plan"] as? String == "scan every Task record; in primary-key order")
        let rows = try #require(first.json["rows"] as? [[String: Any]])
        #expect(rows.map { $0["label"] as? String } == (0..<50).map { "\($0)" })
        let next = try #require(first.json["next"] as? String)
        let second = try served.get("/api/records?type=Task&limit=50&after=\(next)")
        #expect((second.json["rows"] as? [[String: Any]])?.first?["label"] as? String == "50")
        let query = "where=title%20hasPrefix%20%22task%2012%22&sort=-title"
        let filtered = try served.get("/api/records?type=Task&\(query)")
        #expect(
            (filtered.json["plan"] as? String)?.hasPrefix("scan every Task record") == true,
            "\(filtered.json)")
        #expect(
            (filtered.json["rows"] as? [[String: Any]])?.map { $0["label"] as? String }
                == ["129", "128", "127", "126", "125", "124", "123", "122", "121", "120", "12"])
        try expectObjectsChangesAndCheck(served, key: try #require(rows[7]["key"] as? String))
    }

    @Test func hostileRequestsAreRefusedAndTheServerGoesOn() throws {
        let served = try Served(count: 20)
        let deep = String(repeating: "(", count: 5_000) + "id == 1" + String(repeating: ")", count: 5_000)
        let encoded = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
        let hostile: [(String, Set<Int>)] = [
            ("/api/records?type=Task&where=\(encoded(deep))", [400]),
            ("/api/records?type=Task&where=\(encoded("title == \"x"))", [400]),
            // A zero byte in the URL: the HTTP library refuses it before the handler.
            ("/api/records?type=Task&where=\(encoded("title contains \"%00\u{0}\""))", [400]),
            ("/api/records?type=Task&where=%FF%FE", [400]),
            (
                "/api/records?type=Task&where=\(encoded(String(repeating: "id == 1 or ", count: 3_000) + "id == 2"))",
                [200, 414, 431, 0]
            ),
            ("/api/records?type=Task&after=%%%", [400]),
            ("/api/records?type=Task&after=\(String(repeating: "A", count: 6_000))", [400, 414, 431, 0]),
            ("/api/records?type=Task&limit=-1", [400]),
            ("/api/records?type=Task&limit=100000000000000000000", [400]),
            ("/api/records?type=../../../../etc/passwd", [404]),
            ("/api/records?type=%00", [400]),
            ("/api/records", [400]),
            ("/api/object?type=Task&key=zz", [400]),
            ("/api/object?type=Task&key=\(String(repeating: "00", count: 3_000))", [400, 414, 431, 0]),
            ("/api/changes?before=-4", [400]),
            ("/api/changes?limit=0", [400]),
            ("/type?name=%3Cscript%3E", [200]),
        ]
        for (target, statuses) in hostile {
            // (Statuses 414 and 431, or a closed connection, are the HTTP library's limits on a request's
            // size.)
            let answer = try HTTPServerTests.get(target, port: served.port, headers: [served.cookie])
            let status = Int(answer.dropFirst(9).prefix(3)) ?? 0
            #expect(statuses.contains(status), "\(target.prefix(80)): \(answer.prefix(300))")
            #expect(!answer.contains("root:x:"), "\(target.prefix(80))")
            // Refusals of the studio say why in JSON (the HTTP library's own are plain).
            if answer.contains("application/json") {
                #expect(answer.contains("\"error\":"), "\(target.prefix(80)): \(answer.prefix(300))")
            }
        }
        // The server still serves, and the store is as it was.
        #expect(try served.get("/api/summary").status == 200)
        #expect(try served.writer.read { tx in try tx.count(Task.self) } == 20)
    }

    @Test func aThousandConcurrentRequestsAreServedOrRefused() async throws {
        let served = try Served(count: 200)
        let port = served.port
        let cookie = served.cookie
        let targets = ["/api/records?type=Task&limit=100", "/api/summary", "/", "/api/changes", "/nothing"]
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for request in 0..<1_000 {
                group.addTask {
                    let answer =
                        (try? HTTPServerTests.get(
                            targets[request % targets.count], port: port, headers: [cookie]))
                        ?? ""
                    return Int(answer.dropFirst(9).prefix(3)) ?? 0
                }
            }
            var counted: [Int: Int] = [:]
            for try await status in group { counted[status, default: 0] += 1 }
            return counted
        }
        // Each request was answered (200, or 404 for the missing path) or refused at the connection
        // limit (closed: no status); nothing else.
        #expect(Set(statuses.keys).isSubset(of: [200, 404, 0]), "\(statuses)")
        #expect((statuses[200] ?? 0) > 0, "\(statuses)")
        #expect(try served.get("/api/summary").status == 200)
    }

    /// Reads from `socket` until `marker` has arrived (or `seconds` pass); returns what arrived.
    static func read(_ socket: Int32, until marker: String, seconds: Double = 10) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let text = String(decoding: received, as: UTF8.self)
            if text.contains(marker) { return text }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func theEventStreamCarriesCommitsAndTicksAndSaysWhenTheStoreIsGone() throws {
        let served = try Served(count: 3)
        let socket = try HTTPServerTests.connect(port: served.port)
        defer { close(socket) }
        let request = Array(
            "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(served.port)\r\n\(served.cookie)\r\n\r\n".utf8)
        #expect(send(socket, request, request.count, Int32(MSG_NOSIGNAL)) == request.count)
        let hello = Self.read(socket, until: "event: hello")
        #expect(hello.contains("text/event-stream") && hello.contains("retry: 2000"), "\(hello)")
        // A commit of another store instance (as another process's would be) arrives with its changes.
        try served.writer.write { tx in try tx.insert(Task(id: 77, title: "seventy-seven")) }
        let commits = Self.read(socket, until: "\"label\":\"77\"")
        #expect(commits.contains("event: commits") && commits.contains("\"op\":\"insert\""), "\(commits)")
        let tick = Self.read(socket, until: "event: tick")
        #expect(tick.contains("\"fileBytes\":"), "\(tick)")
        // The store's files go: the stream says so and ends.
        try FileManager.default.removeItem(at: served.directory)
        let gone = Self.read(socket, until: "event: failure")
        #expect(gone.contains("is gone: the store was deleted or moved"), "\(gone.suffix(400))")
        // The summary says so too.
        let summary = try served.get("/api/summary")
        #expect(summary.status == 503 && (summary.json["error"] as? String)?.contains("is gone") == true)
    }

    @Test func aDamagedStoreIsServedAsItsPageReport() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-damaged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try Store(at: directory, types: [Task.self])
            try store.write { tx in
                for id in 0..<2_000 {
                    try tx.insert(Task(id: id, title: "task \(id) " + String(repeating: "x", count: 40)))
                }
            }
        }
        // Garbage over a page in the middle of the file.
        let file = directory.appendingPathComponent("data.mdb")
        var bytes = try [UInt8](Data(contentsOf: file))
        let page = bytes.count / 4096 / 2
        for index in page * 4096..<(page + 1) * 4096 { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
        try Data(bytes).write(to: file)
        let report = try Store.checkPages(atPath: directory.path)
        #expect(!report.isClean)
        let server = try StudioServer(damaged: report, path: directory.path)
        defer { server.stop() }
        let cookie = "Cookie: \(StudioAccess.cookieName)=\(server.access.token)"
        for target in ["/api/summary", "/api/records?type=Task", "/api/events"] {
            let answer = try HTTPServerTests.get(target, port: server.access.port, headers: [cookie])
            #expect(
                answer.hasPrefix("HTTP/1.1 503") && answer.contains("data.mdb is damaged"),
                "\(target): \(answer)")
        }
        let check = try HTTPServerTests.get("/api/check", port: server.access.port, headers: [cookie])
        let json = try JSONSerialization.jsonObject(with: Data(Self.body(of: check).utf8)) as? [String: Any]
        #expect(((json?["pages"] as? [String: Any])?["problems"] as? [String])?.isEmpty == false, "\(check)")
        #expect(json?["records"] is NSNull)

        // `lode-dump serve` starts on it, says so, and serves the report.
        let result = try runDump(["serve", directory.path, "--for", "1"])
        #expect(
            result.status == 0 && result.err.contains("data.mdb is damaged; serving its page report only"),
            "\(result.err)")
    }
}

/// Lode Studio's search box: the matches of a full-text search, best first, paged and filtered.
@Suite struct StudioSearchTests {
    struct Note: Persistable {
        var id: Int
        var text: String
        var stars: Int
        static let schema = Schema<Note>(primaryKey: \.id, textIndexes: [.on(\.text)])
    }

    @Test func theRecordsOfASearchComeBestFirst() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-search-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try Store(at: directory, types: [Note.self, StudioServerTests.Task.self])
        try writer.write { tx in
            try tx.insert(Note(id: 1, text: "café once", stars: 1))
            try tx.insert(Note(id: 2, text: "café café café and more words here", stars: 5))
            try tx.insert(Note(id: 3, text: "tea", stars: 3))
            try tx.insert(Note(id: 4, text: "cafe", stars: 2))
            try tx.insert(StudioServerTests.Task(id: 1, title: "no index"))
        }
        let store = try Store(atPath: directory.path, configuration: StoreConfiguration(readOnly: true))
        let server = try StudioServer(store: store, path: directory.path)
        defer { server.stop() }
        let cookie = "Cookie: \(StudioAccess.cookieName)=\(server.access.token)"
        func get(_ target: String) throws -> (status: Int, json: [String: Any]) {
            let answer = try HTTPServerTests.get(target, port: server.access.port, headers: [cookie])
            let json =
                (try? JSONSerialization.jsonObject(with: Data(StudioServerTests.body(of: answer).utf8)))
                as? [String: Any] ?? [:]
            return (Int(answer.dropFirst(9).prefix(3)) ?? 0, json)
        }
        func labels(_ json: [String: Any]) -> [String] {
            (json["rows"] as? [[String: Any]] ?? []).compactMap { $0["label"] as? String }
        }
        let ranked = try get("/api/records?type=Note&match=cafe")
        #expect(ranked.status == 200)
        #expect(labels(ranked.json) == ["4", "2", "1"])
        #expect(
            ranked.json["plan"] as? String
                == "full-text search: 3 matches, 3 kept; ranked by relevance (BM25)")
        // A page at a time; filtered; sorted by a field instead.
        let first = try get("/api/records?type=Note&match=cafe&limit=2")
        #expect(labels(first.json) == ["4", "2"])
        let next = try #require(first.json["next"] as? String)
        #expect(labels(try get("/api/records?type=Note&match=cafe&limit=2&after=\(next)").json) == ["1"])
        #expect(
            labels(try get("/api/records?type=Note&match=cafe&where=stars%20%3C%203").json) == ["4", "1"])
        #expect(labels(try get("/api/records?type=Note&match=cafe&sort=-stars").json) == ["2", "4", "1"])
        // A malformed query, a type without an index: 400 with the reason.
        let bad = try get("/api/records?type=Note&match=%22open")
        #expect(bad.status == 400)
        #expect((bad.json["error"] as? String)?.contains("the quote is not closed") == true)
        let none = try get("/api/records?type=Task&match=index")
        #expect(none.status == 400)
        #expect((none.json["error"] as? String)?.contains("no full-text index") == true)
    }
}
