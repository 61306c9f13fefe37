import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What this library knew of an environment's data file when it last closed it cleanly, or last
/// found every page of it sound: the file's identity (device and inode), its size, its change and
/// modification times and a digest of its two meta pages. Kept in `.clean-close` beside the file
/// (docs/FORMAT.md, "Files of a store").
///
/// An open that finds the data file as its record describes it is opening the file this library
/// left: nothing has written to it since (a commit changes a meta page, any write the change time).
/// A file without a record, or another than the record describes — a copy, a restored backup, a
/// download, a file another program wrote, a file a process was writing when it was killed or the
/// power went — is checked page by page before anything reads it (`Environment.checkPages`).
package struct CloseRecord: Hashable {
    /// The record's file name in the environment's directory.
    static let fileName = ".clean-close"
    /// The first word of the record's one line, and its version.
    static let header = "lmdb-clean-close 1"

    var device: UInt64
    var inode: UInt64
    var size: Int64
    var changed: Int64
    var changedNanoseconds: Int64
    var modified: Int64
    var modifiedNanoseconds: Int64
    /// FNV-1a of the two meta pages' `MDB_meta` (the first 152 bytes of each of the file's first two
    /// pages, `pageSize` each; LMDB writes nothing else there).
    var metaDigest: UInt64

    /// How many bytes at the start of each meta page the digest covers.
    static let metaBytes = DataFileHeader.metaOffset + 136

    /// The record the data file at `path` would have now (`pageSize`: the file's, read from its
    /// first meta page when not given); nil when it cannot be read.
    package static func current(of path: String, pageSize: Int? = nil) -> CloseRecord? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return current(descriptor: descriptor, pageSize: pageSize)
    }

    /// The record the data file open as `descriptor` would have now.
    static func current(descriptor: Int32, pageSize: Int?) -> CloseRecord? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        let size = pageSize ?? DataFileHeader.read(descriptor: descriptor)?.pageSize
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for page in 0..<2 {
            let offset = page * (size ?? 4096)
            let length = max(0, min(metaBytes, Int(info.st_size) - offset))
            var bytes = [UInt8](repeating: 0, count: length)
            let read = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress, length, off_t(offset))
            }
            guard read == length else { return nil }
            for byte in bytes { digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        return CloseRecord(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            changed: Int64(info.st_ctim.tv_sec), changedNanoseconds: Int64(info.st_ctim.tv_nsec),
            modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec),
            metaDigest: digest)
    }

    /// The record kept in `directory`; nil when there is none or it does not read (a record cut short
    /// by a power cut reads as none).
    static func stored(in directory: String) -> CloseRecord? {
        let descriptor = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard count > 0, count < bytes.count, let text = String(validating: bytes[..<count], as: UTF8.self),
            text.hasSuffix("\n")
        else { return nil }
        let words = text.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 10, words[0...1].joined(separator: " ") == header,
            let device = UInt64(words[2]), let inode = UInt64(words[3]), let size = Int64(words[4]),
            let changed = Int64(words[5]), let changedNanoseconds = Int64(words[6]),
            let modified = Int64(words[7]), let modifiedNanoseconds = Int64(words[8]),
            let metaDigest = UInt64(words[9], radix: 16)
        else { return nil }
        return CloseRecord(
            device: device, inode: inode, size: size, changed: changed,
            changedNanoseconds: changedNanoseconds,
            modified: modified, modifiedNanoseconds: modifiedNanoseconds, metaDigest: metaDigest)
    }

    /// The record's one line.
    var line: String {
        "\(Self.header) \(device) \(inode) \(size) \(changed) \(changedNanoseconds) \(modified) "
            + "\(modifiedNanoseconds) \(String(metaDigest, radix: 16))\n"
    }

    /// Puts the record in `directory`, replacing the one there in one rename; false when it could not
    /// be written (the next open then checks the file: nothing is lost). It is not synced: a record
    /// lost to a power cut only costs a check.
    @discardableResult
    package func write(in directory: String, fileMode: mode_t) -> Bool {
        let target = directory + "/" + Self.fileName
        let temporary = target + ".\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else { return false }
        let bytes = Array(line.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == bytes.count, rename(temporary, target) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// The files this process found sound by checking every page, as they were then: an open of one
    /// of them, unchanged, is trusted without a record (a read-only process cannot write one).
    nonisolated(unsafe) private static var checked: Set<CloseRecord> = []
    private static let checkedLock = Lock()

    /// Notes that every page of the file this record describes was found sound in this process.
    static func noteChecked(_ record: CloseRecord) {
        checkedLock.withLock { _ = checked.insert(record) }
    }

    /// Whether this process checked the file as this record describes it.
    var wasCheckedHere: Bool { Self.checkedLock.withLock { Self.checked.contains(self) } }

    /// Removes the record in `directory` (a file the record described is gone or replaced).
    static func remove(in directory: String) {
        unlink(directory + "/" + fileName)
    }

    /// How `current` differs from this record, in words for an error message.
    func difference(from current: CloseRecord) -> String {
        if device != current.device || inode != current.inode {
            return
                "it is another file than the one last closed here (a copy, a restored backup or a download)"
        }
        return "it changed since it was last closed cleanly (a process that had it open ended without "
            + "closing it, or another program wrote to it)"
    }
}

/// The lock a process holds on `.clean-close.lock` while it has the environment open and trusts its
/// data file: a process that opens the environment while another holds it is opening a file a
/// trusting process is using, not one that came from elsewhere. A shared `fcntl` lock on the file's
/// first byte, released by the system when the process ends however it ends.
///
/// POSIX drops every lock a process holds on a file when it closes any descriptor of that file:
/// only this type opens `.clean-close.lock`, once per environment (one per directory per process).
struct TrustLock {
    /// The lock file's name in the environment's directory.
    static let fileName = ".clean-close.lock"

    let descriptor: Int32

    /// Opens the lock file of `directory` (creating it unless `readOnly`); nil when it cannot.
    init?(directory: String, readOnly: Bool, fileMode: mode_t) {
        let path = directory + "/" + Self.fileName
        let descriptor =
            readOnly ? open(path, O_RDONLY | O_CLOEXEC) : open(path, O_RDWR | O_CREAT | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    /// A lock of `type` on the file's first byte.
    private static func firstByte(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        return lock
    }

    /// Whether another process holds the lock (this process's own lock never shows).
    var isHeldElsewhere: Bool {
        var lock = Self.firstByte(F_WRLCK)
        guard fcntl(descriptor, F_GETLK, &lock) == 0 else { return false }
        return lock.l_type != Int16(F_UNLCK)
    }

    /// Takes the shared lock (without waiting: no process ever holds it exclusively). If it cannot be
    /// taken, other processes check a file this one trusts: the safe direction.
    func hold() {
        var lock = Self.firstByte(F_RDLCK)
        _ = fcntl(descriptor, F_SETLK, &lock)
    }

    /// Closes the file, which releases the lock.
    func close() {
        Glibc.close(descriptor)
    }
}

/// Why an environment trusts its data file — reads it without checking its pages first — or why not
/// (``Environment/fileTrust``).
public enum FileTrust: Sendable, Equatable, CustomStringConvertible {
    /// This process created the file.
    case created
    /// The file is the one this library last closed cleanly in this directory, unchanged since.
    case closedCleanly
    /// Another process that trusts the file has it open.
    case openElsewhere
    /// Every page was checked in this process and found sound.
    case checked
    /// The file is not known to be the one this library left: `reason` says why.
    case untrusted(reason: String)

    /// Whether the file may be read without checking its pages first.
    public var isTrusted: Bool {
        if case .untrusted = self { return false }
        return true
    }

    /// A short phrase: "created here", "closed cleanly", …, or the reason it is not trusted.
    public var description: String {
        switch self {
        case .created: return "created here"
        case .closedCleanly: return "closed cleanly"
        case .openElsewhere: return "open in another process that trusts it"
        case .checked: return "every page checked"
        case .untrusted(let reason): return reason
        }
    }
}
