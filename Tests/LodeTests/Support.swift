import Foundation
import Lode
import Testing

/// A directory under the system temporary directory, removed when the value is released.
final class TemporaryDirectory {
    let url: URL

    init(_ label: String = "lode") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lode-test-\(label)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var path: String { url.path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The path of an executable built with the package (`lode-dump`, a test helper…): next to the
/// test binary.
func builtTool(_ name: String) -> String {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name).path
}

/// Runs `command` with `/bin/sh -c` to its end; returns its exit status, standard output and standard
/// error (collected in a file, so neither pipe can fill up and stall the command).
func shell(_ command: String) throws -> (status: Int32, out: String, err: String) {
    let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("lode-shell-\(UUID())")
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errorFile) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let out = Pipe()
    process.standardOutput = out
    let errorHandle = try FileHandle(forWritingTo: errorFile)
    defer { try? errorHandle.close() }
    process.standardError = errorHandle
    try process.run()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let error = try Data(contentsOf: errorFile)
    return (
        process.terminationStatus, String(decoding: output, as: UTF8.self),
        String(decoding: error, as: UTF8.self)
    )
}

/// The error `body` throws, as a LodeError.
func lodeError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> LodeError? {
    do {
        try body()
        Issue.record("expected a LodeError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as LodeError {
        return error
    } catch {
        Issue.record("expected a LodeError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

enum Status: String, Codable, CaseIterable, Comparable {
    case open, doing, done
    static func < (lhs: Status, rhs: Status) -> Bool { lhs.rawValue < rhs.rawValue }
}

struct Todo: Persistable, Equatable {
    var id: UUID
    var title: String
    var status: Status
    var priority: Int
    var due: Date?
    var tags: [String] = []

    static let schema = Schema<Todo>(
        primaryKey: \.id,
        indexes: [.on(\.status), .on(\.due), .unique(\.title), .on(\.priority), .on(\.status, \.priority)])
}

struct Counter: Persistable, Equatable {
    var name: String
    var value: Int
    static let schema = Schema<Counter>(primaryKey: \.name)
}
