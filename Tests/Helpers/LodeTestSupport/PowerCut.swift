import Foundation

/// A trace written by the power-cut layer (`Tools/powercut`, docs/POWERCUT.md): every change a
/// process made to the files under one directory, in the order the changes happened, with the
/// writer's acknowledgements (marks) placed among them.
public struct PowerCutTrace: Sendable {
    /// One recorded change.
    public enum Event: Sendable, Equatable {
        /// A directory that existed when the process started.
        case initialDirectory(path: String)
        /// A file that existed when the process started, with its bytes.
        case initialFile(path: String, inode: UInt64, bytes: [UInt8])
        /// Bytes written at an offset; `synchronous` when the file was opened with O_SYNC/O_DSYNC.
        case write(inode: UInt64, offset: Int, bytes: [UInt8], synchronous: Bool)
        /// The file's length set.
        case truncate(inode: UInt64, length: Int)
        /// `fsync`/`fdatasync` returned: everything written to the file before is on disk.
        case sync(inode: UInt64)
        /// `msync(MS_SYNC)` returned for a range of the file.
        case rangeSync(inode: UInt64, offset: Int, length: Int)
        /// A new file.
        case create(path: String, inode: UInt64)
        /// A new directory.
        case makeDirectory(path: String)
        /// A file or directory renamed (replacing what had the new name).
        case rename(from: String, to: String)
        /// A second name for a file (a hard link).
        case link(from: String, to: String)
        /// A file removed.
        case unlink(path: String)
        /// A directory removed.
        case removeDirectory(path: String)
        /// A directory fsynced: the names in it are on disk.
        case directorySync(path: String)
        /// What the process wrote to its marks file (an acknowledgement).
        case mark(String)
        /// The power went out here.
        case cut
    }

    /// The events, in order.
    public let events: [Event]

    /// Reads a trace; a malformed one is an error naming the offset.
    public init(contentsOf url: URL) throws {
        let data = try [UInt8](Data(contentsOf: url))
        var events: [Event] = []
        var at = 0
        func number(_ offset: Int, _ size: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in (0..<size).reversed() { value = value << 8 | UInt64(data[offset + i]) }
            return value
        }
        while at < data.count {
            guard at + 32 <= data.count else {
                throw PowerCutError("a truncated record header at byte \(at)")
            }
            let kind = number(at, 4)
            let flags = number(at + 4, 4)
            let inode = number(at + 8, 8)
            let offset = Int(number(at + 16, 8))
            let length = Int(number(at + 24, 8))
            let start = at + 32
            guard start + length <= data.count else {
                throw PowerCutError("a truncated record at byte \(at)")
            }
            let payload = Array(data[start..<(start + length)])
            // Only the records that hold a path or a mark are text. (Decoding a page's bytes as
            // UTF-8 repairs them, and each repair made Swift Testing capture a backtrace.)
            var text: String { String(decoding: payload, as: UTF8.self) }
            at = start + length
            switch kind {
            case 1: events.append(.initialDirectory(path: text))
            case 2:
                let split = payload.firstIndex(of: 0) ?? payload.count
                events.append(
                    .initialFile(
                        path: String(decoding: payload[..<split], as: UTF8.self), inode: inode,
                        bytes: Array(payload[min(split + 1, payload.count)...])))
            case 3:
                events.append(
                    .write(inode: inode, offset: offset, bytes: payload, synchronous: flags & 1 != 0))
            case 4: events.append(.truncate(inode: inode, length: offset))
            case 5: events.append(.sync(inode: inode))
            case 6:
                let range = payload.count == 8 ? Int(number(start, 8)) : 0
                events.append(.rangeSync(inode: inode, offset: offset, length: range))
            case 7: events.append(.create(path: text, inode: inode))
            case 8: events.append(.makeDirectory(path: text))
            case 9, 15:
                let split = payload.firstIndex(of: 0) ?? payload.count
                let from = String(decoding: payload[..<split], as: UTF8.self)
                let to = String(decoding: payload[min(split + 1, payload.count)...], as: UTF8.self)
                events.append(kind == 9 ? .rename(from: from, to: to) : .link(from: from, to: to))
            case 10: events.append(.unlink(path: text))
            case 11: events.append(.removeDirectory(path: text))
            case 12: events.append(.directorySync(path: text))
            case 13: events.append(.mark(text.trimmingCharacters(in: .newlines)))
            case 14: events.append(.cut)
            default: throw PowerCutError("an unknown record kind \(kind) at byte \(at - length - 32)")
            }
        }
        self.events = events
    }

    /// Whether the process was cut (rather than running to its end).
    public var wasCut: Bool { events.last == .cut }

