import Foundation
import LodeStore
import Testing

@testable import LodeTestSupport

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

struct Task: Persistable, Equatable, CustomStringConvertible {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    var group: String
    static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
    var description: String { "#\(id)(\(title), rank \(rank), \(done ? "done" : "open"), \(group))" }
}
