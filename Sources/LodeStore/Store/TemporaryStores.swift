import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The directories of this process's temporary stores, removed when their store closes or at exit.
///
/// Lock order: `lock` is a leaf; files are removed after it is released.
final class TemporaryStores: @unchecked Sendable {
    // @unchecked: `live` and `exitHandlerInstalled` are only touched under `lock`.
    static let shared = TemporaryStores()

    /// The name every temporary store directory starts with, followed by the process id.
    static let prefix = "lode-temporary-"

    private let lock = LodeLock("temporary stores")
    private var live = Set<String>()
    private var exitHandlerInstalled = false
    private var swept = false

    /// Where temporary stores go (see ``Store/temporary(configuration:types:migrations:)``).
    static func root() -> URL {
        if let chosen = ProcessInfo.processInfo.environment["LODE_TEMPORARY_DIRECTORY"], !chosen.isEmpty {
            return URL(fileURLWithPath: chosen, isDirectory: true)
        }
        if isMemoryBacked("/dev/shm"), access("/dev/shm", W_OK) == 0 {
            return URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        }
        return FileManager.default.temporaryDirectory
    }

    /// True when `path` is on a tmpfs (or ramfs) file system: the type of the mount with the longest
    /// mount point that contains it, as `/proc/self/mounts` lists them.
    static func isMemoryBacked(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else {
            return false
        }
        var best: (point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = String(fields[1])
            let contains = point == "/" || path == point || path.hasPrefix(point + "/")
            if contains, point.count > (best?.point.count ?? -1) { best = (point, String(fields[2])) }
        }
        return best.map { $0.type == "tmpfs" || $0.type == "ramfs" } ?? false
    }

    /// Makes a new owner-only directory for a temporary store in `root` and remembers it.
    func makeDirectory(in root: URL = TemporaryStores.root()) throws -> URL {
        let sweep = lock.withLock { () -> Bool in
            defer { swept = true }
            return !swept
        }
        if sweep { Self.removeAbandoned(in: root) }
        let directory = root.appendingPathComponent("\(Self.prefix)\(getpid())-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw LodeError.storage(
                StorageFailure(
                    reason: .other, operation: "mkdir",
                    message:
                        "cannot make a temporary store directory in \(root.path): \(error.localizedDescription)"
                ))
        }
        let install = lock.withLock { () -> Bool in
            live.insert(directory.path)
            defer { exitHandlerInstalled = true }
            return !exitHandlerInstalled
        }
        if install { atexit { TemporaryStores.shared.removeAll() } }
        return directory
    }

    /// Removes a temporary store's directory (once; later calls do nothing).
    func remove(_ path: String) {
        guard lock.withLock({ live.remove(path) }) != nil else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes every directory still here (at process exit).
    func removeAll() {
        let paths = lock.withLock { () -> Set<String> in
            defer { live.removeAll() }
            return live
        }
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Removes directories that processes which no longer run left in `root` (their own user's only).
    static func removeAbandoned(in root: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]), pid != getpid() else {
                continue
            }
            let path = root.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0, info.st_uid == getuid(), kill(pid, 0) != 0, errno == ESRCH else {
                continue
            }
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
