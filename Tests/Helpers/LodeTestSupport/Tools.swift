import Foundation

/// The path of an executable built with the package (`lode-dump`, a test helper…): next to the
/// test binary.
public func builtTool(_ name: String) -> String {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name).path
}

/// Runs `command` with `/bin/sh -c` to its end; returns its exit status, standard output and standard
/// error (both collected in files: no pipe can fill up and stall the command, and none can be held
/// open by a daemon another test starts meanwhile, which would make an end of file never come).
public func shell(_ command: String) throws -> (status: Int32, out: String, err: String) {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("lode-shell-\(UUID())")
    let outputFile = base.appendingPathExtension("out")
    let errorFile = base.appendingPathExtension("err")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outputFile)
        try? FileManager.default.removeItem(at: errorFile)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let outputHandle = try FileHandle(forWritingTo: outputFile)
    defer { try? outputHandle.close() }
    process.standardOutput = outputHandle
    let errorHandle = try FileHandle(forWritingTo: errorFile)
    defer { try? errorHandle.close() }
    process.standardError = errorHandle
    try process.run()
    process.waitUntilExit()
    let output = try Data(contentsOf: outputFile)
    let error = try Data(contentsOf: errorFile)
    return (
        process.terminationStatus, String(decoding: output, as: UTF8.self),
        String(decoding: error, as: UTF8.self)
    )
}

/// A running tool built with the package (`lode-demo`, `lode-dump`, a test helper).
public final class ToolProcess {
    private var received = Data()
    /// The running process.
    public let process = Process()
    /// Its standard output.
    public let out = Pipe()
    /// Its standard error.
    public let err = Pipe()

    /// Starts the built `tool` (`lode-demo` unless told) with `arguments`.
    public init(_ arguments: [String], tool: String = "lode-demo") throws {
        process.executableURL = URL(fileURLWithPath: builtTool(tool))
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        try process.run()
    }

    /// Reads standard output until it holds `text` (or the output ends).
    public func read(until text: String) {
        while !String(decoding: received, as: UTF8.self).contains(text) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { return }
            received.append(chunk)
        }
    }

    /// Standard output read so far.
    public var output: String { String(decoding: received, as: UTF8.self) }

    /// Waits for the end; returns the exit status, standard output and standard error.
    public func finish() -> (status: Int32, out: String, err: String) {
        let output = received + out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: output, as: UTF8.self),
            String(decoding: error, as: UTF8.self)
        )
    }
}

/// Runs the built `lode-demo` to its end.
public func runDemo(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    try ToolProcess(arguments).finish()
}

/// Runs the built `lode-dump` to its end; returns its exit status, standard output and error.
public func runDump(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    try ToolProcess(arguments, tool: "lode-dump").finish()
}