    /// The positions at which a cut can fall: before each change to the files, and after the last.
    public var cutPoints: [Int] {
        var points: [Int] = []
        for (index, event) in events.enumerated() {
            switch event {
            case .initialDirectory, .initialFile, .mark: continue
            default: points.append(index)
            }
        }
        if !wasCut { points.append(events.count) }
        return points
    }

    /// The marks written before `position`: what the process had acknowledged when the power went.
    public func marks(before position: Int) -> [String] {
        events[..<position].compactMap { if case .mark(let text) = $0 { text } else { nil } }
    }
}

/// A malformed trace, or a crash state that could not be written.
public struct PowerCutError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// Which of the writes not yet synced at the cut reached the disk.
public enum CrashVariant: Sendable, CustomStringConvertible {
    /// None: the files as of their last sync, names as of their directory's last sync.
    case nothingPending
    /// All of them, in order (what a process crash leaves).
    case everything
    /// A seeded random subset, applied in a random order (length changes keep theirs), each write
    /// possibly torn at 512-byte sector boundaries; a random prefix of the name changes not yet
    /// synced.
    case random(seed: UInt64)

    /// The variant in words.
    public var description: String {
        switch self {
        case .nothingPending: "nothing since the last sync"
        case .everything: "every write, in order"
        case .random(let seed): "random subset, seed \(seed)"
        }
    }
}

/// Builds the states the disk could hold after a power cut at a point of a trace.
public struct CrashStateBuilder {
    let trace: PowerCutTrace

    /// A builder for `trace`.
    public init(_ trace: PowerCutTrace) { self.trace = trace }

    private enum Pending {
        case write(offset: Int, bytes: ArraySlice<UInt8>)
        case truncate(Int)
    }

    private struct File {
        var durable: [UInt8] = []
        var current: [UInt8] = []
        var pending: [Pending] = []
    }

    private enum Entry: Equatable {
        case file(UInt64)
        case directory
    }

    private enum NameChange {
        case create(String, UInt64)
        case makeDirectory(String)
        case rename(String, String)
        case link(String, String)
        case unlink(String)
        case removeDirectory(String)

        /// The directory whose sync makes the change durable.
        var anchor: String {
            switch self {
            case .create(let path, _), .makeDirectory(let path), .unlink(let path),
                .removeDirectory(let path):
                parent(path)
            case .rename(_, let to), .link(_, let to): parent(to)
            }
        }
    }

    /// What one crash state holds, said in a line.
    public struct Summary: Sendable, CustomStringConvertible {
        /// The cut position in the trace.
        public let position: Int
        /// The variant built.
        public let variant: CrashVariant
        /// Writes and truncations not yet synced at the cut; how many reached the disk, torn.
        public let pending: Int, applied: Int, torn: Int
        /// Name changes not yet synced at the cut, and how many were lost.
        public let pendingNames: Int, lostNames: Int

        /// The summary in a line.
        public var description: String {
            "cut at event \(position), \(variant): \(applied) of \(pending) pending writes applied (\(torn) torn), "
                + "\(lostNames) of \(pendingNames) unsynced name changes lost"
        }
    }

    /// Writes the state a cut before event `position` could leave into `directory` (created; it
    /// stands for the followed directory), and says what it holds.
    @discardableResult
    public func build(at position: Int, variant: CrashVariant, into directory: URL) throws -> Summary {
        try build(at: position, variants: [(variant, directory)])[0]
    }

    /// Writes several states of one cut (the trace is replayed once for all of them).
    public func build(at position: Int, variants: [(CrashVariant, URL)]) throws -> [Summary] {
        try build(cuts: [(position, variants)])[0]
    }

    /// Writes the states of several cuts, in the order given: the trace is replayed once, in order
    /// of position, and each cut's states are written as the replay passes it (replaying from the
    /// start for every cut cost the power-cut suite most of its time).
    public func build(cuts: [(position: Int, variants: [(CrashVariant, URL)])]) throws -> [[Summary]] {
        var summaries = [[Summary]](repeating: [], count: cuts.count)
        var replayed = Replayed()
        var replayedTo = 0
        for index in cuts.indices.sorted(by: { cuts[$0].position < cuts[$1].position }) {
            let position = cuts[index].position
            replay(&replayed, from: replayedTo, to: position)
            replayedTo = position
            summaries[index] = try cuts[index].variants.map { variant, directory in
                try write(replayed, at: position, variant: variant, into: directory)
            }
        }
        return summaries
    }

    /// What is on disk and what is pending at a cut.
    private struct Replayed {
        var files: [UInt64: File] = [:]
        var initial: [String: Entry] = ["": .directory]
        var changes: [(change: NameChange, durable: Bool)] = []
    }

