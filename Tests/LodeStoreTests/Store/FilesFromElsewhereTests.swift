import Foundation
import Testing

@testable import LMDB
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Issue 64, finding 3: a file that comes from elsewhere — a copy, a restored backup, a file changed
/// since Lode last closed it — is checked page by page before anything reads it, with the default
/// configuration; a store Lode closed cleanly opens without the check.
@Suite struct FilesFromElsewhereTests {
    let tmp = TemporaryDirectory()

    /// A store of 300 tasks, closed cleanly.
    func makeStore(_ name: String = "store") throws -> URL {
        let url = tmp.url.appendingPathComponent(name)
        let store = try Store(at: url, types: [Task.self, Counter.self])
        try store.write { tx in
            for id in 0..<300 {
                try tx.insert(
                    Task(id: id, title: "task \(id)", rank: id % 17, done: id % 2 == 0, group: "g\(id % 5)"))
            }
        }
        store.close()
        return url
    }

    /// Opens the store at `url` with `configuration`, reads every record and index entry (the
    /// integrity walk, which must find nothing wrong) and closes it; returns whether the open checked
    /// the pages.
    func openAndRead(_ url: URL, _ configuration: StoreConfiguration = StoreConfiguration()) throws -> Bool {
        let store = try Store(at: url, configuration: configuration, types: [Task.self, Counter.self])
        defer { store.close() }
        let report = try store.read { try $0.checkIntegrity() }
        #expect(report.problems.isEmpty && report.records >= 100, "\(report.problems)")
        return store.pagesCheckedAtOpen
    }

    /// Zeroes every leaf page of the data file in `directory`.
    func damage(_ directory: URL) throws {
        let file = directory.appendingPathComponent("data.mdb")
        var bytes = [UInt8](try Data(contentsOf: file))
        let pageSize = 4096
        for page in 2..<(bytes.count / pageSize) where bytes[page * pageSize + 10] == 0x02 {
            for index in (page * pageSize)..<((page + 1) * pageSize) { bytes[index] = 0 }
        }
        try Data(bytes).write(to: file)
    }

    @Test func aStoreLodeClosedCleanlyOpensWithoutTheCheckAndACopyIsCheckedOnce() throws {
        let url = try makeStore()
        #expect(try openAndRead(url) == false, "the file Lode closed, unchanged: trusted")
        #expect(try openAndRead(url) == false)
        #expect(try openAndRead(url, StoreConfiguration(pageCheck: .always)) == true)
        // A copy of the whole directory, record included: another file.
        let copy = tmp.url.appendingPathComponent("copy")
        try FileManager.default.copyItem(at: url, to: copy)
        #expect(try openAndRead(copy) == true, "a copy is checked")
        // The check and the clean close recorded the copy as it is.
        #expect(CloseRecord.stored(in: copy.path) == CloseRecord.current(of: copy.path + "/data.mdb"))
        #expect(CloseRecord.stored(in: copy.path) != CloseRecord.stored(in: url.path))
        #expect(try openAndRead(copy) == false, "and trusted once checked and closed cleanly")
        // A backup made by Lode (`copy(to:)`) is a file Lode wrote from a file it trusted.
        let backup = tmp.url.appendingPathComponent("backup")
        try LMDB.Environment.open(at: url.path).copy(to: backup.path)
        #expect(try openAndRead(backup) == false)
    }

