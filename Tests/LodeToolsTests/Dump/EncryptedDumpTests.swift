import Foundation
import Testing

@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// `lode-dump` on an encrypted store: the key from a file, never the command line or the output;
/// `rekey` encrypts, changes the key and decrypts.
@Suite struct EncryptedDumpTests {
    let tmp = TemporaryDirectory("encrypted-dump")

    func keyFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = tmp.path + "-" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func makeStore() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in 1...40 {
                try tx.insert(
                    Task(id: id, title: "task \(id)", rank: id % 7, done: id % 2 == 0, group: "g\(id % 3)"))
            }
        }
        store.close()
    }

    @Test func aKeyFileOpensTheStoreAndRekeyChangesIt() throws {
        try makeStore()
        let key = (0..<32).map { UInt8($0 * 5 + 1) }
        let hex = key.map { String(format: "%02x", $0) }.joined()
        let raw = try keyFile("raw", key)
        let text = try keyFile("hex", Array((hex + "\n").utf8))
        defer {
            for file in [raw, text] { try? FileManager.default.removeItem(atPath: file) }
        }
        let encrypted = try runDump(["rekey", tmp.path, "--new-key-file", raw])
        #expect(encrypted.status == 0, "\(encrypted.err)")
        #expect(encrypted.out.contains("encrypted \(tmp.path)"))

        let without = try runDump([tmp.path])
        #expect(without.status == 1)
        #expect(without.err.contains("the store is encrypted: give its key"), "\(without.err)")

        // Raw bytes or hex digits; before or after the command's arguments.
        let summary = try runDump(["--key-file", text, tmp.path])
        #expect(summary.status == 0, "\(summary.err)")
        #expect(summary.out.contains("format     5 "))
        #expect(summary.out.contains("  Task: 40 objects"))
        for output in [summary.out, summary.err, encrypted.out, encrypted.err] {
            #expect(!output.contains(hex), "the key is never printed")
        }
        // Primary-key order and filters, as in a plain store (records under hashed keys are sorted).
        let dump = try runDump(["dump", tmp.path, "Task", "--where", "rank == 3", "--key-file", raw])
        #expect(dump.status == 0, "\(dump.err)")
        let ids = dump.out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? Int
        }
        #expect(ids == [3, 10, 17, 24, 31, 38])
        let check = try runDump(["check", tmp.path, "--key-file", raw])
        #expect(check.status == 0, "\(check.out) \(check.err)")
        // A backup and a compacted copy stay encrypted: the same key opens them, nothing shows.
        for (command, copy) in [("backup", tmp.path + "-backup"), ("compact", tmp.path + "-compact")] {
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let made = try runDump([command, tmp.path, copy, "--key-file", raw])
            #expect(made.status == 0, "\(made.err)")
            let data = try Data(contentsOf: URL(fileURLWithPath: copy + "/data.mdb"))
            #expect(data.range(of: Data("task 1".utf8)) == nil, "\(command)")
            #expect(try runDump([copy]).status == 1)
            let copied = try runDump(["dump", copy, "Task", "--key-file", raw])
            #expect(copied.out.split(separator: "\n").count == 40, "\(command): \(copied.err)")
        }

        let wrong = try keyFile("wrong", Array(repeating: 9, count: 32))
        defer { try? FileManager.default.removeItem(atPath: wrong) }
        let refused = try runDump(["dump", tmp.path, "Task", "--key-file", wrong])
        #expect(refused.status == 1)
        #expect(refused.err.contains("the key given does not open the store"), "\(refused.err)")
        let short = try keyFile("short", Array(repeating: 9, count: 31))
        defer { try? FileManager.default.removeItem(atPath: short) }
        let malformed = try runDump([tmp.path, "--key-file", short])
        #expect(malformed.status == 1)
        #expect(malformed.err.contains("a key file holds the key's 32 bytes or 64 hex digits, not 31 bytes"))

        // Changed to a passphrase, then decrypted.
        let passphrase = try keyFile("passphrase", Array("a long passphrase\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: passphrase) }
        let changed = try runDump(["rekey", tmp.path, "--key-file", raw, "--new-passphrase-file", passphrase])
        #expect(changed.status == 0, "\(changed.err)")
        #expect(try runDump([tmp.path, "--key-file", raw]).status == 1)
        #expect(try runDump([tmp.path, "--passphrase-file", passphrase]).status == 0)
        let decrypted = try runDump(["rekey", tmp.path, "--passphrase-file", passphrase, "--decrypt"])
        #expect(decrypted.status == 0, "\(decrypted.err)")
        let plain = try runDump(["dump", tmp.path, "Task", "--limit", "2"])
        #expect(plain.status == 0, "\(plain.err)")
        #expect(plain.out.contains("\"title\":\"task 1\""))
        // A malformed rekey.
        #expect(try runDump(["rekey", tmp.path]).status == 2)
    }
}
