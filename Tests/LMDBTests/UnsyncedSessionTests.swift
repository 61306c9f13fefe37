import Foundation
import Testing

@testable import LMDB

/// The markers by which an environment notices that the system went down while a process wrote
/// without syncing every commit (docs/FORMAT.md, docs/POWERCUT.md).
@Suite struct UnsyncedSessionTests {
    func markers(in path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter {
            $0.hasPrefix(".unsynced-")
        }
        .sorted()
    }

    @Test func aProcessWritingWithoutSyncingKeepsAMarkerUntilItClosesAfterASync() throws {
        let tmp = TemporaryDirectory()
        do {
            let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(durability: .noSync))
            let db = try env.database(named: "d")
            try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
            #expect(markers(in: tmp.path) == [".unsynced-\(getpid())"])
            let text = try String(contentsOfFile: tmp.subpath(".unsynced-\(getpid())"), encoding: .utf8)
            #expect(text == UnsyncedSessions.bootID + "\n" && !UnsyncedSessions.bootID.isEmpty)
            #expect(!env.sawSystemCrashWhileUnsynced)
        }
        #expect(markers(in: tmp.path).isEmpty, "a clean close removes the marker")
        // Modes that sync every commit leave none.
        _ = try Environment.open(at: tmp.path, options: EnvironmentOptions(durability: .noMetaSync))
        #expect(markers(in: tmp.path).isEmpty)
    }

    @Test func aMarkerOfAnEarlierBootIsASystemCrashUntilForgotten() throws {
        let tmp = TemporaryDirectory()
        do { _ = try Environment.open(at: tmp.path) }
        let marker = tmp.subpath(".unsynced-4194000")
        try Data("another boot\n".utf8).write(to: URL(fileURLWithPath: marker))
        do {
            let env = try Environment.open(at: tmp.path)
            #expect(env.sawSystemCrashWhileUnsynced)
            env.forgetSystemCrash()
            #expect(!env.sawSystemCrashWhileUnsynced)
        }
        #expect(!FileManager.default.fileExists(atPath: marker))
        let env = try Environment.open(at: tmp.path)
        #expect(!env.sawSystemCrashWhileUnsynced)
    }

    @Test func aMarkerOfThisBootIsAProcessCrashAndIsRemovedWhenItsProcessIsGone() throws {
        let tmp = TemporaryDirectory()
        do { _ = try Environment.open(at: tmp.path) }
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = tmp.subpath(".unsynced-\(gone.processIdentifier)")
        let alive = tmp.subpath(".unsynced-1")  // init is always running
        for path in [dead, alive] {
            try Data((UnsyncedSessions.bootID + "\n").utf8).write(to: URL(fileURLWithPath: path))
        }
        let env = try Environment.open(at: tmp.path)
        #expect(!env.sawSystemCrashWhileUnsynced, "a process crash loses nothing the kernel accepted")
        #expect(markers(in: tmp.path) == [".unsynced-1"])
    }
}
