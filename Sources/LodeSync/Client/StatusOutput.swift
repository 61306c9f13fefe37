import Foundation

/// How `run` prints a client's status: a line each time it changes; while a download is under way on
/// a terminal, one line rewritten in place (at most ten times a second), and elsewhere (a log, a pipe)
/// its progress at most once a second.
struct StatusOutput {
    private var last = ""
    private var lastProgress: ContinuousClock.Instant?
    private var inPlace = false
    private let terminal: Bool
    private let write: (String) -> Void

    /// Output to standard output, in place when it is a terminal.
    init() {
        self.init(terminal: isatty(STDOUT_FILENO) == 1) { FileHandle.standardOutput.write(Data($0.utf8)) }
    }

    /// Output through `write`, as to a terminal or not.
    init(terminal: Bool, write: @escaping (String) -> Void) {
        self.terminal = terminal
        self.write = write
    }

    /// Prints `status` if it changed (a download's progress no more often than the output allows);
    /// `final` prints it in any case and ends a line left open.
    mutating func show(_ status: SyncStatus, final: Bool, now: ContinuousClock.Instant = .now) {
        let line = SyncCommand.line(status)
        if status.download != nil, !final {
            let interval: Duration = terminal ? .milliseconds(100) : .seconds(1)
            guard line != last, lastProgress.map({ now - $0 >= interval }) ?? true else { return }
            lastProgress = now
            last = line
            if terminal {
                // Rewritten in place: carriage return, the line, the rest of the old one cleared.
                write("\r" + line + "\u{1B}[K")
                inPlace = true
            } else {
                write(line + "\n")
            }
            return
        }
        guard line != last || final else { return }
        last = line
        write(inPlace ? "\r" + line + "\u{1B}[K\n" : line + "\n")
        inPlace = false
    }
}
