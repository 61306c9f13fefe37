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

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `chromium`, headless, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: the browser reads commands on its descriptor 3 and writes answers on
/// its descriptor 4, each message JSON ended by a zero byte). Tests open pages, wait for what the
/// page's script renders, click, and take screenshots, as a user's browser would.
final class HeadlessChromium {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: pid_t
    private let commands: Int32
    private let answers: Int32
    private let profile: URL
    private var received: [UInt8] = []
    private var lastID = 0
    private var session: String?

    static var executable: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Starts a browser with a profile of its own (removed by ``close()``).
    init() throws {
        let chromium = try #require(Self.executable, "chromium is not installed: make deps installs it")
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("studio-chromium-\(UUID())")
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else {
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec: other processes the tests start must not hold the browser's pipes open.
        for descriptor in toBrowser + fromBrowser { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies: the browser keeps 3 and 4 and nothing else of ours.
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--remote-debugging-pipe", "--no-first-run", "--user-data-dir=\(profile.path)",
            "--window-size=1280,900", "about:blank",
        ]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, chromium, &actions, nil, &argv, environ)
        close(toBrowser[0])
        close(fromBrowser[1])
        guard spawned == 0 else {
            close(toBrowser[1])
            close(fromBrowser[0])
            throw Failure(description: "posix_spawn chromium: \(String(cString: strerror(spawned)))")
        }
        process = pid
        commands = toBrowser[1]
        answers = fromBrowser[0]
    }

    /// Sends `method` and waits (up to `timeout` seconds) for its answer's `result`.
    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], toPage: Bool = true, timeout: Double = 20)
        throws -> [String: Any]
    {
        lastID += 1
        var message: [String: Any] = ["id": lastID, "method": method, "params": params]
        if toPage, let session { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "the browser stopped reading (\(method))") }
            written += count
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let answer = try nextMessage(until: deadline, waitingFor: method)
            guard answer["id"] as? Int == lastID else { continue }  // an event, or an older answer
            if let error = answer["error"] as? [String: Any] {
                throw Failure(description: "\(method): \(error["message"] ?? error)")
            }
            return answer["result"] as? [String: Any] ?? [:]
        }
    }

    private func nextMessage(until deadline: Date, waitingFor method: String) throws -> [String: Any] {
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Array(received[..<end])
                received.removeSubrange(...end)
                return try JSONSerialization.jsonObject(with: Data(message)) as? [String: Any] ?? [:]
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "no answer to \(method) in time") }
            var descriptor = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(answers, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "the browser closed its pipe (\(method))") }
            received += chunk[..<count]
        }
    }

    /// Opens `url` in a new tab, which later calls address.
    func open(_ url: String) throws {
        let target = try send("Target.createTarget", ["url": url], toPage: false)
        let targetID = try #require(target["targetId"] as? String)
        let attached = try send(
            "Target.attachToTarget", ["targetId": targetID, "flatten": true], toPage: false)
        session = try #require(attached["sessionId"] as? String)
    }

    /// Navigates the current tab to `url`.
    func navigate(_ url: String) throws {
        try send("Page.navigate", ["url": url])
    }

    /// Evaluates `expression` in the page and returns its value (JSON-like: strings, numbers, Booleans,
    /// arrays, dictionaries, or nil).
    @discardableResult
    func evaluate(_ expression: String) throws -> Any? {
        let result = try send(
            "Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let thrown = result["exceptionDetails"] as? [String: Any] {
            throw Failure(description: "\(expression): \(thrown["text"] ?? thrown)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Waits until `expression` is truthy in the page (checked every 20 ms) and returns its value and
    /// the seconds it took; fails after `timeout` seconds with what the page showed.
    @discardableResult
    func waitFor(_ expression: String, timeout: Double = 15) throws -> (value: Any, seconds: Double) {
        let start = Date()
        while true {
            // The page may be between documents while it navigates: try again.
            let value = try? evaluate(expression)
            if let value, !(value is NSNull), (value as? Bool) != false, (value as? String) != "" {
                return (value, Date().timeIntervalSince(start))
            }
            if Date().timeIntervalSince(start) > timeout {
                let shown = (try? evaluate("document.body ? document.body.innerText : ''")) as? String ?? ""
                throw Failure(
                    description:
                        "waited \(timeout) s for \(expression); the page shows: \(shown.prefix(2000))")
            }
            usleep(20_000)
        }
    }

    /// Saves a PNG of the tab's viewport at `file`.
    func screenshot(_ file: URL) throws {
        let shot = try send("Page.captureScreenshot", ["format": "png"])
        let data = try #require((shot["data"] as? String).flatMap { Data(base64Encoded: $0) })
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
    }

    /// Closes the browser (killing it if it does not go within five seconds) and removes its profile.
    func quit() {
        _ = try? send("Browser.close", toPage: false, timeout: 5)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(5)
        while waitpid(process, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(process, SIGKILL)
                waitpid(process, &status, 0)
                break
            }
            usleep(20_000)
        }
        Glibc.close(commands)
        Glibc.close(answers)
        try? FileManager.default.removeItem(at: profile)
    }

    /// Where screenshots of the studio are kept: `.build/studio-screenshots`.
    static var screenshots: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../.build/studio-screenshots").standardizedFileURL
    }
}
