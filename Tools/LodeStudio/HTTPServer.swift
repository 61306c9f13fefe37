import CMicroHTTPD
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A request as ``HTTPServer`` hands it to its handler.
package struct HTTPRequest: Sendable {
    /// `GET` or `HEAD` (the server answers other methods itself, with 405).
    package var method: String
    /// The path, percent-decoded by the HTTP library, without the query.
    package var path: String
    /// The query's arguments, decoded (the last one wins for a repeated name).
    package var query: [String: String]
    /// The request's headers, by lowercased name.
    package var headers: [String: String]
}

/// What a response carries: bytes, or a stream the server pulls from as the client reads.
package enum HTTPBody: Sendable {
    /// The whole body.
    case bytes([UInt8])
    /// A body of unknown length: `next` is called on the connection's thread for each chunk and may
    /// block until there is one; it returns nil at the end (and is not called again).
    case stream(@Sendable () -> [UInt8]?)
}

/// A response of ``HTTPServer``'s handler.
package struct HTTPResponse: Sendable {
    /// The status code.
    package var status: Int
    /// Headers to send, in order.
    package var headers: [(String, String)]
    /// The body.
    package var body: HTTPBody

    /// A response of `status` with `body`.
    package init(status: Int, headers: [(String, String)] = [], body: HTTPBody) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A text response (`text/plain; charset=utf-8` unless `contentType` says otherwise).
    package static func text(
        _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }
}

/// Why ``HTTPServer`` could not start.
package struct HTTPServerError: Error, CustomStringConvertible {
    /// What failed, with the system's reason.
    package var description: String
}

/// An HTTP server on the loopback address, over libmicrohttpd (Debian's `libmicrohttpd-dev`): a thread
/// per connection, at most `connectionLimit` connections at once (more are refused by the library),
/// each idle connection closed after `idleTimeout` seconds. Only `GET` and `HEAD` reach the handler.
///
/// The handler runs on the connection's thread, with no lock of the server held.
package final class HTTPServer: Sendable {
    /// The port the server listens on (the one asked for, or the one the system chose for 0).
    package let port: UInt16
    // The daemon and the handler box are set once and read only on `stop()` and by callbacks.
    private let daemon: Mutex<OpaquePointer?>
    private let context: Unmanaged<HandlerBox>

    /// Starts listening on `127.0.0.1:port` (0: a free port the system picks).
    ///
    /// - Throws: ``HTTPServerError`` when the socket cannot be bound or the library does not start.
    package init(
        port: UInt16 = 0, connectionLimit: Int = 64, idleTimeout: Int = 30,
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) throws {
        let socket = try Self.listeningSocket(port: port)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else {
            close(socket)
            throw HTTPServerError(description: "getsockname: \(String(cString: strerror(errno)))")
        }
        self.port = UInt16(bigEndian: address.sin_port)
        let box = Unmanaged.passRetained(HandlerBox(handler))
        context = box
        let flags = UInt32(MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue)
        let started = withVaList([
            Int32(MHD_OPTION.LISTEN_SOCKET.rawValue), socket,
            Int32(MHD_OPTION.CONNECTION_LIMIT.rawValue), UInt32(connectionLimit),
            Int32(MHD_OPTION.CONNECTION_TIMEOUT.rawValue), UInt32(idleTimeout),
            Int32(MHD_OPTION.END.rawValue),
        ]) { options in
            MHD_start_daemon_va(flags, 0, nil, nil, answer, box.toOpaque(), options)
        }
        guard let started else {
            close(socket)
            box.release()
            throw HTTPServerError(description: "libmicrohttpd did not start on 127.0.0.1:\(self.port)")
        }
        daemon = Mutex(started)
    }

    /// Stops listening and waits for the connections' threads to end (a stream's `next` must return).
    package func stop() {
        guard
            let running = daemon.withLock({ daemon -> OpaquePointer? in
                defer { daemon = nil }
                return daemon
            })
        else { return }
        MHD_stop_daemon(running)
        context.release()
    }

    deinit { stop() }

    private static func listeningSocket(port: UInt16) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else {
            throw HTTPServerError(description: "socket: \(String(cString: strerror(errno)))")
        }
        var reuse: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        let bound = withLoopbackAddress(port: port) { bind(socket, $0, $1) }
        guard bound == 0, listen(socket, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw HTTPServerError(description: "cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        return socket
    }

    /// Calls `body` with the address `127.0.0.1:port` and its length.
    private static func withLoopbackAddress<R>(
        port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) -> R {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(INADDR_LOOPBACK).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// A socket connected to a server on `127.0.0.1:port`, for clients of one (the tests, the
    /// benchmark); the caller closes it.
    ///
    /// - Throws: ``HTTPServerError`` when the socket cannot be made or does not connect.
    package static func connectedSocket(port: UInt16) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else {
            throw HTTPServerError(description: "socket: \(String(cString: strerror(errno)))")
        }
        guard withLoopbackAddress(port: port, { Glibc.connect(socket, $0, $1) }) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw HTTPServerError(description: "cannot connect to 127.0.0.1:\(port): \(reason)")
        }
        return socket
    }
}