    /// Applies the events from `start` up to `position` to `replayed`.
    private func replay(_ replayed: inout Replayed, from start: Int, to position: Int) {
        for event in trace.events[start..<position] {
            switch event {
            case .initialDirectory(let path): replayed.initial[path] = .directory
            case .initialFile(let path, let inode, let bytes):
                replayed.initial[path] = .file(inode)
                replayed.files[inode] = File(durable: bytes, current: bytes)
            case .write(let inode, let offset, let bytes, let synchronous):
                // Changed in place (`files[…, default:]` is an in-place access): taking a file out
                // of the dictionary and putting it back would copy its bytes at every event.
                Self.apply(
                    .write(offset: offset, bytes: bytes[...]),
                    to: &replayed.files[inode, default: File()].current)
                if synchronous {
                    Self.apply(
                        .write(offset: offset, bytes: bytes[...]),
                        to: &replayed.files[inode, default: File()].durable)
                } else {
                    replayed.files[inode, default: File()].pending.append(
                        .write(offset: offset, bytes: bytes[...]))
                }
            case .truncate(let inode, let length):
                Self.apply(.truncate(length), to: &replayed.files[inode, default: File()].current)
                replayed.files[inode, default: File()].pending.append(.truncate(length))
            case .sync(let inode):
                Self.sync(&replayed.files[inode, default: File()])
            case .rangeSync(let inode, let offset, let length):
                // Writes inside the range are on disk, and the file's length (`msync` with MS_SYNC
                // is a data sync of the range, which writes the size the data needs); the other
                // writes stay pending.
                Self.sync(&replayed.files[inode, default: File()], offset: offset, length: length)
            case .create(let path, let inode):
                replayed.changes.append((.create(path, inode), false))
                if replayed.files[inode] == nil { replayed.files[inode] = File() }
            case .makeDirectory(let path): replayed.changes.append((.makeDirectory(path), false))
            case .rename(let from, let to): replayed.changes.append((.rename(from, to), false))
            case .link(let from, let to): replayed.changes.append((.link(from, to), false))
            case .unlink(let path): replayed.changes.append((.unlink(path), false))
            case .removeDirectory(let path): replayed.changes.append((.removeDirectory(path), false))
            case .directorySync(let path):
                for index in replayed.changes.indices where replayed.changes[index].change.anchor == path {
                    replayed.changes[index].durable = true
                }
            case .mark, .cut: continue
            }
        }
    }

    private func write(_ replayed: Replayed, at position: Int, variant: CrashVariant, into directory: URL)
        throws
        -> Summary
    {
        let (files, initial, changes) = (replayed.files, replayed.initial, replayed.changes)
        var rng: SeededGenerator
        switch variant {
        case .random(let seed): rng = SeededGenerator(seed: seed)
        default: rng = SeededGenerator(seed: 1)
        }
        // Names: every durable change, and of the others a prefix in order (file systems journal
        // name changes in order), its length depending on the variant.
        let undurable = changes.filter { !$0.durable }.count
        let keptUndurable: Int
        switch variant {
        case .nothingPending: keptUndurable = 0
        case .everything: keptUndurable = undurable
        case .random: keptUndurable = Int.random(in: 0...undurable, using: &rng)
        }
        var names = initial
        var seen = 0
        for (change, durable) in changes {
            if !durable {
                seen += 1
                if seen > keptUndurable { continue }
            }
            Self.apply(change, to: &names)
        }

        // Contents: the durable bytes, then the chosen pending changes.
        var pendingCount = 0
        var appliedCount = 0
        var tornCount = 0
        var contents: [UInt64: [UInt8]] = [:]
        for case .file(let inode) in names.values where contents[inode] == nil {
            guard let file = files[inode] else { continue }
            pendingCount += file.pending.count
            switch variant {
            case .nothingPending: contents[inode] = file.durable
            case .everything:
                contents[inode] = file.current
                appliedCount += file.pending.count
            case .random:
                var pieces: [Pending] = []
                for change in file.pending {
                    let roll = Int.random(in: 0..<10, using: &rng)
                    if roll < 3 { continue }
                    appliedCount += 1
                    guard roll >= 7, case .write(let offset, let bytes) = change,
                        offset / 512 != (offset + bytes.count - 1) / 512
                    else {
                        pieces.append(change)
                        continue
                    }
                    // Torn: each 512-byte sector of the write reached the disk or did not.
                    tornCount += 1
                    var start = offset
                    while start < offset + bytes.count {
                        let end = min((start / 512 + 1) * 512, offset + bytes.count)
                        if Bool.random(using: &rng) {
                            let from = bytes.startIndex + (start - offset)
                            pieces.append(.write(offset: start, bytes: bytes[from..<(from + end - start)]))
                        }
                        start = end
                    }
                }
                // Writes land in any order; a file's length changes (journaled metadata) keep theirs.
                let lengths = pieces.filter { if case .truncate = $0 { true } else { false } }
                pieces.shuffle(using: &rng)
                var nextLength = lengths.makeIterator()
                for index in pieces.indices {
                    if case .truncate = pieces[index], let length = nextLength.next() {
                        pieces[index] = length
                    }
                }
                var bytes = file.durable
                for piece in pieces { Self.apply(piece, to: &bytes) }
                contents[inode] = bytes
            }
        }

        let manager = FileManager.default
        try? manager.removeItem(at: directory)
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        for (path, entry) in names.sorted(by: { $0.key.count < $1.key.count }) where !path.isEmpty {
            let url = directory.appendingPathComponent(path)
            switch entry {
            case .directory: try manager.createDirectory(at: url, withIntermediateDirectories: true)
            case .file(let inode):
                guard manager.createFile(atPath: url.path, contents: Data(contents[inode] ?? [])) else {
                    throw PowerCutError("cannot write \(url.path)")
                }
            }
        }
        return Summary(
            position: position, variant: variant, pending: pendingCount, applied: appliedCount,
            torn: tornCount,
            pendingNames: undurable, lostNames: undurable - keptUndurable)
    }

