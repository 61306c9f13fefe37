import Foundation
import LodeTestSupport
import Testing

@testable import LodeStore
@testable import LodeTestModels

/// Encrypting, decrypting and changing the key of a store in place.
@Suite struct KeyChangeTests {
    let tmp = TemporaryDirectory("key-change")
    let cheap = KeyDerivation(operations: 1, memory: 8192)

    func task(_ id: Int) -> Task {
        Task(id: id, title: "TITLEMARK-\(id)", rank: id % 17, done: id % 3 == 0, group: "GROUPMARK-\(id % 5)")
    }

    func open(_ encryption: StoreEncryption?) throws -> Store {
        try Store(at: tmp.url, configuration: StoreConfiguration(encryption: encryption), types: [Task.self])
    }

    func fill(count: Int) throws {
        let store = try open(nil)
        try store.write { tx in for id in 0..<count { try tx.insert(task(id)) } }
        store.close()
    }

    /// The store holds exactly the tasks `0..<count` and its indexes agree with them.
    func expectContents(_ store: Store, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws
    {
        try store.read { tx in
            #expect(try tx.count(Task.self) == count, sourceLocation: sourceLocation)
            for id in stride(from: 0, to: count, by: max(1, count / 50)) {
                #expect(try tx.object(Task.self, key: id) == task(id), sourceLocation: sourceLocation)
            }
            let problems = try tx.checkIntegrity().problems
            #expect(problems.isEmpty, "\(problems.prefix(3))", sourceLocation: sourceLocation)
        }
    }

    /// Whether any file of the store shows a marker.
    func markersVisible() throws -> Bool {
        try FileManager.default.contentsOfDirectory(atPath: tmp.path).contains { name in
            guard !name.hasPrefix("key-change") else { return false }
            let data = try Data(contentsOf: tmp.url.appendingPathComponent(name))
            return data.range(of: Data("TITLEMARK".utf8)) != nil
                || data.range(of: Data("GROUPMARK".utf8)) != nil
        }
    }

    func openError(_ encryption: StoreEncryption?) -> EncryptionError? {
        do {
            try open(encryption).close()
            return nil
        } catch LodeError.encryption(_, let error) {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func encryptChangeTheKeyThenDecrypt() throws {
        try fill(count: 300)
        #expect(try markersVisible())
        let first = try StoreKey.random()
        var reports: [KeyChangeProgress] = []
        try Store.changeEncryption(at: tmp.url, from: nil, to: .key(first)) { reports.append($0) }
        #expect(reports.last == KeyChangeProgress(copied: 300, total: 300))
        #expect(try !markersVisible())
        #expect(openError(nil) == .keyMissing)
        try expectContents(try open(.key(first)), count: 300)

        let second = try StoreKey.random()
        try Store.changeEncryption(at: tmp.url, from: .key(first), to: .key(second))
        #expect(openError(.key(first)) == .wrongKey)
        try expectContents(try open(.key(second)), count: 300)

        let passphrase = StoreEncryption.passphrase("new words", derivation: cheap)
        try Store.changeEncryption(at: tmp.url, from: .key(second), to: passphrase)
        #expect(openError(.key(second)) == .wrongKey)
        let reopened = try open(passphrase)
        try expectContents(reopened, count: 300)
        // Writes after the change, then the store decrypted again.
        try reopened.write { tx in try tx.insert(task(300)) }
        reopened.close()
        try Store.changeEncryption(at: tmp.url, from: passphrase, to: nil)
        #expect(openError(passphrase) == .notEncrypted)
        try expectContents(try open(nil), count: 301)
        #expect(try markersVisible())
        #expect(!FileManager.default.fileExists(atPath: tmp.path + "/key-change.lode"))
        #expect(!FileManager.default.fileExists(atPath: tmp.path + "/key-change.tmp"))
    }

    @Test func aWrongOldKeyOrAnOpenStoreChangesNothing() throws {
        try fill(count: 20)
        let key = try StoreKey.random()
        try Store.changeEncryption(at: tmp.url, from: nil, to: .key(key))
        #expect(throws: LodeError.encryption(path: tmp.url.path, .wrongKey)) {
            try Store.changeEncryption(at: self.tmp.url, from: .key(try StoreKey.random()), to: nil)
        }
        let open = try self.open(.key(key))
        #expect {
            try Store.changeEncryption(at: self.tmp.url, from: .key(key), to: nil)
        } throws: { error in
            guard case .encryption(_, .storeOpen("this process")) = error as? LodeError else { return false }
            return true
        }
        try expectContents(open, count: 20)
        open.close()
        try expectContents(try self.open(.key(key)), count: 20)
        #expect(!FileManager.default.fileExists(atPath: tmp.path + "/key-change.lode"))
    }

    @Test func aStoreOpenInAnotherProcessIsNotChanged() throws {
        try fill(count: 20)
        let reader = try ToolProcess(["hold-reader", tmp.path], tool: "lode-test-helper")
        let pid = reader.process.processIdentifier
        defer {
            kill(pid, SIGKILL)
            reader.process.waitUntilExit()
        }
        reader.read(until: "\n")
        #expect(throws: LodeError.encryption(path: tmp.url.path, .storeOpen("process \(pid)"))) {
            try Store.changeEncryption(at: self.tmp.url, from: nil, to: .key(try StoreKey.random()))
        }
        try expectContents(try open(nil), count: 20)
    }

