import Foundation
import Lode
import Testing

@testable import LodeStudio

/// Lode Studio as a user sees it: headless Chromium (Debian's `chromium`, as the documentation check
/// uses) opens the printed URL, runs the page's script, and the rendered DOM shows the store's types
/// and counts. Screenshots are kept under `.build/studio-screenshots`.
@Suite struct StudioBrowserTests {
    struct Task: Persistable {
        var id: Int
        var title: String
        static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.title)])
    }

    struct Project: Persistable {
        var id: String
        static let schema = Schema<Project>(primaryKey: \.id)
    }

    static var chromium: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Runs headless Chromium with `arguments` and returns what it printed.
    static func browse(_ arguments: [String]) throws -> String {
        let chromium = try #require(Self.chromium, "chromium is not installed: make deps installs it")
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-chromium-\(UUID())")
        defer { try? FileManager.default.removeItem(at: profile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromium)
        process.arguments =
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--user-data-dir=\(profile.path)", "--virtual-time-budget=5000",
            ] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func theSummaryPageShowsTheTypesAndTheirCounts() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-browser-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try Store(at: directory, types: [Task.self, Project.self])
        try writer.write { tx in
            for id in 0..<37 { try tx.insert(Task(id: id, title: "<b>task \(id)</b>")) }
            try tx.insert(Project(id: "<img src=x onerror=alert(1)>"))
        }
        let store = try Store(atPath: directory.path, configuration: StoreConfiguration(readOnly: true))
        let server = try StudioServer(store: store, path: directory.path)
        defer { server.stop() }

        let dom = try Self.browse(["--dump-dom", server.url])
        #expect(dom.contains("<title>Lode Studio</title>"), "\(dom)")
        #expect(dom.contains(#"<tr data-type="Task"><td>Task</td><td>37</td><td>id</td>"#), "\(dom)")
        #expect(dom.contains(#"<tr data-type="Project"><td>Project</td><td>1</td>"#), "\(dom)")
        #expect(dom.contains("Version "), "the script did not run: \(dom)")
        #expect(dom.contains(directory.path))
        // Nothing from the store became markup.
        #expect(!dom.contains("<img src=x"))

        // Without the token the page is refused, and nothing of the store shows.
        let refused = try Self.browse(["--dump-dom", "http://127.0.0.1:\(server.access.port)/"])
        #expect(refused.contains("refused") && !refused.contains("Task"), "\(refused)")

        let screenshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../.build/studio-screenshots").standardizedFileURL
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        let shot = screenshots.appendingPathComponent("summary.png")
        _ = try Self.browse(["--window-size=1280,800", "--screenshot=\(shot.path)", server.url])
        #expect(FileManager.default.fileExists(atPath: shot.path))
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
