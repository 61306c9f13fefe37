import Foundation
import Lode
import LodeCodec
import LodeStudio
import StoredQuery

#if canImport(Glibc)
    import Glibc
#endif

/// Lode Studio over a large store: a page of a type's table as the browser asks for it (an HTTP
/// request to the real server, answered with JSON), from cursors spread over the whole type, in
/// key order, in an index's order and filtered by an index; SQLite's keyset page of the same rows
/// (no HTTP, no JSON) beside it. Then the server's memory while a browser scrolls page after page.
extension Workloads {
    static func studio(_ settings: Settings) throws -> [Figure] {
        let fixture = try Fixture(count: settings.size(1_000_000))
        let count = fixture.rows.count
        let server = try StudioServer(store: fixture.store, path: fixture.scratch.path("lode"))
        defer { server.stop() }
        let client = StudioClient(port: server.access.port, token: server.access.token)
        var rng = Generator(30)
        let starts = (0..<Swift.max(settings.runs * 10, 10)).map { _ in Int.random(in: 0..<count, using: &rng)
        }
        let keys = KeyEncoder()

        /// The seconds of each page request of `query` from each start (one request each).
        func pages(_ query: String, cursor: (Int) throws -> String) throws -> [Double] {
            let clock = ContinuousClock()
            return try starts.map { start in
                let target = "/api/records?type=Row&limit=50&\(query)&after=\(try cursor(start))"
                var answer = ""
                let elapsed = try clock.measure { answer = try client.get(target) }
                guard answer.hasPrefix("HTTP/1.1 200"), answer.contains("\"rows\":[{") else {
                    throw BenchError.failed("studio: \(target) answered \(answer.prefix(300))")
                }
                return Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds)
            }
        }
        let keyOrder = try pages("") { PageCursor(key: try keys.encode($0)).token }
        let indexOrder = try pages("sort=score") { start in
            PageCursor(key: try keys.encode(start), sortValues: [.unsigned(UInt64(start % 1000))]).token
        }
        let filtered = try pages("where=score%20%3E%3D%20500") { PageCursor(key: try keys.encode($0)).token }
        let clock = ContinuousClock()
        // One page in an order no index gives: every record is read once.
        var unindexed = ""
        let sortedElapsed = try clock.measure {
            unindexed = try client.get("/api/records?type=Row&limit=50&sort=-name")
        }
        guard unindexed.hasPrefix("HTTP/1.1 200") else {
            throw BenchError.failed("studio: sort=-name answered \(unindexed.prefix(300))")
        }
        let sqlite = try starts.map { start in
            let elapsed = try clock.measure { _ = try fixture.sqlite.page(after: start, limit: 50) }
            return Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds)
        }

        // A browser scrolling: page after page from the first, each from the cursor of the one before.
        let scrolled = Swift.min(count / 50, 2_000)
        var after = ""
        let before = residentBytes()
        var peak = before
        for page in 0..<scrolled {
            let answer = try client.get("/api/records?type=Row&limit=50&after=\(after)")
            guard let range = answer.range(of: "\"next\":\""),
                let end = answer[range.upperBound...].firstIndex(of: "\"")
            else { break }
            after = String(answer[range.upperBound..<end])
            if page % 100 == 0 { peak = Swift.max(peak, residentBytes()) }
        }
        peak = Swift.max(peak, residentBytes())
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        let sqliteTiming = Timing(
            system: "SQLite keyset page (no HTTP, no JSON)", runs: sqlite, operations: 1)
        return [
            Figure(
                workload: "Lode Studio: a page of 50 in key order from anywhere (HTTP + JSON)", size: count,
                timings: [Timing(system: "Lode Studio", runs: keyOrder, operations: 1), sqliteTiming],
                notes: [
                    "p99 \(format(Timing(system: "", runs: keyOrder, operations: 1).percentile(99))) over \(starts.count) pages"
                ]),
            Figure(
                workload: "Lode Studio: a page of 50 in the order of an index (sort=score)", size: count,
                timings: [Timing(system: "Lode Studio", runs: indexOrder, operations: 1), sqliteTiming]),
            Figure(
                workload: "Lode Studio: a page of 50 filtered by an index (score >= 500)", size: count,
                timings: [Timing(system: "Lode Studio", runs: filtered, operations: 1), sqliteTiming],
                notes: [
                    "a page in an order no index gives (sort=-name, every record read): \(format(Double(sortedElapsed.components.attoseconds) / 1e18 + Double(sortedElapsed.components.seconds)))",
                    "the server's memory while scrolling \(scrolled) pages: \(mib(before)) before, \(mib(peak)) at most",
                ]),
        ]
    }
}

/// An HTTP/1.1 client of one request per connection, with the studio's token in a cookie.
struct StudioClient {
    var port: UInt16
    var token: String

    /// The whole answer (status line, headers and body) to `GET target`.
    func get(_ target: String) throws -> String {
        let socket = try HTTPServer.connectedSocket(port: port)
        defer { close(socket) }
        let request = Array(
            ("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(StudioAccess.cookieName)=\(token)\r\n"
                + "Connection: close\r\n\r\n").utf8)
        guard send(socket, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw BenchError.failed("send: \(errno)")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let read = recv(socket, &buffer, buffer.count, 0)
            if read <= 0 { break }
            received += buffer[0..<read]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
