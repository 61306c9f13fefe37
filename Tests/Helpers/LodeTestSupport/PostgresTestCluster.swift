import Foundation
import Synchronization

/// A private PostgreSQL cluster for the sync tests: `initdb` in a temporary directory, a server on a
/// Unix socket in that directory and on a loopback port, stopped and removed when the process exits.
/// As root it runs the server as the `postgres` user (PostgreSQL refuses to run as root). Clusters
/// left by a test process that was killed are stopped and removed by the next one.
public final class PostgresTestCluster: @unchecked Sendable {
    /// The cluster of this process, started on first use.
    public static let shared: Result<PostgresTestCluster, Error> = Result { try PostgresTestCluster() }

    /// The directory holding the data directory, the socket and the log.
    public let directory: URL
    /// The directory of the server's Unix socket.
    public let socketDirectory: String
    /// The loopback TCP port.
    public let port: Int
    /// The password of the `lode` user, for TCP connections (which require it).
    public let password = "lode-test-password"
    private let binaries: URL
    private let runsAsPostgres: Bool
    private let lock = NSLock()
    private var databaseCounter = 0

    private static let registry = URL(fileURLWithPath: NSTemporaryDirectory())
        .appendingPathComponent("lode-pg-clusters")

    /// A cluster of its own (for tests that stop or restart the server), stopped and removed when
    /// the process exits.
    public init() throws {
        Self.removeOrphans()
        guard let binaries = Self.findBinaries() else {
            throw ClusterError("PostgreSQL's server binaries are missing (make deps installs postgresql)")
        }
        self.binaries = binaries
        runsAsPostgres = getuid() == 0
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("lode-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        socketDirectory = directory.path
        port = Self.freePort()
        if runsAsPostgres { try Self.run("/bin/chown", ["postgres:postgres", directory.path]) }
        try FileManager.default.createDirectory(at: Self.registry, withIntermediateDirectories: true)
        try Self.started.withLock { _ in
            let entry = Self.registry.appendingPathComponent("\(getpid())")
            let listed = (try? String(contentsOf: entry, encoding: .utf8)) ?? ""
            try (listed + directory.path + "\n").write(to: entry, atomically: true, encoding: .utf8)
        }
        let data = directory.appendingPathComponent("data").path
        try runServerTool(
            "initdb", ["-D", data, "-U", "lode", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"])
        let hba = """
            local all all trust
            host all all 127.0.0.1/32 scram-sha-256
            host all all 10.0.0.0/8 scram-sha-256
            """
        try hba.write(toFile: data + "/pg_hba.conf", atomically: false, encoding: .utf8)
        try start()
        _ = try psql("ALTER USER lode PASSWORD '\(password)'")
        Self.started.withLock { $0.append(self) }
        atexit { PostgresTestCluster.stopAll() }
    }

    /// Starts the server (after ``stop(mode:)``).
    public func start() throws {
        let data = directory.appendingPathComponent("data").path
        try runServerTool(
            "pg_ctl",
            [
                "-D", data, "-l", directory.appendingPathComponent("log").path, "-w", "-t", "60",
                "-o",
                "-k \(socketDirectory) -p \(port) -c listen_addresses=* -c fsync=off "
                    + "-c synchronous_commit=on -c full_page_writes=off -c max_connections=300", "start",
            ])
    }

    /// Stops the server: `fast` ends sessions and shuts down cleanly, `immediate` as if it crashed.
    public func stop(mode: String = "fast") throws {
        try runServerTool(
            "pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-w", "-m", mode, "stop"])
    }

    /// A new database of its own, as a connection string over the Unix socket.
    public func makeDatabase() throws -> String {
        let name = lock.withLock {
            databaseCounter += 1
            return "lode_test_\(getpid())_\(databaseCounter)"
        }
        _ = try psql("CREATE DATABASE \(name)")
        return connectionString(database: name)
    }

    /// The connection string of `database` over the Unix socket (no password needed there).
    public func connectionString(database: String) -> String {
        "host=\(socketDirectory) port=\(port) dbname=\(database) user=lode"
    }

    /// The database name in a connection string this cluster made.
    public static func database(of connectionString: String) -> String {
        connectionString.split(separator: " ").first { $0.hasPrefix("dbname=") }.map {
            String($0.dropFirst(7))
        }
            ?? "postgres"
    }

    /// Runs `sql` with `psql` (stopping at the first error) and returns what it printed, unaligned
    /// and without headers.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try Self.run(
            binaries.appendingPathComponent("psql").path,
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-p", "\(port)", "-U",
                "lode", "-d", database, "-c", sql,
            ])
    }

    private func runServerTool(_ tool: String, _ arguments: [String]) throws {
        let path = binaries.appendingPathComponent(tool).path
        if runsAsPostgres {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        } else {
            try Self.run(path, arguments)
        }
    }

    /// Every cluster this process started.
    private static let started = Mutex<[PostgresTestCluster]>([])

    private static func stopAll() {
        let clusters = started.withLock { clusters in
            defer { clusters = [] }
            return clusters
        }
        for cluster in clusters {
            try? cluster.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: cluster.directory)
        }
        try? FileManager.default.removeItem(at: registry.appendingPathComponent("\(getpid())"))
    }

    /// Stops and removes the clusters of test processes that are gone.
    private static func removeOrphans() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: registry.path) else {
            return
        }
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let file = registry.appendingPathComponent(entry)
            let paths = ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n")
            for path in paths.map(String.init) {
                if let pidLine = try? String(contentsOfFile: path + "/data/postmaster.pid", encoding: .utf8)
                    .split(separator: "\n").first,
                    let postmaster = Int32(pidLine)
                {
                    kill(postmaster, SIGQUIT)
                    usleep(200_000)
                }
                try? FileManager.default.removeItem(atPath: path)
            }
            try? FileManager.default.removeItem(at: file)
        }
    }

    private static func findBinaries() -> URL? {
        if let path = ProcessInfo.processInfo.environment["LODE_PG_BIN"] { return URL(fileURLWithPath: path) }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted().last.map {
            URL(fileURLWithPath: "\(root)/\($0)/bin")
        }
    }

    private static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `executable` to its end with posix_spawn and waitpid, its output in files (Foundation's
    /// `Process` did not see `runuser` end once `pg_ctl` had left a server running).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let base = NSTemporaryDirectory() + "lode-pg-run-\(UUID())"
        let outputPath = base + ".out"
        let errorPath = base + ".err"
        defer {
            unlink(outputPath)
            unlink(errorPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else of this process goes to the server `pg_ctl` leaves running: a pipe another
        // test had open at this moment would keep its write end held for the server's life, and that
        // test would wait for its end of file for ever (seen: a sync run stalled 45 minutes).
        // (glibc's `posix_spawn_file_actions_addclosefrom_np`, 2.34 and later, is not in Swift's
        // Glibc module: it is looked up by name.)
        typealias CloseFrom =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(
            UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        // From `/`: the server's user may not be able to read the current directory.
        let argv =
            (["/bin/sh", "-c", "cd / && exec \"$0\" \"$@\"", executable] + arguments).map { strdup($0) } + [
                nil
            ]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        guard spawned == 0 else { throw ClusterError("could not start \(executable): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let printed = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let complained = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw ClusterError(
                "\((executable as NSString).lastPathComponent) \(arguments.first ?? "") failed "
                    + "(status \(status)): \(complained)")
        }
        return printed
    }

    /// A cluster command that failed.
    public struct ClusterError: Error, CustomStringConvertible {
        /// What failed.
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
