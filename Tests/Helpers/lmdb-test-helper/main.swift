// A second process for the LMDB layer's tests: it writes, holds transactions open and gets killed,
// so the tests can check what another process sees. Usage: lmdb-test-helper COMMAND DIR [ARGS].
import CLMDB
import Foundation
import LMDB

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a line to standard output at once (the parent waits for it).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: lmdb-test-helper COMMAND DIR [ARGS]\n".utf8))
    exit(2)
}
let command = arguments[1]
let directory = arguments[2]

func key(_ i: Int) -> [UInt8] { Array(String(format: "key-%08d", i).utf8) }

/// The "A tour of the LMDB layer" article's example, as written (run in the directory given).
func readmeTour() throws {
    let env = try Environment.open(
        at: "people-store",
        options: EnvironmentOptions(createDirectory: true))
    let people = try env.database(named: "people")  // key → value
    let byCity = try env.database(named: "people.city", kind: .duplicates)  // key → sorted values

    try env.write { txn in  // commits when the closure returns,
        try txn.put(Array("Ada".utf8), forKey: [0, 0, 0, 1], in: people)  // aborts when it throws
        try txn.put([0, 0, 0, 1], forKey: Array("London".utf8), in: byCity)
    }

    let name = try env.read { txn in try txn.get([0, 0, 0, 1], in: people) }  // [UInt8]? (a copy)
    print(String(decoding: name ?? [], as: UTF8.self))

    try env.read { txn in
        for entry in try txn.entries(in: byCity, from: Array("L".utf8)) {  // cursor as a Sequence
            print(entry.key, entry.value)
        }
    }
}

do {
    switch command {
    case "fill":
        // fill DIR MAPSIZE COUNT SIZE: opens with MAPSIZE and writes COUNT values of SIZE bytes.
        let mapSize = Int(arguments[3])!
        let count = Int(arguments[4])!
        let size = Int(arguments[5])!
        let env = try Environment.open(at: directory, options: EnvironmentOptions(mapSize: mapSize))
        let db = try env.database(named: "data")
        try env.write { txn in
            for i in 0..<count {
                try txn.put([UInt8](repeating: UInt8(i % 251), count: size), forKey: key(i), in: db)
            }
        }
        say("done \(env.info.mapSize)")
    case "put":
        // put DIR KEY VALUE: one committed put into "data".
        let env = try Environment.open(at: directory, options: EnvironmentOptions(mapSize: 1 << 20))
        let db = try env.database(named: "data")
        try env.write { try $0.put(Array(arguments[4].utf8), forKey: Array(arguments[3].utf8), in: db) }
        say("done")
    case "hold-write":
        // hold-write DIR: puts "crash" inside a write transaction, says "ready", then waits to be killed.
        let env = try Environment.open(at: directory, options: EnvironmentOptions(mapSize: 1 << 20))
        let db = try env.database(named: "data")
        try env.write { txn in
            try txn.put(Array("uncommitted".utf8), forKey: Array("crash".utf8), in: db)
            say("ready")
            while true { sleep(60) }
        }
    case "hold-read":
        // hold-read DIR: opens a read transaction, says "ready", then waits to be killed.
        let env = try Environment.open(at: directory, options: EnvironmentOptions(mapSize: 1 << 20))
        try env.read { _ in
            say("ready")
            while true { sleep(60) }
        }
    case "hold-all-reads":
        // hold-all-reads DIR: takes every free reader slot with nested read transactions, says
        // "ready N", then waits to be killed.
        let env = try Environment.open(
            at: directory, options: EnvironmentOptions(mapSize: 1 << 20, readTransactionPoolSize: 0))
        let free = env.info.maxReaders - env.readers().count
        func hold(_ depth: Int) throws {
            if depth == free {
                say("ready \(free)")
                while true { sleep(60) }
            }
            try env.read { _ in try hold(depth + 1) }
        }
        try hold(0)
    case "read-under-a-lock":
        // read-under-a-lock DIR: reads the environment while a watched lock is held; a debug build
        // stops there (the lock watch).
        let env = try Environment.open(at: directory, options: EnvironmentOptions(createDirectory: true))
        LockWatch.taken("the helper's lock")
        try env.read { _ in }
        LockWatch.released()
        say("read")
    case "readme-tour":
        // readme-tour DIR: the LMDB tour, as written, in DIR.
        guard FileManager.default.changeCurrentDirectoryPath(directory) else { exit(1) }
        try readmeTour()
    case "openers":
        // openers DIR: the process, other than this one, that has the environment open, or "none".
        let openers = try Environment.openers(at: directory)
        say("opened by \(openers.otherProcess.map(String.init) ?? "none")")
    case "open":
        // open DIR: opens the environment (read-write) and prints its info, or the error.
        let env = try Environment.open(at: directory)
        say("opened \(env.info.lastTransactionID)")
    default:
        FileHandle.standardError.write(Data("unknown command \(command)\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
