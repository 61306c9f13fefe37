import Dispatch
import Foundation
import LodeStore

/// The command-line front end of a sync client, for an executable of the app's own that names its
/// synced types (the JSON on the server becomes objects only through them):
///
/// ```swift
/// // Sources/app-sync/main.swift
/// import LodeSync
/// exit(SyncCommand(types: [.type(Project.self), .type(Task.self)]).run(CommandLine.arguments))
/// ```
///
/// ```
/// app-sync setup [--schema S] [--index T.F]... create the server tables (idempotent), with an index
///                                              on field F of type T for partial-sync filters
/// app-sync run STORE [--schema S] [--once]     keep STORE in sync, printing its status; Ctrl-C stops
/// app-sync status STORE                        what STORE's sync state says, without connecting
/// ```
///
/// The server comes from `LODE_SYNC_SERVER` (a libpq connection string; put the password in a
/// password file, not on a command line other users can see) or `--server`. It is never printed.
public struct SyncCommand: Sendable {
    /// The synced types.
    public let types: [SyncedType]
    /// The client's options for `run`.
    public var options: SyncOptions

    /// A command for `types`.
    public init(types: [SyncedType], options: SyncOptions = SyncOptions()) {
        self.types = types
        self.options = options
    }

    /// Runs the command in `arguments` (the program's name first) and returns the exit status: 0 on
    /// success (and for `--help`, `-h` or `help`, which print the usage), 1 when sync failed, 2 for a
    /// malformed command line.
    public func run(_ arguments: [String]) -> Int32 {
        let program = (arguments.first as NSString?)?.lastPathComponent ?? "lode-sync"
        // Help is asked for, not a mistake: the usage on standard output, and success.
        if arguments.dropFirst().contains(where: { ["--help", "-h"].contains($0) })
            || arguments.dropFirst().first == "help"
        {
            print(usage(program))
            return 0
        }
        do {
            let parsed = try Arguments(Array(arguments.dropFirst()))
            switch parsed.command {
            case "setup":
                let names = types.map(\.name)
                let indexes = try parsed.indexes.map { spec -> SyncServer.FilterIndex in
                    // The longest type name that prefixes it: type names may hold dots.
                    guard
                        let type = names.filter({ spec.hasPrefix($0 + ".") && spec.count > $0.count + 1 })
                            .max(by: { $0.count < $1.count })
                    else {
                        throw UsageError(
                            "--index \"\(spec)\" does not name a synced type and a field (TYPE.FIELD)")
                    }
                    let path = spec.dropFirst(type.count + 1).split(
                        separator: ".", omittingEmptySubsequences: false
                    )
                    .map(String.init)
                    return SyncServer.FilterIndex(type: type, path: path)
                }
                try server(parsed).setUp(typeNames: names, filterIndexes: indexes)
                print(
                    "set up \(types.count) type(s) in schema \(parsed.schema)"
                        + (indexes.isEmpty ? "" : " with \(indexes.count) filter index(es)"))
            case "run": try runClient(parsed)
            case "status": try printStatus(parsed)
            default: throw UsageError("unknown command \"\(parsed.command)\"")
            }
            return 0
        } catch let error as UsageError {
            printError("\(program): \(error.message)\n\(usage(program))")
            return 2
        } catch {
            printError("\(program): \(error)")
            return 1
        }
    }

    private func usage(_ program: String) -> String {
        """
        usage: \(program) setup [--server CONNINFO] [--schema NAME] [--index TYPE.FIELD]...
               \(program) run STORE [--server CONNINFO] [--schema NAME] [--once] [--timeout SECONDS]
               \(program) status STORE
        The server's connection string comes from LODE_SYNC_SERVER unless --server is given.
        """
    }

    private func server(_ arguments: Arguments) throws -> SyncServer {
        guard let connection = arguments.server ?? ProcessInfo.processInfo.environment["LODE_SYNC_SERVER"]
        else {
            throw UsageError("no server: set LODE_SYNC_SERVER or pass --server")
        }
        return SyncServer(connectionString: connection, schema: arguments.schema)
    }

    private func openStore(_ arguments: Arguments) throws -> Store {
        guard let path = arguments.store else { throw UsageError("\(arguments.command) needs a STORE") }
        return try Store(atPath: path, types: types.map(\.operations.persistableType))
    }

