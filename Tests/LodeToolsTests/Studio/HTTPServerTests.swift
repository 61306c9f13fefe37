import Foundation
import Lode
import ModelStorage
import StoredQuery
import Synchronization
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

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP layer of Lode Studio, driven over real loopback sockets: requests reach the handler with
/// their path, query and headers; bodies arrive whole or streamed; other methods, floods of
/// connections and clients that vanish are answered or refused without harm.
@Suite struct HTTPServerTests {
    /// A raw HTTP/1.1 exchange: sends `request` as written and reads until the server closes.
    static func exchange(port: UInt16, _ request: String, timeout: Int32 = 5, stopAfter: Int = .max) throws
        -> String
    {
        let socket = try connect(port: port)
        defer { close(socket) }
        var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        guard send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw HTTPServerError(description: "send")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
            if received.count >= stopAfter { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// A socket connected to `127.0.0.1:port`.
    static func connect(port: UInt16) throws -> Int32 { try HTTPServer.connectedSocket(port: port) }

    static func get(_ target: String, port: UInt16, headers: [String] = []) throws -> String {
        try exchange(
            port: port,
            (["GET \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"] + headers)
                .joined(separator: "\r\n") + "\r\n\r\n")
    }

    @Test func requestsReachTheHandlerWithPathQueryAndHeaders() throws {
        let seen = Mutex<[HTTPRequest]>([])
        let server = try HTTPServer { request in
            seen.withLock { $0.append(request) }
            return .text("path=\(request.path) q=\(request.query["q"] ?? "-")\n")
        }
        defer { server.stop() }
        #expect(server.port != 0)
        let answer = try Self.get(
            "/types/Task%20List?q=a%20b&n=2", port: server.port, headers: ["X-Token: t1"])
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.contains("Content-Type: text/plain; charset=utf-8"))
        #expect(answer.hasSuffix("path=/types/Task List q=a b\n"), "\(answer)")
        let request = try #require(seen.withLock { $0.first })
        #expect(request.method == "GET")
        #expect(request.query == ["q": "a b", "n": "2"])
        #expect(request.headers["x-token"] == "t1")
        #expect(request.headers["host"] == "127.0.0.1:\(server.port)")
    }

    @Test func otherMethodsAreRefusedWithoutReachingTheHandler() throws {
        let calls = Atomic<Int>(0)
        let server = try HTTPServer { _ in
            calls.add(1, ordering: .relaxed)
            return .text("ok")
        }
        defer { server.stop() }
        let answer = try Self.exchange(
            port: server.port,
            "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        #expect(answer.hasPrefix("HTTP/1.1 405"), "\(answer)")
        #expect(answer.contains("Allow: GET, HEAD"))
        #expect(calls.load(ordering: .relaxed) == 0)
        // A request that is not HTTP is answered by the library, not by a crash.
        let garbage = try Self.exchange(port: server.port, "\u{1}\u{2}NOT HTTP\r\n\r\n")
        #expect(garbage.isEmpty || garbage.hasPrefix("HTTP/1.1 4"), "\(garbage)")
        #expect(try Self.get("/", port: server.port).hasSuffix("ok"))
    }

    @Test func streamedBodiesArriveChunkByChunkUntilTheirEnd() throws {
        let server = try HTTPServer { request in
            let left = Mutex(3)
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/event-stream")],
                body: .stream {
                    left.withLock { left -> [UInt8]? in
                        guard left > 0 else { return nil }
                        left -= 1
                        return Array("data: event \(3 - left)\n\n".utf8)
                    }
                })
        }
        defer { server.stop() }
        let answer = try Self.get("/events", port: server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.contains("Transfer-Encoding: chunked"))
        for index in 1...3 { #expect(answer.contains("data: event \(index)\n\n")) }
    }

    /// A client that goes away in the middle of an endless stream (a browser tab closed on the live
    /// page): the server stops pulling from it, releases it, and stops without waiting on it.
    /// What a stream's source did: how often it was pulled, and whether it was released.
    final class StreamWitness: Sendable {
        let pulled = Atomic<Int>(0)
        let released = Atomic<Bool>(false)
    }

    /// A stream's source that tells its witness when it is released.
    final class WitnessedSource: Sendable {
        let witness: StreamWitness
        init(_ witness: StreamWitness) { self.witness = witness }
        deinit { witness.released.store(true, ordering: .relaxed) }
    }

    @Test func aStreamWhoseClientVanishesIsReleased() throws {
        let witness = StreamWitness()
        let server = try HTTPServer { _ in
            let source = WitnessedSource(witness)
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/event-stream")],
                body: .stream {
                    source.witness.pulled.add(1, ordering: .relaxed)
                    usleep(10_000)
                    return Array("data: tick\n\n".utf8)
                })
        }
        // The client reads a little, then closes its socket.
        let partial = try Self.exchange(
            port: server.port, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", stopAfter: 400)
        #expect(partial.contains("data: tick"))
        let deadline = Date().addingTimeInterval(10)
        while !witness.released.load(ordering: .relaxed) && Date() < deadline { usleep(10_000) }
        let released = witness.released.load(ordering: .relaxed)
        #expect(released, "the stream of a closed connection was not released")
        let afterRelease = witness.pulled.load(ordering: .relaxed)
        usleep(100_000)
        let later = witness.pulled.load(ordering: .relaxed)
        #expect(later == afterRelease)
        server.stop()
    }

    @Test func aFloodOfConnectionsIsServedOrRefusedAndTheServerGoesOn() async throws {
        let server = try HTTPServer(connectionLimit: 16) { _ in
            usleep(2_000)
            return .text("served")
        }
        defer { server.stop() }
        let port = server.port
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 {
                group.addTask { ((try? Self.get("/", port: port)) ?? "").hasSuffix("served") }
            }
            var served = 0
            for try await ok in group where ok { served += 1 }
            return served
        }
        #expect(outcomes > 0)
        // After the flood, the server still answers.
        #expect(try Self.get("/", port: port).hasSuffix("served"))
    }

    @Test func stoppingEndsListening() throws {
        let server = try HTTPServer { _ in .text("ok") }
        let port = server.port
        #expect(try Self.get("/", port: port).hasSuffix("ok"))
        server.stop()
        server.stop()  // a second stop does nothing
        #expect(throws: HTTPServerError.self) { try Self.get("/", port: port) }
    }
}

/// Who may talk to Lode Studio: the loopback `Host` and the token, by query or cookie.
@Suite struct StudioAccessTests {
    func request(host: String?, query: [String: String] = [:], cookie: String? = nil) -> HTTPRequest {
        var headers: [String: String] = [:]
        if let host { headers["host"] = host }
        if let cookie { headers["cookie"] = cookie }
        return HTTPRequest(method: "GET", path: "/", query: query, headers: headers)
    }

