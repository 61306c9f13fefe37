import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Disposable stores, rolled-back writes, savepoints, and reads of a write's own writes.
@Suite struct TemporaryStoreTests {
    @Test func aTemporaryStoreLivesInAFreshDirectoryAndIsGoneWhenItCloses() throws {
        let store = try Store.temporary(types: [Task.self])
        #expect(store.isTemporary)
        #expect(store.configuration.durability == .noSync)
        let directory = store.path
        #expect(URL(fileURLWithPath: directory).lastPathComponent.hasPrefix("lode-temporary-\(getpid())-"))
        if TemporaryStores.isMemoryBacked("/dev/shm"), access("/dev/shm", W_OK) == 0,
            ProcessInfo.processInfo.environment["LODE_TEMPORARY_DIRECTORY"] == nil
        {
            #expect(directory.hasPrefix("/dev/shm/"))  // nothing touches a disk
        }
        try store.write { tx in try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "g")) }
        #expect(try store.objects(Task.self).fetch().count == 1)
        // Owner-only, like every store.
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        // Another store is another directory.
        let other = try Store.temporary()
        #expect(other.path != directory)
        store.close()
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(throws: LodeError.storeClosed(path: directory)) { try store.objects(Task.self).fetch() }
        store.close()  // twice is harmless
        let otherPath = other.path
        _ = consume other  // released without close
        #expect(!FileManager.default.fileExists(atPath: otherPath))
    }

    @Test func aNormalExitRemovesTheDirectoryAndACrashedProcesssIsSweptLater() throws {
        let helper = builtTool("lode-test-helper")
        let exited = try shell("'\(helper)' temporary-store exit")
        #expect(exited.status == 0, "\(exited.err)")
        let exitedPath = exited.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(exitedPath.contains("lode-temporary-"))
        #expect(!FileManager.default.fileExists(atPath: exitedPath))

        let crashed = try shell("'\(helper)' temporary-store crash")
        let crashedPath = crashed.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(crashedPath.contains("lode-temporary-"))
        #expect(FileManager.default.fileExists(atPath: crashedPath))  // a crash leaves it behind
        // The next process's first temporary store sweeps what dead processes left.
        TemporaryStores.removeAbandoned(in: URL(fileURLWithPath: crashedPath).deletingLastPathComponent())
        #expect(!FileManager.default.fileExists(atPath: crashedPath))
    }

    @Test func anUnwritableTemporaryDirectoryIsANamedError() throws {
        let tmp = TemporaryDirectory("not-a-dir")
        let file = tmp.url.appendingPathComponent("file")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data())
        // A regular file cannot hold directories.
        let error = lodeError { _ = try TemporaryStores.shared.makeDirectory(in: file) }
        #expect(
            "\(error.map { "\($0)" } ?? "")".contains(
                "cannot make a temporary store directory in \(file.path)"))
    }
}
