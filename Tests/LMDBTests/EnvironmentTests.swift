import Foundation
import Testing

@testable import LMDB

@Suite struct EnvironmentTests {
    @Test func createsDirectoryAndReopensWithData() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.subpath("a/b/store")
        do {
            let env = try Environment.open(at: path, options: EnvironmentOptions(createDirectory: true))
            let db = try env.database(named: "things")
            try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
        }
        #expect(FileManager.default.fileExists(atPath: path + "/data.mdb"))
        let env = try Environment.open(at: path)
        let db = try env.database(named: "things", create: false)
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("v"))
    }

    @Test func registryReturnsTheOpenEnvironmentWhateverThePathSpelling() throws {
        let tmp = TemporaryDirectory()
        let first = try Environment.open(at: tmp.path)
        let link = tmp.path + "-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: tmp.path)
        defer { try? FileManager.default.removeItem(atPath: link) }
        let second = try Environment.open(at: tmp.path + "/./")
        let third = try Environment.open(at: link)
        #expect(first === second)
        #expect(first === third)
    }

    @Test func closingAndReopeningKeepsLiveReadersOfOtherProcessesIntact() throws {
        // A reader in this process must keep its slot while the same path is "opened again": the
        // registry hands back the same environment instead of a second MDB_env whose close would drop
        // the first one's locks.
        let tmp = TemporaryDirectory()
        let env = try Environment.open(at: tmp.path)
        let db = try env.database(named: "d")
        try env.write { try $0.put(b("1"), forKey: b("k"), in: db) }
        try env.read { _ in
            do { _ = try Environment.open(at: tmp.path) }
            let slots = env.readers().filter { $0.processID == getpid() && $0.transactionID != nil }
            #expect(slots.count == 1)
        }
    }

    @Test func readOnlyRegistryConflictIsRefused() throws {
        let tmp = TemporaryDirectory()
        do { _ = try Environment.open(at: tmp.path) }  // creates data.mdb
        let readOnly = try Environment.open(at: tmp.path, options: EnvironmentOptions(readOnly: true))
        let error = lmdbError { _ = try Environment.open(at: tmp.path) }
        #expect(error?.code == .incompatibleOptions)
        withExtendedLifetime(readOnly) {}
    }

    @Test func missingDirectoryIsASpecificErrorAndCreatesNothing() throws {
        let tmp = TemporaryDirectory()
        let path = tmp.subpath("nope")
        let error = lmdbError { _ = try Environment.open(at: path) }
        #expect(error?.code == .pathNotFound)
        #expect(error?.message.contains(path) == true)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aFileIsNotADirectory() throws {
        let tmp = TemporaryDirectory()
        let file = tmp.subpath("plain.txt")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
        let error = lmdbError { _ = try Environment.open(at: file) }
        #expect(error?.code == .notADirectory)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data("hello".utf8))
    }

    @Test func aDataFileThatIsNotLMDBIsRefusedAndLeftAlone() throws {
        let tmp = TemporaryDirectory()
        let garbage = Data((0..<16384).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let dataFile = URL(fileURLWithPath: tmp.subpath("data.mdb"))
        try garbage.write(to: dataFile)
        let error = lmdbError { _ = try Environment.open(at: tmp.path) }
        #expect(error?.code == .invalid)
        #expect(error?.message.contains("not an LMDB data file") == true)
        #expect(try Data(contentsOf: dataFile) == garbage)
    }

    @Test func readOnlyOpenOfAnEmptyDirectoryIsNotAnEnvironment() throws {
        let tmp = TemporaryDirectory()
        let error = lmdbError {
            _ = try Environment.open(at: tmp.path, options: EnvironmentOptions(readOnly: true))
        }
        #expect(error?.code == .notAnEnvironment)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)
    }

    @Test func readOnlyEnvironmentRefusesWritesAndWritesNothing() throws {
        let tmp = TemporaryDirectory()
        let source = tmp.subpath("store")
        do {
            let env = try Environment.open(at: source, options: EnvironmentOptions(createDirectory: true))
            let db = try env.database(named: "d")
            try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }
        }
        // Another path to the same files would hit the registry; copy the store instead.
        let before = try Data(contentsOf: URL(fileURLWithPath: source + "/data.mdb"))
        let env = try Environment.open(at: source, options: EnvironmentOptions(readOnly: true))
        #expect(lmdbError { try env.write { _ in } }?.code == .readOnly)
        #expect(lmdbError { _ = try env.database(named: "new") }?.code == .notFound)
        #expect(lmdbError { try env.sync() }?.code == .readOnly)
        let db = try env.database(named: "d")
        #expect(try env.read { try $0.get(b("k"), in: db) } == b("v"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: source + "/data.mdb")) == before)
    }

    @Test func optionsAreValidated() {
        let tmp = TemporaryDirectory()
        let error = lmdbError {
            _ = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 0))
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test func mapSizeIsRoundedAndAStoredLargerSizeIsKept() throws {
        let tmp = TemporaryDirectory()
        do {
            let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 8 << 20 | 123))
            #expect(env.info.mapSize == (8 << 20) + 4096)
            let db = try env.database(named: "d")
            try env.write { try $0.put(b("v"), forKey: b("k"), in: db) }  // stores the size
        }
        let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 1 << 20))
        #expect(env.info.mapSize == (8 << 20) + 4096)
    }

    @Test func infoStatisticsAndReaders() throws {
        let tmp = TemporaryDirectory()
        let env = try Environment.open(at: tmp.path)
        #expect(env.maxKeySize == 511)
        #expect(env.pageSize == 4096)
        let db = try env.database(named: "d")
        let before = env.info.lastTransactionID
        try env.write { txn throws in for i in 0..<100 { try txn.put(be(i), forKey: be(i), in: db) } }
        #expect(env.info.lastTransactionID == before + 1)
        #expect(env.statistics.entries == 1)  // the main database holds one name
        try env.read { txn throws in
            let stats = try txn.statistics(of: db)
            #expect(stats.entries == 100)
            #expect(stats.depth >= 1)
            let mine = env.readers().filter { $0.processID == getpid() && $0.transactionID == txn.id }
            #expect(mine.count == 1)
            #expect(mine.first?.processIsAlive == true)
        }
    }

    @Test func durabilityModesAllCommitAndReopen() throws {
        for durability in Durability.allCases {
            let tmp = TemporaryDirectory()
            do {
                let env = try Environment.open(
                    at: tmp.path, options: EnvironmentOptions(durability: durability))
                let db = try env.database(named: "d")
                try env.write { try $0.put(b("\(durability)"), forKey: b("k"), in: db) }
                try env.sync()
            }
            let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(durability: durability))
            let db = try env.database(named: "d")
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("\(durability)"), "\(durability)")
        }
    }

    @Test func copyAndCompactingCopy() throws {
        let tmp = TemporaryDirectory()
        let env = try Environment.open(
            at: tmp.subpath("src"), options: EnvironmentOptions(createDirectory: true))
        let db = try env.database(named: "d")
        try env.write { txn throws in
            for i in 0..<2000 { try txn.put([UInt8](repeating: 7, count: 500), forKey: be(i), in: db) }
        }
        try env.write { txn throws in for i in 0..<1900 { try txn.delete(be(i), in: db) } }
        try env.copy(to: tmp.subpath("plain"))
        try env.copy(to: tmp.subpath("compact"), compacting: true)
        let plainSize =
            try FileManager.default.attributesOfItem(atPath: tmp.subpath("plain/data.mdb"))[.size] as! Int
        let compactSize =
            try FileManager.default.attributesOfItem(atPath: tmp.subpath("compact/data.mdb"))[.size] as! Int
        #expect(compactSize < plainSize)
        let copy = try Environment.open(at: tmp.subpath("compact"))
        let copied = try copy.database(named: "d", create: false)
        #expect(try copy.read { try $0.count(in: copied) } == 100)
        #expect(lmdbError { try env.copy(to: tmp.subpath("compact")) }?.code == .system(EEXIST))
    }

    @Test func databasesOpenOnceAndCheckTheirKind() throws {
        let tmp = TemporaryDirectory()
        let env = try Environment.open(at: tmp.path)
        let plain = try env.database(named: "plain")
        #expect(try env.database(named: "plain") == plain)
        #expect(lmdbError { _ = try env.database(named: "plain", kind: .duplicates) }?.code == .incompatible)
        #expect(lmdbError { _ = try env.database(named: "missing", create: false) }?.code == .notFound)
        #expect(lmdbError { _ = try env.database(named: "") }?.code == .invalidArgument)
        let fixed = try env.database(named: "fixed", kind: .fixedDuplicates(width: 8))
        #expect(fixed.fixedValueWidth == 8)
        #expect(try env.database(named: nil) == env.mainDatabase)
    }
}
