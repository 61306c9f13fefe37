import CLMDB
import Foundation

/// New names made to survive a power cut. A file system keeps a new file, directory or rename across
/// a power cut only once the directory holding the name is synced; LMDB syncs its data file but
/// never a directory, and writes a new data file's two meta pages without syncing them. The
/// power-cut tests (docs/POWERCUT.md) found both: a store created and committed to with full
/// durability could be gone after a power cut, or be a data file without a valid meta page.
package enum DurableNames {
    /// `fsync` of the directory at `path`. A file system that cannot sync directories (EINVAL) has
    /// nothing to do.
    package static func syncDirectory(_ path: String, operation: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (open \(path))")
        }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 && errno != EINVAL {
            throw LMDBError(returnCode: errno, operation: operation + " (fsync \(path))")
        }
    }

    /// Puts the data file of the environment in `source` in place of the one in `directory`, in
    /// one rename that survives a power cut: the new file synced first, the directory after. Nothing
    /// may have either environment open. `directory`'s lock file goes too (the next open makes a
    /// new one: the old one described the old file).
    ///
    /// - Throws: ``LMDBError`` when a sync or the rename fails (then `directory` keeps its old file).
    package static func replaceDataFile(in directory: String, with source: String) throws {
        let operation = "replace \(directory)/data.mdb"
        let file = source + "/data.mdb"
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (open \(file))")
        }
        let synced = fsync(descriptor)
        let syncError = errno
        close(descriptor)
        if synced != 0 { throw LMDBError(returnCode: syncError, operation: operation + " (fsync \(file))") }
        // The new file is trusted where the source was: closed cleanly by this library, unchanged.
        let trusted = CloseRecord.stored(in: source).map { $0 == CloseRecord.current(of: file) }
        var info = stat()
        let mode = stat(file, &info) == 0 ? info.st_mode & 0o777 : 0o600
        guard rename(file, directory + "/data.mdb") == 0 else {
            throw LMDBError(returnCode: errno, operation: operation + " (rename)")
        }
        try syncDirectory(directory, operation: operation)
        unlink(directory + "/lock.mdb")
        if trusted == true, let current = CloseRecord.current(of: directory + "/data.mdb") {
            current.write(in: directory, fileMode: mode)
        } else {
            CloseRecord.remove(in: directory)
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
