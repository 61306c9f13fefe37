import Foundation

/// Who may talk to Lode Studio: a request must name the loopback address it was sent to (a `Host` of
/// `127.0.0.1:PORT` or `localhost:PORT`, so a page of another site whose name was rebound to
/// 127.0.0.1 is refused) and carry the access token printed with the URL, in the query (`?token=`,
/// the first visit) or in the cookie the first visit sets.
package struct StudioAccess: Sendable {
    /// The name of the cookie that carries the token after the first visit.
    package static let cookieName = "lode_studio_token"

    /// The random token (32 hex digits).
    package let token: String
    /// The port the server listens on.
    package let port: UInt16

    /// Access for a server on `port`, with `token` (a fresh random one by default).
    package init(port: UInt16, token: String = StudioAccess.randomToken()) {
        self.port = port
        self.token = token
    }

    /// A token of 128 random bits, as hex.
    package static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// The URL to open.
    package var url: String { "http://127.0.0.1:\(port)/?token=\(token)" }

    /// What a request may not do: nil when it is allowed, else the refusal to send.
    package func refusal(of request: HTTPRequest) -> HTTPResponse? {
        let host = request.headers["host"] ?? ""
        guard host == "127.0.0.1:\(port)" || host == "localhost:\(port)" else {
            return .text("refused: the Host header must be 127.0.0.1:\(port)\n", status: 421)
        }
        guard let offered = offeredToken(request), Self.same(offered, token) else {
            return .text(
                "refused: open the URL lode-dump printed (it carries the access token)\n", status: 403)
        }
        return nil
    }

    /// The header that keeps the token for the next requests of a first visit.
    package var cookieHeader: (String, String) {
        ("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict")
    }

    /// The token a request offers: the query's, else the cookie's.
    private func offeredToken(_ request: HTTPRequest) -> String? {
        if let query = request.query["token"] { return query }
        guard let cookies = request.headers["cookie"] else { return nil }
        for part in cookies.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if pair.count == 2, pair[0] == Self.cookieName { return pair[1] }
        }
        return nil
    }

    /// Compares in time independent of where the strings differ.
    private static func same(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
