import Foundation
import Testing

/// A running tool built with the package (`lode-demo`, `lode-dump`, a test helper).
final class ToolProcess {
    private var received = Data()
    let process = Process()
    let out = Pipe()
    let err = Pipe()

    /// Starts the built `tool` (`lode-demo` unless told) with `arguments`.
    init(_ arguments: [String], tool: String = "lode-demo") throws {
        process.executableURL = URL(fileURLWithPath: builtTool(tool))
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        try process.run()
    }

    /// Reads standard output until it holds `text` (or the output ends).
    func read(until text: String) {
        while !String(decoding: received, as: UTF8.self).contains(text) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { return }
            received.append(chunk)
        }
    }

    /// Standard output read so far.
    var output: String { String(decoding: received, as: UTF8.self) }

    /// Waits for the end; returns the exit status, standard output and standard error.
    func finish() -> (status: Int32, out: String, err: String) {
        let output = received + out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: output, as: UTF8.self),
            String(decoding: error, as: UTF8.self)
        )
    }
}

/// Runs the built `lode-demo` to its end.
func runDemo(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    try ToolProcess(arguments).finish()
}

@Suite struct DemoTests {
    let tmp = TemporaryDirectory()

    @Test func theScriptedSessionShowsEveryUpdateAndReRunsAfresh() throws {
        let path = tmp.url.appendingPathComponent("store").path
        for _ in 0..<2 {
            let run = try runDemo(["--path", path])
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.components(separatedBy: "  update: ").count == 11, "ten commits, ten updates")
            // Starting #2 takes its row into a new section (which brings its rows); ranking #3 first
            // moves it within one.
            #expect(run.out.contains("sections: insert 1; items: delete [0, 1]\n"), "\(run.out)")
            #expect(run.out.contains("items: move [0, 1]→[0, 0]"), "\(run.out)")
            #expect(
                run.out.contains(
                    "Done\n    [2, 0] #2 Fix the flaky test\n\nThe same tasks grouped by project"))
            // Renaming a project renames its section, which moves; deleting one unfiles its task.
            #expect(
                run.out.contains(
                    "▸ rename project Release to Beta (its section is renamed and moves before Docs, its row with it)\n"
                        + "  update: sections: delete 2, insert 1\n  (no project)\n    [0, 0] #4 Benchmark the store\n"
                        + "  Beta\n    [1, 0] #2 Fix the flaky test\n  Docs\n    [2, 0] #1 Write the user's guide\n"
                ),
                "\(run.out)")
            #expect(
                run.out.hasSuffix(
                    "  (no project)\n    [0, 0] #1 Write the user's guide\n  Beta\n    [1, 0] #4 Benchmark the store\n"
                        + "    [1, 1] #2 Fix the flaky test\n\nInspect the store: swift run lode-dump dump \(path) DemoTask --format table\n"
                        + "Follow it live: swift run lode-demo watch --path \(path)  (and, elsewhere, lode-demo write …)\n"
                ))
        }
    }

    @Test func watchFollowsAnotherProcessWriting() throws {
        let path = tmp.url.appendingPathComponent("store").path
        #expect(try runDemo(["write", "--path", path, "add", "first"]).status == 0)
        let watcher = try ToolProcess(["watch", "--path", path, "--for", "5"])
        watcher.read(until: "#1 first\n")
        let added = try runDemo(["write", "--path", path, "add", "second", "--status", "doing"])
        #expect(added.out == "added #2 second (Doing)\n", "\(added.err)")
        #expect(try runDemo(["write", "--path", path, "complete", "1"]).status == 0)
        let watched = watcher.finish()
        #expect(watched.status == 0, "\(watched.err)")
        #expect(watched.out.contains("  To do\n    [0, 0] #1 first\n"), "\(watched.out)")
        #expect(
            watched.out.hasSuffix("  Doing\n    [0, 0] #2 second\n  Done\n    [1, 0] #1 first\n"),
            "\(watched.out)")
    }

    @Test func badCommandLinesAndPathsGetClearErrors() throws {
        let path = tmp.url.appendingPathComponent("store").path
        let noID = try runDemo(["write", "--path", path, "complete", "x"])
        #expect(noID.status == 2)
        #expect(noID.err.hasPrefix("lode-demo: complete needs a task number, got x\n"))
        let missing = try runDemo(["write", "--path", path, "delete", "41"])
        #expect(missing.status == 2)
        #expect(missing.err.hasPrefix("lode-demo: no task #41"))
        #expect(try runDemo(["dance"]).status == 2)
        let file = tmp.url.appendingPathComponent("plain-file")
        try Data("not a store".utf8).write(to: file)
        let notAStore = try runDemo(["--path", file.path])
        #expect(notAStore.status == 1)
        #expect(notAStore.err.hasPrefix("lode-demo: \(file.path): "), "\(notAStore.err)")
    }
}