    /// Waits for `process` to end without blocking a thread of the cooperative pool.
    func ended(_ process: ToolProcess) async throws {
        while process.process.isRunning { try await _Concurrency.Task.sleep(for: .milliseconds(5)) }
    }

    /// A change killed at random points: the store opens with the old key or the new one (never
    /// both, never neither) and holds every task. Waits sleep asynchronously (the test runs beside
    /// others on the cooperative pool).
    @Test func aChangeKilledAnywhereLeavesTheOldKeyOrTheNewOne() async throws {
        let count = 4_000
        try fill(count: count)
        var rng = SeededGenerator(seed: 0x6b65_7973)
        var current: (file: String, encryption: StoreEncryption?) = ("-", nil)
        var outcomes = (old: 0, new: 0)
        // How long a whole change takes here (process start included): kills land anywhere in it.
        let firstKey = try StoreKey.random()
        let firstFile = tmp.path + "-key"
        try Data(firstKey.withBytes { Array($0) }).write(to: URL(fileURLWithPath: firstFile))
        defer { try? FileManager.default.removeItem(atPath: firstFile) }
        let started = Date()
        let calibration = try ToolProcess(["change-key", tmp.path, "-", firstFile], tool: "lode-test-helper")
        try await ended(calibration)
        let whole = calibration.finish()
        #expect(whole.status == 0, "\(whole.err)")
        let span = UInt32(min(max(Date().timeIntervalSince(started) * 1.5, 0.05), 5) * 1_000_000)
        current = (firstFile, .key(firstKey))
        for round in 0..<12 {
            let key = try StoreKey.random()
            let file = tmp.path + "-key\(round)"
            try Data(key.withBytes { Array($0) }).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            // Every third round decrypts instead.
            let next: (file: String, encryption: StoreEncryption?) =
                round % 3 == 2 && current.encryption != nil ? ("-", nil) : (file, .key(key))
            let change = try ToolProcess(
                ["change-key", tmp.path, current.file, next.file], tool: "lode-test-helper")
            // Early kills, kills anywhere, and now and then none (the change runs to its end).
            switch round % 4 {
            case 0:
                try await _Concurrency.Task.sleep(
                    for: .microseconds(UInt32.random(in: 0..<span / 5, using: &rng)))
            case 3: try await ended(change)
            default:
                try await _Concurrency.Task.sleep(
                    for: .microseconds(UInt32.random(in: 0..<span, using: &rng)))
            }
            kill(change.process.processIdentifier, SIGKILL)
            let result = change.finish()
            let finished = result.out.contains("done")
            let withNew = Result { try open(next.encryption) }
            let withOld = Result { try open(current.encryption) }
            switch (withNew, withOld) {
            case (.success(let store), .failure):
                try expectContents(store, count: count)
                store.close()
                outcomes.new += 1
                current = next
            case (.failure, .success(let store)):
                #expect(!finished, "round \(round): the change said done, and the old key still opens")
                try expectContents(store, count: count)
                store.close()
                outcomes.old += 1
            default:
                Issue.record("round \(round): new key \(withNew), old key \(withOld) (\(result.err))")
                return
            }
            #expect(!FileManager.default.fileExists(atPath: tmp.path + "/key-change.tmp"))
        }
        // Kills landed before the new file was in place, and changes ran to their end.
        #expect(outcomes.old > 0 && outcomes.new > 0, "\(outcomes)")
    }
}
