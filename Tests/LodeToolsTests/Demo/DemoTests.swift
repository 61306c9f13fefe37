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
