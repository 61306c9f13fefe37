import Foundation
import Lode
import LodeCodec
import LodeInspection
import Synchronization

/// Lode Studio's server: the pages and the JSON behind them for one store, on the loopback address,
/// for the holder of the token in ``url``. It only reads: nothing it serves changes the store.
package final class StudioServer: Sendable {
    /// Who may talk to the server.
    package let access: StudioAccess
    private let server: HTTPServer

    /// Serves `store` (opened read-only by the caller), found at `path`, on `127.0.0.1:port` (0: a port
    /// the system picks).
    ///
    /// - Throws: ``HTTPServerError`` when the server cannot listen.
    package convenience init(
        store: Store, path: String, port: UInt16 = 0, token: String = StudioAccess.randomToken()
    ) throws {
        try self.init(source: .store(store), path: path, port: port, token: token)
    }

    /// Serves what can be shown of a store whose file failed the page check (`report`): the pages say
    /// it is damaged and the check page lists each damaged page; nothing reads its records.
    ///
    /// - Throws: ``HTTPServerError`` when the server cannot listen.
    package convenience init(
        damaged report: PageReport, path: String, port: UInt16 = 0, token: String = StudioAccess.randomToken()
    ) throws {
        try self.init(source: .damaged(report), path: path, port: port, token: token)
    }

    private init(source: Source, path: String, port: UInt16, token: String) throws {
        // Studio reads stores without their types: their full-text indexes are described and
        // checked through the full-text module's inspector.
        TextIndexInspector.register()
        // The handler needs the port, known once the server listens.
        let granted = Mutex<StudioAccess?>(nil)
        server = try HTTPServer(port: port) { request in
            guard let access = granted.withLock({ $0 }) else {
                return .text("starting\n", status: 503)
            }
            return Self.respond(to: request, access: access, source: source, path: path)
        }
        access = StudioAccess(port: server.port, token: token)
        granted.withLock { $0 = access }
    }

    /// What is served: a store, or the page report of a file too damaged to open.
    private enum Source: Sendable {
        case store(Store)
        case damaged(PageReport)
    }

    /// Why a damaged store's records are not shown.
    struct Damaged: Error, CustomStringConvertible {
        var report: PageReport
        var description: String {
            let count = "\(report.problems.count)\(report.truncated ? "+" : "")"
            return
                "data.mdb is damaged (\(count) page \(report.problems.count == 1 ? "problem" : "problems"), "
                + "the first: \(report.problems.first ?? "?")); its records are not read: the Check page lists what is damaged"
        }
    }

    /// The URL to open, with the token.
    package var url: String { access.url }

    /// Stops serving (open streams end first).
    package func stop() { server.stop() }

    /// Headers every response carries: no caching, no framing by other sites, no content sniffing,
    /// scripts and styles from this server only.
    static let safetyHeaders: [(String, String)] = [
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"),
    ]

    private static func respond(to request: HTTPRequest, access: StudioAccess, source: Source, path: String)
        -> HTTPResponse
    {
        var response: HTTPResponse
        /// The store, or the error that says it is damaged.
        func store() throws -> Store {
            switch source {
            case .store(let store): return store
            case .damaged(let report): throw Damaged(report: report)
            }
        }
        if let refusal = access.refusal(of: request) {
            response = refusal
        } else {
            switch request.path {
            case "/", "/type", "/object", "/schema", "/changes", "/check":
                let page = request.path == "/" ? "summary" : String(request.path.dropFirst())
                response = Self.resource("text/html; charset=utf-8") { try StudioPages.page(page) }
                // The first visit carries the token in the URL: later requests carry it in the cookie.
                if request.query["token"] != nil { response.headers.append(access.cookieHeader) }
            case "/static/studio.js":
                response = Self.resource("text/javascript; charset=utf-8") {
                    try StudioPages.resource("studio.js")
                }
            case "/static/studio.css":
                response = Self.resource("text/css; charset=utf-8") { try StudioPages.resource("studio.css") }
            case "/api/summary":
                response = json { try StoreSummary.read(try store(), path: path) }
            case "/api/records":
                response = built { try StudioAPI.records(try store(), query: request.query) }
            case "/api/object":
                response = built { try StudioAPI.object(try store(), query: request.query) }
            case "/api/changes":
                response = built { try StudioAPI.changes(try store(), query: request.query) }
            case "/api/check":
                response = built {
                    switch source {
                    case .store(let store): return try StudioAPI.check(store, path: path)
                    case .damaged(let report): return StudioAPI.check(pages: report, records: nil)
                    }
                }
            case "/api/events":
                do {
                    let events = try StudioEvents(store: try store(), path: path)
                    response = HTTPResponse(
                        status: 200, headers: [("Content-Type", "text/event-stream")],
                        body: .stream { events.next() })
                } catch {
                    response = failure(error)
                }
            default:
                response = .text("not found: \(request.path)\n", status: 404)
            }
        }
        response.headers += safetyHeaders
        return response
    }

    /// `value` as JSON, or the error that kept it from being read, as JSON with status 503.
    /// A page, script or style sheet from the resources; a 500 naming the file when it cannot be read
    /// (a tool copied without its resource bundle).
    private static func resource(
        _ contentType: String, _ text: () throws -> String
    ) -> HTTPResponse {
        do {
            return .text(try text(), contentType: contentType)
        } catch {
            return .text("\(error)\n", status: 500)
        }
    }

    private static func json(_ value: () throws -> some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json")],
                body: .bytes(Array(try encoder.encode(value()))))
        } catch {
            return failure(error)
        }
    }

    /// `value` (a JSON value built as CBOR) as JSON, or the error that kept it from being read.
    private static func built(_ value: () throws -> CBORValue) -> HTTPResponse {
        do {
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json")],
                body: .bytes(Array(try value().json.utf8)))
        } catch {
            return failure(error)
        }
    }

    /// An error as JSON: a refusal with its own status (400, 404), anything else (the store cannot be
    /// read: closed, damaged, gone) with 503.
    private static func failure(_ error: any Error) -> HTTPResponse {
        let status = (error as? StudioRefusal)?.status ?? 503
        return HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")],
            body: .bytes(Array("{\"error\":\(CBORValue.quoted("\(error)"))}".utf8)))
    }
}
