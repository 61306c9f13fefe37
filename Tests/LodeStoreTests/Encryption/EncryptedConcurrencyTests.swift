import Dispatch
import Foundation
import LodeTestSupport
import Testing

@testable import LodeStore

/// Readers on several threads share an encrypted store's decrypted cache (small enough here to
/// evict all the time) while a writer changes the records: every read sees a whole object of some
/// committed version, and the last reads see the last commit. `make test` runs it under
/// ThreadSanitizer too.
@Suite struct EncryptedConcurrencyTests {
    let tmp = TemporaryDirectory("encrypted-concurrency")

    func secret(_ n: Int, version: Int) -> Secret {
        Secret(id: "k\(n)", title: "title \(n) v\(version)", tag: "t\(n % 3)", rank: version * 1_000 + n)
    }

    @Test func readersOnManyThreadsShareTheDecryptedCacheWhileAWriterCommits() async throws {
        let count = 300
        let store = try Store(
            at: tmp.url,
            configuration: StoreConfiguration(
                durability: .noSync, encryption: .key(try StoreKey.random()), decryptedCacheSize: 64 << 10),
            types: [Secret.self])
        defer { store.close() }
        try await store.write { tx in for n in 0..<count { try tx.insert(secret(n, version: 0)) } }
        let versions = 20
        // `Locked`, not `Mutex`: ThreadSanitizer sees its pthread mutex.
        let problems = Locked<[String]>([])
        @Sendable func work(_ worker: Int) {
            do {
                if worker == 0 {
                    for version in 1...versions {
                        try store.write { tx in
                            for n in stride(from: version % 3, to: count, by: 3) {
                                try tx.upsert(secret(n, version: version))
                            }
                        }
                    }
                    return
                }
                var rng = SeededGenerator(seed: UInt64(worker))
                for _ in 0..<400 {
                    let n = Int.random(in: 0..<count, using: &rng)
                    guard let found = try store.read({ try $0.object(Secret.self, key: "k\(n)") }) else {
                        problems.withLock { $0.append("k\(n) missing") }
                        continue
                    }
                    let version = found.rank / 1_000
                    if found != secret(n, version: version) {
                        problems.withLock { $0.append("k\(n) read as \(found)") }
                    }
                }
            } catch {
                problems.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        // The threads are Dispatch's, not the test's: the cooperative pool is not blocked meanwhile.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                DispatchQueue.concurrentPerform(iterations: 5) { worker in
                    work(worker)
                }
                done.resume()
            }
        }
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
        // After the last commit, every object is its last version, read through the cache or not.
        let last = try await store.read { tx in
            try (0..<count).map { try tx.object(Secret.self, key: "k\($0)") }
        }
        for n in 0..<count {
            let version = (1...versions).last { $0 % 3 == n % 3 } ?? 0
            #expect(last[n] == secret(n, version: version))
        }
    }
}
