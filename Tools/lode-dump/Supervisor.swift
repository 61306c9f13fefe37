import Foundation
import Synchronization

/// The worker's process id, for the supervisor's signal handlers (which cannot capture).
let workerProcessID = Atomic<Int32>(0)

/// LMDB trusts its file: a page that was zeroed or overwritten can make it abort on its own
/// assertions or read through a bad pointer, and LMDB has no checksums to notice first. So
/// `lode-dump` does its work in a child process of its own and watches it: a child killed by a
/// signal becomes one line naming the store as damaged and exit status 1, never a crash of the tool
/// the user ran. (The library itself cannot fork around LMDB; see the README's Guarantees.)
enum Supervisor {
    static let childVariable = "LODE_DUMP_WORKER"

    /// True in the child that does the work. The worker stops when its supervisor is gone (killed
    /// by SIGKILL, which it cannot forward): a load must not go on and rename a store into place
    /// after the user's command was killed.
    static var isWorker: Bool {
        guard let supervisor = ProcessInfo.processInfo.environment[childVariable].flatMap(Int32.init) else {
            return false
        }
        // The tests make the worker die the way LMDB would on a damaged page, to prove the report.
        if ProcessInfo.processInfo.environment["LODE_DUMP_TEST_ABORT"] != nil { abort() }
        let watcher = Thread {
            while getppid() == supervisor { usleep(20_000) }
            _exit(128 + SIGKILL)
        }
        watcher.start()
        return true
    }

    /// Runs this executable again as the worker with the same arguments and standard streams, and
    /// returns its exit status (1, with a message, when a signal ended it).
    static func run() -> Int32 {
        let worker = Process()
        worker.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        worker.arguments = Array(CommandLine.arguments.dropFirst())
        // No Swift backtrace on the user's terminal: the supervisor says what happened in one line.
        worker.environment = ProcessInfo.processInfo.environment.merging(
            [childVariable: "\(getpid())", "SWIFT_BACKTRACE": "enable=no"]) { $1 }
        worker.standardInput = FileHandle.standardInput
        worker.standardOutput = FileHandle.standardOutput
        worker.standardError = FileHandle.standardError
        // Ctrl-C (to the group) or a signal to the supervisor alone: the worker gets it and stops
        // cleanly (`watch` prints its last line); the supervisor waits for it. Before the worker
        // exists, the handlers do nothing.
        signal(SIGINT) { _ in
            let worker = workerProcessID.load(ordering: .relaxed)
            if worker > 0 { kill(worker, SIGINT) }
        }
        signal(SIGTERM) { _ in
            let worker = workerProcessID.load(ordering: .relaxed)
            if worker > 0 { kill(worker, SIGTERM) }
        }
        // A parent may have started us with these signals blocked (the mask is inherited).
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        do {
            try worker.run()
            workerProcessID.store(worker.processIdentifier, ordering: .relaxed)
        } catch {
            FileHandle.standardError.write(Data("lode-dump: cannot start its worker: \(error)\n".utf8))
            return 1
        }
        worker.waitUntilExit()
        if worker.terminationReason == .uncaughtSignal {
            let signal = worker.terminationStatus
            // Interrupted by the user: the shell's usual status, no diagnosis.
            if signal == SIGINT || signal == SIGTERM { return 128 + signal }
            // The reader of the output went away (`lode-dump dump … | head -1`): not damage. Stop
            // the way Unix tools do, by the same signal and without a word.
            if signal == SIGPIPE {
                Foundation.signal(SIGPIPE, SIG_DFL)
                kill(getpid(), SIGPIPE)
                return 128 + SIGPIPE
            }
            let name =
                [
                    SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
                    SIGFPE: "SIGFPE",
                ][
                    signal] ?? "signal \(signal)"
            FileHandle.standardError.write(
                Data(
                    ("lode-dump: reading the store failed hard (\(name) inside LMDB): the data file is damaged"
                        + " in a way LMDB cannot detect; restore it from a backup\n").utf8))
            return 1
        }
        return worker.terminationStatus
    }
}
