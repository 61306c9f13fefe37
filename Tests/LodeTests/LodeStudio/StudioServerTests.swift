import Foundation
import Lode
import Testing

@testable import LodeStudio

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
}
