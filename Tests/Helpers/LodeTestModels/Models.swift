import Foundation
import LodeCodec
import LodeMacros
import LodeStore
import LodeTestSupport
import Testing

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

// The tests' main types are models of the model macro: every suite that uses them reads and writes
// through its generated record codec.

@Model
struct Todo: Equatable {
    @PrimaryKey var id: UUID
    @Unique var title: String
    @Indexed var status: Status
    @Indexed var priority: Int
    @Indexed var due: Date?
    var tags: [String] = []
    #Index<Todo>(\.status, \.priority)
}

@Model
struct Counter: Equatable {
    @PrimaryKey var name: String
    var value: Int
}

@Model
package struct Task: Equatable, CustomStringConvertible {
    @PrimaryKey package var id: Int
    package var title: String
    @Indexed package var rank: Int
    @Indexed package var done: Bool
    @Indexed package var group: String
    package var description: String { "#\(id)(\(title), rank \(rank), \(done ? "done" : "open"), \(group))" }
}

/// A model with collections whose equal values may be encoded in different orders, a property with
/// an initial value and a nested value that is not `Equatable`.
@Model
struct Gauge {
    var id: Int
    var readings: [String: Int]
    var labels: Set<String>
    var weight: Int = 10
    var calibration: Calibration = Calibration(offsets: [:])
    var note: String?
}

/// A nested value without `Equatable`: compared by its encoding.
struct Calibration: Codable {
    var offsets: [String: Double]
}
