import Foundation
import LMDB
import LodeCodec
import LodeTestSupport
import Testing

@testable import LodeStore

/// A type whose every stored value is a marker the file must not show.
struct Secret: Persistable, Equatable {
    var id: String
    var title: String
    var tag: String
    var rank: Int
    static let schema = Schema<Secret>(primaryKey: \.id, indexes: [.on(\.tag), .unique(\.title)])
}

/// Encrypted stores: what is sealed, how opening tells keys apart, and what tampering does.
@Suite struct EncryptedStoreTests {
    let tmp = TemporaryDirectory("encrypted")
    /// Cheap Argon2id parameters for tests (the minimum libsodium takes).
    let cheap = KeyDerivation(operations: 1, memory: 8192)

    func configuration(_ encryption: StoreEncryption?) -> StoreConfiguration {
        StoreConfiguration(encryption: encryption)
    }

    func secret(_ n: Int) -> Secret {
        Secret(id: "KEYMARK-\(n)", title: "TITLEMARK-\(n)", tag: "TAGMARK-\(n % 3)", rank: 1_000_003 * n)
    }

    /// Every file of the store's directory, byte by byte.
    func files() throws -> [(String, [UInt8])] {
        try FileManager.default.contentsOfDirectory(atPath: tmp.path).map { name in
            (name, Array(try Data(contentsOf: tmp.url.appendingPathComponent(name))))
        }
    }