    private static func sync(_ file: inout File) {
        file.durable = file.current
        file.pending = []
    }

    private static func sync(_ file: inout File, offset: Int, length: Int) {
        var rest: [Pending] = []
        for change in file.pending {
            switch change {
            case .write(let at, let bytes) where at >= offset && at + bytes.count <= offset + length:
                apply(change, to: &file.durable)
            case .truncate: apply(change, to: &file.durable)
            default: rest.append(change)
            }
        }
        file.pending = rest
    }

    private static func apply(_ change: Pending, to bytes: inout [UInt8]) {
        // Byte copies and zero fills through memory, not element by element: the test helpers are
        // built without optimization, where a generic `replaceSubrange` or a growth by
        // `repeatElement` walks every byte through the standard library's unspecialized code.
        switch change {
        case .write(let offset, let written):
            resize(&bytes, toAtLeast: offset + written.count)
            bytes.withUnsafeMutableBytes { target in
                written.withUnsafeBytes { source in
                    guard let from = source.baseAddress, let to = target.baseAddress else { return }
                    (to + offset).copyMemory(from: from, byteCount: source.count)
                }
            }
        case .truncate(let length):
            if length < bytes.count {
                bytes.removeSubrange(length...)
            } else {
                resize(&bytes, toAtLeast: length)
            }
        }
    }

    /// Grows `bytes` with zeros to `length` bytes if it is shorter.
    private static func resize(_ bytes: inout [UInt8], toAtLeast length: Int) {
        guard bytes.count < length else { return }
        let old = bytes.count
        bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            guard let base = buffer.baseAddress else { return }
            bytes.withUnsafeBytes { existing in
                if let from = existing.baseAddress {
                    UnsafeMutableRawPointer(base).copyMemory(from: from, byteCount: old)
                }
            }
            UnsafeMutableRawPointer(base + old).initializeMemory(
                as: UInt8.self, repeating: 0, count: length - old)
            count = length
        }
    }

    /// Applies a name change; one whose source or parent directory is missing (an earlier change
    /// was lost) changes nothing.
    private static func apply(_ change: NameChange, to names: inout [String: Entry]) {
        func parentExists(_ path: String) -> Bool { names[parent(path)] == .directory }
        switch change {
        case .create(let path, let inode):
            if parentExists(path) { names[path] = .file(inode) }
        case .makeDirectory(let path):
            if parentExists(path) && names[path] == nil { names[path] = .directory }
        case .unlink(let path):
            if case .file = names[path] { names[path] = nil }
        case .removeDirectory(let path):
            if names[path] == .directory && !names.keys.contains(where: { $0.hasPrefix(path + "/") }) {
                names[path] = nil
            }
        case .link(let from, let to):
            if case .file = names[from], parentExists(to), names[to] == nil { names[to] = names[from] }
        case .rename(let from, let to):
            guard let entry = names[from], parentExists(to) else { return }
            if entry == .directory {
                // A directory's whole subtree moves with it (replacing an empty directory).
                guard !names.keys.contains(where: { $0.hasPrefix(to + "/") }) else { return }
                let moved = names.filter { $0.key == from || $0.key.hasPrefix(from + "/") }
                for key in moved.keys { names[key] = nil }
                for (key, value) in moved { names[to + key.dropFirst(from.count)] = value }
            } else {
                names[from] = nil
                names[to] = entry
            }
        }
    }
}

private func parent(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return String(path[..<slash])
}
