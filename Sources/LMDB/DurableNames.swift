import CLMDB
import Foundation

/// New names made to survive a power cut. A file system keeps a new file, directory or rename across
/// a power cut only once the directory holding the name is synced; LMDB syncs its data file but
/// never a directory, and writes a new data file's two meta pages without syncing them. The
/// power-cut tests (docs/POWERCUT.md) found both: a store created and committed to with full
/// durability could be gone after a power cut, or be a data file without a valid meta page.
enum DurableNames {
    /// `fsync` of the directory at `path`. A file system that cannot sync directories (EINVAL) has
    /// nothing to do.
    static func syncDirectory(_ path: String, operation: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (open \(path))")
        }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 && errno != EINVAL {
            throw LMDBError(returnCode: errno, operation: operation + " (fsync \(path))")
        }
    }

    /// Creates the directory `path` and its missing parents with `mode`, each name synced into its
    /// parent directory.
    static func createDirectory(_ path: String, mode: mode_t, operation: String) throws {
        var missing: [String] = []
        var current = URL(fileURLWithPath: path).standardizedFileURL.path
        var info = stat()
        while stat(current, &info) != 0 {
            guard errno == ENOENT else { throw LMDBError(returnCode: errno, operation: operation) }
            missing.append(current)
            let parent = (current as NSString).deletingLastPathComponent
            if parent == current || parent.isEmpty { break }
            current = parent
        }
        for directory in missing.reversed() {
            if mkdir(directory, mode) != 0 {
                guard errno == EEXIST else {
                    throw LMDBError(
                        .system(errno), operation: operation,
                        message: "cannot create directory \(directory): \(String(cString: strerror(errno)))")
                }
            } else {
                chmod(directory, mode)  // exactly the mode asked for, whatever the umask
            }
            try syncDirectory((directory as NSString).deletingLastPathComponent, operation: operation)
        }
    }

    /// Creates `directory/data.mdb` whole or not at all: LMDB makes it under a temporary name, it is
    /// synced, linked to `data.mdb` (unless another process got there first, whose file then stays)
    /// and the directory synced.
    static func createDataFile(in directory: String, mapSize: Int, fileMode: mode_t, operation: String) throws
    {
        let temporary = directory + "/data.mdb.creating-\(getpid())"
        unlink(temporary)
        unlink(temporary + "-lock")
        defer {
            unlink(temporary)
            unlink(temporary + "-lock")
        }
        var env: OpaquePointer?
        var rc = mdb_env_create(&env)
        guard rc == 0, let env else {
            throw LMDBError(returnCode: rc, operation: operation + " (mdb_env_create)")
        }
        rc = mdb_env_set_mapsize(env, mapSize)
        if rc == 0 { rc = mdb_env_open(env, temporary, UInt32(MDB_NOSUBDIR), mdb_mode_t(fileMode)) }
        if rc == 0 { rc = mdb_env_sync(env, 1) }
        mdb_env_close(env)
        guard rc == 0 else {
            throw LMDBError(returnCode: rc, operation: operation + " (creating \(directory)/data.mdb)")
        }
        if link(temporary, directory + "/data.mdb") != 0 && errno != EEXIST {
            throw LMDBError(
                .system(errno), operation: operation,
                message: "cannot create \(directory)/data.mdb: \(String(cString: strerror(errno)))")
        }
        try syncDirectory(directory, operation: operation)
    }
}

/// Notices a system crash (a power cut, a kernel crash) that happened while a process had the
/// environment open in a mode that does not sync every commit (`noSync`, `writeMapAsync`,
/// `writeMapNoSync`): such a crash can leave the data file damaged, since the disk wrote its pages
/// in any order, and LMDB, which trusts its file, may crash reading it.
///
/// Each such process keeps a marker `.unsynced-PID` in the environment's directory, holding the
/// boot id of the running system (`/proc/sys/kernel/random/boot_id`), on disk before its first
/// write; it syncs the environment and removes the marker when it closes. A marker of an earlier
/// boot means the system went down while that process wrote; one of this boot whose process is
/// gone means only the process died, which loses nothing the kernel accepted, and is removed.
enum UnsyncedSessions {
    static let prefix = ".unsynced-"

    /// The running system's boot id ("" where the system does not say).
    static let bootID: String = {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    /// The markers in `directory` left by processes that were writing without syncing when the
    /// system went down; markers of processes of this boot that are gone are removed (when
    /// `removingStale`).
    static func crashedSessions(in directory: String, removingStale: Bool) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var crashed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let path = directory + "/" + name
            let boot = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if boot != bootID {
                crashed.append(path)
            } else if removingStale, let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0,
                errno == ESRCH
            {
                unlink(path)
            }
        }
        return crashed
    }

    /// Puts this process's marker on disk (the file and its name); returns its path.
    static func begin(in directory: String, operation: String) throws -> String {
        let path = directory + "/" + prefix + "\(getpid())"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (create \(path))")
        }
        defer { close(descriptor) }
        let text = Array((bootID + "\n").utf8)
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(descriptor) == 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (write \(path))")
        }
        try DurableNames.syncDirectory(directory, operation: operation)
        return path
    }
}
