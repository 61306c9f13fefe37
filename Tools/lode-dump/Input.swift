import Foundation

/// Standard input read a line at a time, so a load holds one line in memory, not the export.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8]
    private var start = 0
    private var ended = false
    /// The number of the line `next()` returned last.
    private(set) var number = 0

    /// Reads from `handle`, after the `prefix` already read from it.
    init(_ handle: FileHandle, prefix: [UInt8]) {
        self.handle = handle
        self.buffer = prefix
    }

    /// The next line without its newline, or nil at the end.
    func next() -> Substring? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0a) {
                defer { start = newline + 1 }
                number += 1
                return Substring(decoding: buffer[start..<newline], as: UTF8.self)
            }
            if ended {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                number += 1
                return Substring(decoding: buffer[start...], as: UTF8.self)
            }
            buffer.removeSubrange(0..<start)
            start = 0
            let chunk = handle.availableData
            if chunk.isEmpty { ended = true } else { buffer.append(contentsOf: chunk) }
        }
    }
}

/// Progress on standard error when it is a terminal (quiet in a pipe or a file).
struct Progress {
    let verb: String
    private let shown = isatty(2) == 1
    private var count = 0

    init(_ verb: String) { self.verb = verb }

    mutating func advance() {
        count += 1
        if shown && count % 10_000 == 0 {
            FileHandle.standardError.write(Data("\r\(verb) \(count) objects…".utf8))
        }
    }

    func finish() {
        if shown && count >= 10_000 { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
    }
}
