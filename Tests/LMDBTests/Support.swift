import Dispatch
import Foundation
import LMDB
import Synchronization
import Testing

/// A directory under the system temporary directory, removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init(_ label: String = "lmdb") {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/lode-test-\(label)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func subpath(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Bytes of a string, for keys and values.
func b(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Big-endian bytes of an integer: memcmp order is numeric order.
func be(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(value).bigEndian) { Array($0) } }

/// The error `body` throws, as an LMDBError (or a test failure when it throws nothing or another type).
func lmdbError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> LMDBError? {
    do {
        try body()
        Issue.record("expected an LMDBError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as LMDBError {
        return error
    } catch {
        Issue.record("expected an LMDBError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The helper executable built beside the test bundle.
enum Helper {
    static var path: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("lmdb-test-helper").path
    }

    /// Runs the helper to completion; returns its exit status and standard output.
    @discardableResult
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        try runProcess(path, arguments)
    }

    /// Starts the helper and waits until it prints "ready"; the caller kills it.
    static func startAndWaitUntilReady(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var seen = Data()
        let handle = out.fileHandleForReading
        while !String(decoding: seen, as: UTF8.self).contains("ready") {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(
            String(decoding: seen, as: UTF8.self).contains("ready"), "helper \(arguments) never became ready")
        return process
    }

    /// SIGKILLs a started helper and waits for it to die.
    static func kill(_ process: Process) {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Runs a program to completion, feeding it `input`; returns its exit status and what it printed.
func runProcess(
    _ executable: String, _ arguments: [String], input: Data? = nil
) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let inPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inPipe
    try process.run()
    if let input { inPipe.fileHandleForWriting.write(input) }
    try inPipe.fileHandleForWriting.close()
    // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
    let errorData = Mutex(Data())
    let errorRead = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let data = err.fileHandleForReading.readDataToEndOfFile()
        errorData.withLock { $0 = data }
        errorRead.signal()
    }
    let output = out.fileHandleForReading.readDataToEndOfFile()
    errorRead.wait()
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: output, as: UTF8.self),
        String(decoding: errorData.withLock { $0 }, as: UTF8.self)
    )
}