    @Test func aDamagedCopyIsRefusedByNameWithTheDefaultsEveryTime() throws {
        let url = try makeStore()
        let copy = tmp.url.appendingPathComponent("copy")
        try FileManager.default.copyItem(at: url, to: copy)
        try damage(copy)
        for _ in 0..<2 {
            // Refused, and no record of a clean close is left for it: the next open checks again.
            #expect {
                _ = try Store(at: copy, types: [Task.self, Counter.self])
            } throws: { error in
                guard case .storage(let failure) = error as? LodeError else { return false }
                return failure.reason == .damaged && failure.message.hasPrefix("page ")
            }
        }
        // An app that asked for no check gets a typed error saying why and how to check, unread.
        let error = lodeError {
            _ = try Store(at: copy, configuration: StoreConfiguration(pageCheck: .never))
        }
        guard case .fileNotTrusted(let path, let reason)? = error else {
            Issue.record("expected fileNotTrusted, got \(String(describing: error))")
            return
        }
        #expect(path == copy.path)
        #expect(reason.contains("another file"), "\(reason)")
        #expect("\(error!)".contains("lode-dump check \(copy.path)"), "\(error!)")
        // `.never` opens a store Lode closed cleanly.
        #expect(try openAndRead(url, StoreConfiguration(pageCheck: .never)) == false)
    }

    /// The same file written in place after a clean close (an older copy of it put back with `cp`):
    /// its meta pages and change time differ from the record, so it is checked.
    @Test func aFileRewrittenInPlaceAfterACleanCloseIsChecked() throws {
        let url = try makeStore()
        let file = url.appendingPathComponent("data.mdb")
        let older = try Data(contentsOf: file)
        do {
            let store = try Store(at: url, types: [Task.self, Counter.self])
            try store.write { try $0.insert(Counter(name: "later", value: 1)) }
            store.close()
        }
        #expect(try openAndRead(url) == false)
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: older)
        try handle.close()
        let store = try Store(at: url, types: [Task.self, Counter.self])
        defer { store.close() }
        #expect(store.pagesCheckedAtOpen)
        #expect(try store.read { try $0.object(Counter.self, key: "later") } == nil, "the older state, read")
    }

    /// A process killed with the store open leaves a file changed since its last clean close: the next
    /// open checks it — and finds it whole (a kill loses nothing LMDB wrote), never a false "damaged".
    @Test func aProcessKilledWithTheStoreOpenLeavesItCheckedOnceAtTheNextOpen() async throws {
        try await onDedicatedExecutor {
            let url = try makeStore()
            let writer = try ToolProcess(["crash-writer", url.path], tool: "lode-test-helper")
            writer.read(until: "ack 3")
            kill(writer.process.processIdentifier, SIGKILL)
            _ = writer.finish()
            #expect(try openAndRead(url) == true)
            #expect(try openAndRead(url) == false)
        }
    }

    /// While a process that trusts the file has it open (and commits), another process's open trusts
    /// it too, without a check: it is not a file from elsewhere.
    @Test func anOpenBesideAProcessThatTrustsTheFileSkipsTheCheck() async throws {
        try await onDedicatedExecutor {
            let url = try makeStore()
            let writer = try ToolProcess(["crash-writer", url.path], tool: "lode-test-helper")
            defer {
                kill(writer.process.processIdentifier, SIGKILL)
                _ = writer.finish()
            }
            writer.read(until: "ack 3")
            let environment = try LMDB.Environment.open(
                at: url.path, options: EnvironmentOptions(readOnly: true))
            #expect(environment.fileTrust == .openElsewhere)
        }
    }

    /// The LMDB layer's part: a record cut short reads as none, a clean page check trusts the file
    /// (and, in a writable environment, records it at once), and a record of another file is not
    /// trusted.
    @Test func theRecordOfACleanClose() throws {
        let url = try makeStore()
        let record = try #require(CloseRecord.stored(in: url.path))
        #expect(record == CloseRecord.current(of: url.path + "/data.mdb"))
        let line = record.line
        try Data(line.dropLast(3).utf8).write(to: url.appendingPathComponent(CloseRecord.fileName))
        #expect(CloseRecord.stored(in: url.path) == nil, "a torn record is no record")
        do {
            let environment = try LMDB.Environment.open(at: url.path)
            guard case .untrusted(let reason) = environment.fileTrust else {
                Issue.record("trusted without a record: \(environment.fileTrust)")
                return
            }
            #expect(reason.contains("no record"), "\(reason)")
            #expect(try environment.checkPages().isClean)
            #expect(environment.fileTrust == .checked)
        }
        #expect(CloseRecord.stored(in: url.path) == CloseRecord.current(of: url.path + "/data.mdb"))
        #expect(try LMDB.Environment.open(at: url.path).fileTrust == .closedCleanly)
    }
}