    private func runClient(_ arguments: Arguments) throws {
        let server = try server(arguments)
        let store = try openStore(arguments)
        defer { store.close() }
        let client = try SyncClient(store: store, server: server, types: types, options: options)
        client.start()
        defer { client.stop() }
        if arguments.once {
            // The status while the round runs (a first download's progress), then the last line.
            let done = DispatchSemaphore(value: 0)
            let printer = Thread {
                var output = StatusOutput()
                repeat {
                    output.show(client.status, final: false)
                } while done.wait(timeout: .now() + .milliseconds(100)) == .timedOut
                done.signal()
            }
            printer.start()
            defer {
                done.signal()
                done.wait()
            }
            try client.synchronize(timeout: .seconds(arguments.timeout))
            done.signal()
            done.wait()
            var output = StatusOutput()
            output.show(client.status, final: true)
            return
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        let printer = Thread {
            var output = StatusOutput()
            while true {
                output.show(client.status, final: false)
                if stop.wait(timeout: .now() + .milliseconds(100)) == .success {
                    stop.signal()
                    return
                }
            }
        }
        printer.start()
        stop.wait()
        stop.signal()
        print("stopping")
    }

    /// One line of status, as `run` prints it.
    static func line(_ status: SyncStatus) -> String {
        var parts = [
            status.isConnected ? "connected" : "disconnected", "pending uploads \(status.pendingUploads)",
            "server version \(status.lastServerVersion)",
        ]
        if let download = status.download {
            parts.append(
                download.total > 0
                    ? "downloading \(download.applied) of \(download.total) rows (\(download.applied * 100 / download.total)%)"
                    : "downloading \(download.applied) rows")
        }
        if status.skippedRows > 0 { parts.append("\(status.skippedRows) row(s) skipped") }
        if let error = status.lastError { parts.append("last error: \(error)") }
        return parts.joined(separator: " · ")
    }

    private func printStatus(_ arguments: Arguments) throws {
        guard let path = arguments.store else { throw UsageError("status needs a STORE") }
        // Read-only and without registering types: any synced store, whatever its types.
        let store = try Store(atPath: path, configuration: StoreConfiguration(readOnly: true))
        defer { store.close() }
        let names = try SyncState.syncedTypes(in: store)
        let state = try SyncState(store: store, types: names, create: false)
        try store.read { tx in
            let client = try state.text(SyncState.clientKey, in: tx.lmdb)
            print("client: \(client ?? "(never synced)")")
            print("server version downloaded: \(try state.downloadCursor(in: tx.lmdb))")
            let pending = try PendingUploads.count(in: tx, state: state, types: names)
            print("objects waiting to upload: \(pending)")
            if let batch = try state.inflight(in: tx.lmdb) {
                print("batch in flight: #\(batch.number), \(batch.entries.count) object(s)")
            }
            for (index, name) in names.enumerated() {
                let known = try tx.lmdb.count(in: state.shadows[index])
                print("\(name): \(known) object(s) known on the server")
            }
        }
    }

    private func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// A malformed command line.
    struct UsageError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// The parsed command line.
    struct Arguments {
        var command = ""
        var store: String?
        var server: String?
        var schema = "lode"
        var once = false
        var timeout: Int64 = 60
        /// `--index TYPE.FIELD` of `setup`, as given.
        var indexes: [String] = []

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            guard let command = rest.popFirst() else { throw UsageError("no command") }
            self.command = command
            func value(_ option: String) throws -> String {
                guard let value = rest.popFirst() else { throw UsageError("\(option) needs a value") }
                return value
            }
            while let argument = rest.popFirst() {
                switch argument {
                case "--server": server = try value(argument)
                case "--schema": schema = try value(argument)
                case "--once": once = true
                case "--index":
                    guard command == "setup" else { throw UsageError("--index is an option of setup") }
                    indexes.append(try value(argument))
                case "--timeout":
                    let text = try value(argument)
                    guard let seconds = Int64(text), seconds > 0 else {
                        throw UsageError("--timeout takes a number of seconds, not \"\(text)\"")
                    }
                    timeout = seconds
                default:
                    guard !argument.hasPrefix("-"), store == nil, command != "setup" else {
                        throw UsageError("unexpected argument \"\(argument)\"")
                    }
                    store = argument
                }
            }
        }
    }
}
