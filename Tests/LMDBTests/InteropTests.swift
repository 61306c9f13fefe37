import Foundation
import Testing

@testable import LMDB

/// Runs one of LMDB's own command-line tools (installed by `make deps` from lmdb-utils).
func runTool(
    _ name: String, _ arguments: [String], input: Data? = nil
) throws -> (status: Int32, output: String, error: String) {
    try runProcess("/usr/bin/env", [name] + arguments, input: input)
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

@Suite struct InteropTests {
    let tmp = TemporaryDirectory()

    @Test func mdbDumpReadsWhatTheLayerWrote() throws {
        let env = try Environment.open(at: tmp.path, options: EnvironmentOptions(mapSize: 4 << 20))
        let objects = try env.database(named: "objects")
        let index = try env.database(named: "objects.name", kind: .fixedDuplicates(width: 8))
        try env.write { txn in
            for i in [3, 1, 2] { try txn.put(b("object \(i)"), forKey: be(i), in: objects) }
            try txn.put(be(1), forKey: b("Ada"), in: index)
            try txn.put(be(3), forKey: b("Bob"), in: index)
            try txn.put(be(2), forKey: b("Bob"), in: index)
        }
        let listed = try runTool("mdb_dump", ["-l", tmp.path])
        #expect(listed.status == 0, "\(listed.error)")
        #expect(listed.output == "objects\nobjects.name\n")

        let dump = try runTool("mdb_dump", ["-s", "objects", tmp.path])
        #expect(dump.status == 0, "\(dump.error)")
        let expected =
            [
                "VERSION=3", "format=bytevalue", "database=objects", "type=btree", "mapsize=\(4 << 20)",
                "maxreaders=126", "db_pagesize=4096", "HEADER=END",
                " " + hex(be(1)), " " + hex(b("object 1")),
                " " + hex(be(2)), " " + hex(b("object 2")),
                " " + hex(be(3)), " " + hex(b("object 3")),
                "DATA=END",
            ].joined(separator: "\n") + "\n"
        #expect(dump.output == expected)

        let indexDump = try runTool("mdb_dump", ["-s", "objects.name", tmp.path])
        #expect(indexDump.output.contains("duplicates=1\ndupsort=1\ndupfixed=1\n"))
        #expect(
            indexDump.output.contains(
                [hex(b("Ada")), hex(be(1)), hex(b("Bob")), hex(be(2)), hex(b("Bob")), hex(be(3))]
                    .map { " " + $0 }.joined(separator: "\n")))
    }

    @Test func mdbStatReadsWhatTheLayerWrote() throws {
        let env = try Environment.open(at: tmp.path)
        let objects = try env.database(named: "objects")
        try env.write { txn in for i in 0..<250 { try txn.put(b("value \(i)"), forKey: be(i), in: objects) } }
        let stat = try runTool("mdb_stat", ["-e", "-s", "objects", tmp.path])
        #expect(stat.status == 0, "\(stat.error)")
        #expect(stat.output.contains("Status of objects"))
        #expect(stat.output.contains("Entries: 250"))
        #expect(stat.output.contains("Last transaction ID: \(env.info.lastTransactionID)"))
    }

    @Test func theLayerReadsAnEnvironmentMadeByMdbLoad() throws {
        // A print-format dump with a plain and a dup-sort database, as a user would hand-write it.
        // (mdb_load 0.9.24 keeps the first block's format for every later block, so one dump uses one
        // format throughout.)
        let dump = """
            VERSION=3
            format=print
            database=people
            type=btree
            mapsize=2097152
            maxreaders=126
            HEADER=END
             ada
             {"age":36}
             bob
             {"age":41}
             bin\\00\\ff
             \\01\\02
            DATA=END
            VERSION=3
            format=print
            database=tags
            type=btree
            mapsize=2097152
            maxreaders=126
            duplicates=1
            dupsort=1
            HEADER=END
             color
             blue
             color
             red
            DATA=END

            """
        let load = try runTool("mdb_load", [tmp.path], input: Data(dump.utf8))
        #expect(load.status == 0, "\(load.error)")
        let env = try Environment.open(at: tmp.path)
        let people = try env.database(named: "people", create: false)
        let tags = try env.database(named: "tags", kind: .duplicates, create: false)
        #expect(people.kind == .plain)
        try env.read { txn throws in
            #expect(
                try txn.entries(in: people).map(\.key) == [
                    b("ada"), [0x62, 0x69, 0x6e, 0x00, 0xff], b("bob"),
                ])
            #expect(try txn.get(b("bob"), in: people) == b(#"{"age":41}"#))
            #expect(try txn.get([0x62, 0x69, 0x6e, 0x00, 0xff], in: people) == [1, 2])
            let colors = try txn.values(forKey: b("color"), in: tags)
            #expect(colors == [b("blue"), b("red")], "\(colors.map { String(decoding: $0, as: UTF8.self) })")
        }
        #expect(env.info.mapSize >= 2_097_152)
    }

    @Test func aDumpOfTheLayersStoreLoadsBackWithMdbLoad() throws {
        let env = try Environment.open(
            at: tmp.subpath("src"), options: EnvironmentOptions(createDirectory: true))
        let objects = try env.database(named: "objects")
        let index = try env.database(named: "index", kind: .duplicates)
        try env.write { txn in
            for i in 0..<300 {
                try txn.put(payload(i, size: 100), forKey: be(i), in: objects)
                try txn.put(be(i), forKey: b("bucket \(i % 7)"), in: index)
            }
        }
        let dump = try runTool("mdb_dump", ["-a", tmp.subpath("src")])
        #expect(dump.status == 0)
        try FileManager.default.createDirectory(atPath: tmp.subpath("dst"), withIntermediateDirectories: true)
        let load = try runTool("mdb_load", [tmp.subpath("dst")], input: Data(dump.output.utf8))
        #expect(load.status == 0, "\(load.error)")
        let copy = try Environment.open(at: tmp.subpath("dst"))
        let copiedObjects = try copy.database(named: "objects", create: false)
        let copiedIndex = try copy.database(named: "index", create: false)
        #expect(copiedIndex.kind == .duplicates)
        let original = try env.read { txn in
            (try txn.entries(in: objects).map { $0 }, try txn.entries(in: index).map { $0 })
        }
        let loaded = try copy.read { txn in
            (try txn.entries(in: copiedObjects).map { $0 }, try txn.entries(in: copiedIndex).map { $0 })
        }
        #expect(original.0 == loaded.0)
        #expect(original.1 == loaded.1)
    }
}