    func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return haystack.withUnsafeBytes { bytes in
            var start = bytes.baseAddress!
            var left = bytes.count
            while left >= needle.count, let found = memchr(start, Int32(needle[0]), left - needle.count + 1) {
                if memcmp(found, needle, needle.count) == 0 { return true }
                let skipped = UnsafeRawPointer(found) - start + 1
                start += skipped
                left -= skipped
            }
            return false
        }
    }

    @Test func objectsRoundTripThroughAnEncryptedStore() throws {
        let key = try StoreKey.random()
        let store = try Store(at: tmp.url, configuration: configuration(.key(key)), types: [Secret.self])
        try store.write { tx in for n in 0..<50 { try tx.insert(secret(n)) } }
        #expect(try store.read { try $0.object(Secret.self, key: "KEYMARK-7") } == secret(7))
        try store.write { tx in
            _ = try tx.update(Secret.self, key: "KEYMARK-7") { $0.title = "renamed" }
            _ = try tx.delete(Secret.self, key: "KEYMARK-8")
        }
        #expect(try store.read { try $0.object(Secret.self, key: "KEYMARK-7")?.title } == "renamed")
        #expect(try store.read { try $0.object(Secret.self, key: "KEYMARK-8") } == nil)
        #expect(try store.read { try $0.count(Secret.self) } == 49)
        // A second title equal to a stored one is still refused by the (hashed) unique index.
        #expect(throws: LodeError.self) {
            try store.write { tx in
                try tx.insert(Secret(id: "other", title: "TITLEMARK-9", tag: "x", rank: 1))
            }
        }
        store.close()
        let again = try Store(at: tmp.url, configuration: configuration(.key(key)), types: [Secret.self])
        #expect(try again.read { try $0.object(Secret.self, key: "KEYMARK-9") } == secret(9))
        let problems = try again.read { try $0.checkIntegrity().problems }
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func noMarkerIsInAnyFileOfTheStore() throws {
        let store = try Store(
            at: tmp.url, configuration: configuration(.passphrase("open sesame", derivation: cheap)),
            types: [Secret.self])
        try store.write { tx in for n in 0..<200 { try tx.insert(secret(n)) } }
        try store.write { tx in
            for n in 0..<200 where n % 2 == 0 {
                _ = try tx.update(Secret.self, key: "KEYMARK-\(n)") { $0.rank += 1 }
            }
            for n in 0..<200 where n % 5 == 0 { _ = try tx.delete(Secret.self, key: "KEYMARK-\(n)") }
        }
        store.close()
        var checked = 0
        for (name, bytes) in try files() {
            for marker in ["KEYMARK", "TITLEMARK", "TAGMARK"] {
                #expect(!contains(bytes, marker), "\(marker) is in \(name)")
            }
            checked += bytes.count
        }
        #expect(checked > 0)
        // The same store unencrypted shows them: the search can find what it looks for.
        let plain = TemporaryDirectory("plain")
        let open = try Store(at: plain.url, types: [Secret.self])
        try open.write { tx in try tx.insert(secret(1)) }
        open.close()
        let data = Array(try Data(contentsOf: plain.url.appendingPathComponent("data.mdb")))
        #expect(contains(data, "KEYMARK") && contains(data, "TITLEMARK") && contains(data, "TAGMARK"))
    }

    func openError(_ encryption: StoreEncryption?) -> EncryptionError? {
        do {
            _ = try Store(at: tmp.url, configuration: configuration(encryption), types: [Secret.self])
            return nil
        } catch LodeError.encryption(_, let error) {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func openingTellsKeysApartBeforeAnyRead() throws {
        let key = try StoreKey.random()
        let store = try Store(at: tmp.url, configuration: configuration(.key(key)), types: [Secret.self])
        try store.write { tx in try tx.insert(secret(1)) }
        store.close()
        #expect(openError(nil) == .keyMissing)
        #expect(openError(.key(try StoreKey.random())) == .wrongKey)
        #expect(openError(.passphrase("guess", derivation: cheap)) == .wrongKey)
        #expect(openError(.key(try StoreKey(bytes: key.withBytes { Array($0) }))) == nil)
        // A key for a plain store.
        let plain = TemporaryDirectory("plain")
        _ = try Store(at: plain.url, types: [Secret.self])
        #expect(throws: LodeError.encryption(path: plain.path, .notEncrypted)) {
            _ = try Store(at: plain.url, configuration: configuration(.key(key)), types: [Secret.self])
        }
    }

    /// A configuration printed, dumped or reflected (as a log would) shows no key material.
    @Test func aConfigurationPrintsNoKeyMaterial() throws {
        let configuration = StoreConfiguration(encryption: .passphrase("open sesame", derivation: cheap))
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in ["\(configuration)", String(reflecting: configuration), dumped] {
            #expect(!text.contains("sesame"), "\(text)")
            #expect(text.contains("a passphrase (not shown)"), "\(text)")
        }
    }

    @Test func aPassphraseOpensWithTheStoresOwnSaltAndParameters() throws {
        let store = try Store(
            at: tmp.url, configuration: configuration(.passphrase("open sesame", derivation: cheap)),
            types: [Secret.self])
        try store.write { tx in try tx.insert(secret(3)) }
        store.close()
        // Other parameters given now do not matter: the store's own are used.
        let again = try Store(
            at: tmp.url,
            configuration: configuration(
                .passphrase("open sesame", derivation: KeyDerivation(operations: 2, memory: 16384))),
            types: [Secret.self])
        #expect(try again.read { try $0.object(Secret.self, key: "KEYMARK-3") } == secret(3))
        again.close()
        #expect(openError(.passphrase("open sesame!", derivation: cheap)) == .wrongKey)
    }

    /// Rewrites the store's record of its encryption (as a damaged or future file would have it).
    func rewriteRecord(_ change: (inout EncryptionRecord) -> Void) throws {
        let environment = try Environment.open(at: tmp.path)
        let meta = try environment.database(named: "@meta")
        try environment.write { txn in
            var record = try CBORDecoder().decode(
                EncryptionRecord.self, from: try #require(try txn.get(EncryptionRecord.metaKey, in: meta)))
            change(&record)
            try txn.put(try CBOREncoder().encode(record), forKey: EncryptionRecord.metaKey, in: meta)
        }
    }

    @Test func aDamagedOrNewerRecordOfTheKeyIsRefused() throws {
        let passphrase = StoreEncryption.passphrase("open sesame", derivation: cheap)
        _ = try Store(at: tmp.url, configuration: configuration(passphrase), types: [Secret.self]).close()
        try rewriteRecord { $0.salt = Array($0.salt!.prefix(9)) }
        #expect(openError(passphrase) == .damagedKeyRecord("the salt is 9 bytes, not 16"))
        try rewriteRecord { $0.salt = Array(repeating: 7, count: 16) }
        #expect(openError(passphrase) == .wrongKey)
        let newer = EncryptionRecord.currentFormat + 1
        try rewriteRecord { $0.format = newer }
        #expect(openError(passphrase) == .newerFormat(newer))
        try rewriteRecord {
            $0.format = 1
            $0.check = []
        }
        #expect(openError(passphrase) == .damagedKeyRecord("format 1, a key check of 0 bytes"))
    }
}

/// What an attacker with write access to the file can and cannot do unnoticed.
@Suite struct EncryptedStoreTamperingTests {
    let tmp = TemporaryDirectory("tampered")
    let key: StoreKey

    init() throws { key = try StoreKey.random() }

    /// Opens the store; `checking` its types at open (which reads some records first).
    func open(checking: Bool = false) throws -> Store {
        try Store(
            at: tmp.url,
            configuration: StoreConfiguration(checksTypesAtOpen: checking, encryption: .key(key)),
            types: [Secret.self])
    }

    func secret(_ n: Int, title: String? = nil) -> Secret {
        Secret(id: "k\(n)", title: title ?? "title \(n)", tag: "t\(n % 2)", rank: n)
    }

    /// The stored key of `id` in the records of Secret, as the store's sealer computes it.
    func storedKey(_ id: String) throws -> [UInt8] {
        let sealer = StoreSealer(sealer: try RecordSealer(key: key))
        return try KeyEncoder().encode(id).withUnsafeBytes {
            sealer.storedKey($0, database: Array("Secret".utf8))
        }
    }

    /// Changes the raw records of Secret with the store closed (no key: the bytes as they lie).
    func tamper(_ change: (LMDB.WriteTransaction, Database) throws -> Void) throws {
        let environment = try Environment.open(at: tmp.path)
        let records = try environment.database(named: "Secret")
        try environment.write { txn in try change(txn, records) }
    }

    func readError(_ id: String) throws -> LodeError? {
        let store = try open()
        defer { store.close() }
        do {
            _ = try store.read { try $0.object(Secret.self, key: id) }
            return nil
        } catch let error as LodeError {
            return error
        }
    }

    /// A record read once is kept opened in memory (the decrypted cache); a byte of it changed in
    /// the file while the store stays open makes the next read open it again, and fail: the cache
    /// answers only for the very bytes it opened.
    @Test func aRecordChangedUnderAnOpenStoreIsNotAnsweredFromTheCache() throws {
        let store = try open()
        try store.write { tx in for n in 0..<4 { try tx.insert(secret(n)) } }
        store.close()
        let stored = try storedKey("k2")
        var sealed: [UInt8] = []
        try tamper { txn, records in sealed = try #require(try txn.get(stored, in: records)) }

        let reopened = try open()
        defer { reopened.close() }
        #expect(try reopened.read { try $0.object(Secret.self, key: "k2") } == secret(2))
        #expect(try reopened.read { try $0.object(Secret.self, key: "k2") } == secret(2))
        // The sealed bytes lie once in the data file: one byte of their middle is flipped there,
        // through the file (LMDB's map shows it).
        let data = tmp.url.appendingPathComponent("data.mdb")
        let file = try Data(contentsOf: data)
        let offset = try #require(file.firstRange(of: Data(sealed))).lowerBound + sealed.count / 2
        let handle = try FileHandle(forUpdating: data)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [file[offset] ^ 0x20])
        try handle.close()
        #expect {
            _ = try reopened.read { try $0.object(Secret.self, key: "k2") }
        } throws: { error in
            error as? LodeError == .recordSealBroken(type: "Secret", key: "\"k2\"")
        }
        #expect(try reopened.read { try $0.object(Secret.self, key: "k1") } == secret(1))
    }

    /// A store written in encryption format 1 (stored keys hashed by BLAKE2b) opens, reads, finds by
    /// index and takes writes; a key change writes it again in the current format.
    @Test func aStoreOfTheFirstEncryptionFormatStillOpens() throws {
        var configuration = StoreConfiguration(encryption: .key(key))
        configuration.encryptionFormat = 1
        let first = try Store(at: tmp.url, configuration: configuration, types: [Secret.self])
        try first.write { tx in for n in 0..<20 { try tx.insert(secret(n)) } }
        first.close()
        func format() throws -> Int {
            let environment = try Environment.open(at: tmp.path)
            let meta = try environment.database(named: "@meta")
            let bytes = try environment.read { txn in try txn.get(EncryptionRecord.metaKey, in: meta) }
            return try CBORDecoder().decode(EncryptionRecord.self, from: try #require(bytes)).format
        }
        #expect(try format() == 1)

        func check(_ store: Store) throws {
            #expect(try store.read { try $0.object(Secret.self, key: "k7") } == secret(7))
            // The unique index finds a stored title by its hashed key.
            #expect(throws: LodeError.self) {
                try store.write { tx in
                    try tx.insert(Secret(id: "other", title: "title 3", tag: "t", rank: 0))
                }
            }
            let problems = try store.read { try $0.checkIntegrity().problems }
            #expect(problems.isEmpty, "\(problems)")
        }
        let store = try open()
        try check(store)
        try store.write { tx in try tx.insert(secret(20)) }
        #expect(try store.read { try $0.object(Secret.self, key: "k20") } == secret(20))
        store.close()

        try Store.changeEncryption(at: tmp.url, from: .key(key), to: .key(key))
        #expect(try format() == EncryptionRecord.currentFormat)
        let changed = try open()
        defer { changed.close() }
        try check(changed)
    }

    @Test func aFlippedByteIsDetectedAndNamesTypeAndKey() throws {
        let store = try open()
        try store.write { tx in for n in 0..<4 { try tx.insert(secret(n)) } }
        store.close()
        let stored = try storedKey("k2")
        try tamper { txn, records in
            var bytes = try #require(try txn.get(stored, in: records))
            bytes[bytes.count / 2] ^= 0x20
            try txn.put(bytes, forKey: stored, in: records)
        }
        #expect(try readError("k2") == .recordSealBroken(type: "Secret", key: "\"k2\""))
        // The check at open reads the first and last records: it refuses the store, naming the record
        // by its stored key (a walk cannot know the key a broken seal hides).
        #expect {
            _ = try open(checking: true)
        } throws: { error in
            guard case .recordSealBroken("Secret", _) = error as? LodeError else { return false }
            return true
        }
        #expect(try readError("k1") == nil)
        // The integrity check reports it instead of stopping.
        let reopened = try open()
        let problems = try reopened.read { try $0.checkIntegrity().problems }
        #expect(problems.contains { $0.contains("the sealed record does not open") }, "\(problems)")
    }

    @Test func swappedRecordsDoNotOpen() throws {
        let store = try open()
        try store.write { tx in for n in 0..<4 { try tx.insert(secret(n)) } }
        store.close()
        let (first, second) = (try storedKey("k0"), try storedKey("k3"))
        try tamper { txn, records in
            let a = try #require(try txn.get(first, in: records))
            let b = try #require(try txn.get(second, in: records))
            try txn.put(b, forKey: first, in: records)
            try txn.put(a, forKey: second, in: records)
        }
        #expect(try readError("k0") == .recordSealBroken(type: "Secret", key: "\"k0\""))
        #expect(try readError("k3") == .recordSealBroken(type: "Secret", key: "\"k3\""))
    }

    /// Not detected, as in Realm's and SQLCipher's page encryption: an older sealed value of the same
    /// key put back (a rollback of one record) opens. The article says so.
    @Test func anOlderValueOfTheSameKeyPutBackIsNotDetected() throws {
        let store = try open()
        try store.write { tx in try tx.insert(secret(5, title: "old")) }
        store.close()
        let stored = try storedKey("k5")
        var old: [UInt8] = []
        try tamper { txn, records in old = try #require(try txn.get(stored, in: records)) }
        let again = try open()
        try again.write { tx in _ = try tx.update(Secret.self, key: "k5") { $0.title = "new" } }
        again.close()
        try tamper { txn, records in try txn.put(old, forKey: stored, in: records) }
        let last = try open()
        #expect(try last.read { try $0.object(Secret.self, key: "k5")?.title } == "old")
    }
}