/// The handler, kept alive for the daemon's callbacks.
private final class HandlerBox: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    init(_ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) { self.handler = handler }
}

/// A streamed body's source and the bytes of its current chunk not yet handed to the library.
private final class StreamBox {
    let next: @Sendable () -> [UInt8]?
    var pending: [UInt8] = []
    var offset = 0
    init(_ next: @escaping @Sendable () -> [UInt8]?) { self.next = next }
}

/// Collects a connection's values of one kind (headers or query arguments).
private final class ValuesBox {
    var values: [String: String] = [:]
    let lowercased: Bool
    init(lowercased: Bool) { self.lowercased = lowercased }
}

private func values(
    of connection: OpaquePointer, kind: MHD_ValueKind, lowercased: Bool
) -> [String: String] {
    let box = ValuesBox(lowercased: lowercased)
    let unmanaged = Unmanaged.passUnretained(box)
    _ = MHD_get_connection_values(
        connection, kind,
        { context, _, key, value in
            guard let context, let key else { return .YES }
            let box = Unmanaged<ValuesBox>.fromOpaque(context).takeUnretainedValue()
            let name = String(cString: key)
            box.values[box.lowercased ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
            return .YES
        }, unmanaged.toOpaque())
    return box.values
}

/// The daemon's access handler: answers a request on its second call (the first only marks it, as
/// the library expects for requests that may carry a body).
private let answer: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, _, uploadSize, requestState in
    guard let context, let connection, let url, let method, let requestState else { return .NO }
    if requestState.pointee == nil {
        // The first call for this request: headers are in; answer on the next.
        requestState.pointee = UnsafeMutableRawPointer(bitPattern: 1)
        return .YES
    }
    if let uploadSize, uploadSize.pointee != 0 {
        // A body is not read: this server takes no uploads.
        uploadSize.pointee = 0
        return .YES
    }
    let methodName = String(cString: method)
    let response: HTTPResponse
    if methodName == "GET" || methodName == "HEAD" {
        let handler = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue().handler
        response = handler(
            HTTPRequest(
                method: methodName, path: String(cString: url),
                query: values(of: connection, kind: .GET_ARGUMENT_KIND, lowercased: false),
                headers: values(of: connection, kind: .HEADER_KIND, lowercased: true)))
    } else {
        response = HTTPResponse(
            status: 405, headers: [("Allow", "GET, HEAD"), ("Content-Type", "text/plain; charset=utf-8")],
            body: .bytes(Array("only GET and HEAD\n".utf8)))
    }
    return queue(response, on: connection)
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    let made: OpaquePointer?
    switch response.body {
    case .bytes(let bytes):
        made = bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .stream(let next):
        let box = Unmanaged.passRetained(StreamBox(next))
        made = MHD_create_response_from_callback(
            cmhd_size_unknown, 16 * 1024,
            { context, _, buffer, capacity in
                guard let context, let buffer else { return cmhd_end_with_error }
                let box = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue()
                while box.offset == box.pending.count {
                    guard let chunk = box.next() else { return cmhd_end_of_stream }
                    box.pending = chunk
                    box.offset = 0
                }
                let count = min(capacity, box.pending.count - box.offset)
                box.pending.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(buffer).copyMemory(
                        from: bytes.baseAddress! + box.offset, byteCount: count)
                }
                box.offset += count
                return count
            }, box.toOpaque(),
            { context in
                guard let context else { return }
                Unmanaged<StreamBox>.fromOpaque(context).release()
            })
        if made == nil { box.release() }
    }
    guard let made else { return .NO }
    defer { MHD_destroy_response(made) }
    for (name, value) in response.headers {
        _ = MHD_add_response_header(made, name, value)
    }
    return MHD_queue_response(connection, UInt32(response.status), made)
}
