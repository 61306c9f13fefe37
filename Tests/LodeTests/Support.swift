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