extension EncryptedStoreTests {
    /// Reading objects one by one in a long transaction keeps no memory per object read: a record of
    /// an encrypted store is opened into memory the next read reuses (it was kept until the
    /// transaction ended: a transaction reading a million objects by key held every plaintext).
    @Test func pointReadsInOneTransactionKeepNoMemoryPerObject() throws {
        let store = try Store(
            at: tmp.url, configuration: configuration(.key(try StoreKey.random())), types: [Secret.self])
        try store.write { tx in for n in 0..<2_000 { try tx.insert(secret(n)) } }
        try store.read { tx in
            #expect(try tx.object(Secret.self, key: "KEYMARK-0") == secret(0))
            let before = tx.lmdb.keptOpenedBytes
            for n in 1..<2_000 { #expect(try tx.object(Secret.self, key: "KEYMARK-\(n)") == secret(n)) }
            // Through links' and queries' reads by key too.
            let links = try (0..<2_000).map { try Link<Secret>(key: "KEYMARK-\($0)") }
            #expect(try tx.objects(linkedBy: links).count == 2_000)
            #expect(tx.lmdb.keptOpenedBytes == before, "\(tx.lmdb.keptOpenedBytes - before) bytes kept")
        }
        // Updates read each stored version by key too.
        try store.write { tx in
            _ = try tx.update(Secret.self, key: "KEYMARK-0") { $0.rank += 1 }
            let before = tx.lmdb.keptOpenedBytes
            for n in 1..<1_000 { _ = try tx.update(Secret.self, key: "KEYMARK-\(n)") { $0.rank += 1 } }
            #expect(tx.lmdb.keptOpenedBytes == before, "\(tx.lmdb.keptOpenedBytes - before) bytes kept")
        }
        #expect(try store.read { try $0.object(Secret.self, key: "KEYMARK-5")?.rank } == secret(5).rank + 1)
        #expect(try store.read { try $0.checkIntegrity().problems }.isEmpty)
    }
}

extension EncryptedStoreTests {
    /// What tools read an index with (Lode Studio, `lode-dump`): the primary keys under one whole
    /// index key, in a plain store and an encrypted one alike — a unique and a non-unique index,
    /// and values longer than an index keeps (found by their stored, truncated form). Walking an
    /// encrypted store's index in order is refused.
    @Test(arguments: [false, true])
    func anIndexEntryIsFoundByItsWholeKeyInEitherStore(encrypted: Bool) throws {
        let store = try Store(
            at: tmp.url, configuration: configuration(encrypted ? .key(try StoreKey.random()) : nil),
            types: [Secret.self])
        let long = String(repeating: "T", count: 700)
        try store.write { tx in
            for n in 0..<30 {
                try tx.insert(
                    Secret(
                        id: "k\(n)", title: n < 3 ? long + "\(n)" : "title \(n)", tag: "t\(n % 4)", rank: n))
            }
        }
        func encoded(_ value: String) throws -> [UInt8] { try KeyEncoder().encode(value) }
        func found(_ index: String, _ value: String) throws -> [String] {
            var keys: [String] = []
            try store.read { tx in
                try tx.forEachStoredIndexEntry(of: "Secret", index: index, exactly: try encoded(value)) {
                    keys.append(KeyDescription.describe($0).trimmingCharacters(in: ["\""]))
                    return true
                }
            }
            return keys.sorted()
        }
        let t1 = try found("tag", "t1")
        #expect(t1 == ["k1", "k13", "k17", "k21", "k25", "k29", "k5", "k9"], "\(t1)")
        #expect(try found("title", "title 7") == ["k7"])
        #expect(try found("title", long + "1") == ["k1"])
        #expect(try found("tag", "t9").isEmpty)
        // Stopping early.
        var seen = 0
        try store.read { tx in
            try tx.forEachStoredIndexEntry(of: "Secret", index: "tag", exactly: try encoded("t2")) { _ in
                seen += 1
                return false
            }
        }
        #expect(seen == 1)
        let walk = Result {
            try store.read { tx in try tx.forEachStoredIndexEntry(of: "Secret", index: "tag") { _, _ in true }
            }
        }
        if encrypted {
            #expect(throws: LodeError.self) { try walk.get() }
        } else {
            #expect(throws: Never.self) { try walk.get() }
        }
        #expect(throws: LodeError.indexNotFound(type: "Secret", index: "rank")) {
            try store.read { tx in
                try tx.forEachStoredIndexEntry(of: "Secret", index: "rank", exactly: [1]) { _ in true }
            }
        }
    }
}