    @Test func theTokenAndALoopbackHostAreBothRequired() {
        let access = StudioAccess(port: 8123, token: "0123456789abcdef0123456789abcdef")
        let token = ["token": access.token]
        #expect(access.refusal(of: request(host: "127.0.0.1:8123", query: token)) == nil)
        #expect(access.refusal(of: request(host: "localhost:8123", query: token)) == nil)
        #expect(
            access.refusal(
                of: request(host: "127.0.0.1:8123", cookie: "a=b; \(StudioAccess.cookieName)=\(access.token)")
            )
                == nil)
        // Missing or wrong token.
        #expect(access.refusal(of: request(host: "127.0.0.1:8123"))?.status == 403)
        #expect(access.refusal(of: request(host: "127.0.0.1:8123", query: ["token": "0"]))?.status == 403)
        #expect(
            access.refusal(of: request(host: "127.0.0.1:8123", query: ["token": access.token + "0"]))?.status
                == 403)
        #expect(
            access.refusal(of: request(host: "127.0.0.1:8123", cookie: "\(StudioAccess.cookieName)=nope"))?
                .status == 403)
        // A foreign Host (DNS rebinding), another port, or none: refused even with the token.
        #expect(access.refusal(of: request(host: "evil.example:8123", query: token))?.status == 421)
        #expect(access.refusal(of: request(host: "127.0.0.1:9999", query: token))?.status == 421)
        #expect(access.refusal(of: request(host: nil, query: token))?.status == 421)
        #expect(access.url == "http://127.0.0.1:8123/?token=\(access.token)")
    }

    @Test func tokensAreRandomAndLong() {
        let tokens = Set((0..<100).map { _ in StudioAccess.randomToken() })
        #expect(tokens.count == 100)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
