import CLMDB
import Foundation

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
