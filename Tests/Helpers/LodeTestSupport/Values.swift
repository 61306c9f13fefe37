import Foundation

// Plain Codable values the codec, store and sync suites share (internal: the suites import this
// module with @testable).

/// The test suites' status values (a `Codable` enum with a raw value).
package enum Status: String, Codable, CaseIterable, Comparable, Sendable {
    case open, doing, done
    package static func < (lhs: Status, rhs: Status) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A nested value.
struct Address: Codable, Equatable {
    var street: String
    var city: String
    var zip: Int?
}

/// An enum with associated values.
enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rectangle(width: Double, height: Double)
    case labelled(String, Int)
    case none
}

/// A value with a field of every kind the codec handles.
struct Everything: Codable, Equatable {
    var int: Int
    var negative: Int64
    var small: Int8
    var unsigned: UInt64
    var double: Double
    var float: Float
    var bool: Bool
    var string: String
    var unicode: String
    var optionalPresent: String?
    var optionalAbsent: Int?
    var date: Date
    var preciseDate: Date
    var uuid: UUID
    var data: Data
    var decimal: Decimal
    var bigDecimal: Decimal
    var negativeDecimal: Decimal
    var url: URL
    var address: Address
    var addresses: [Address]
    var matrix: [[Int]]
    var dictionary: [String: Int]
    var intKeyed: [Int: String]
    var shapes: [Shape]
    var nested: [String: [Shape?]]
    var status: Status
}

/// An `Everything` with a value in every field.
func sampleEverything() -> Everything {
    Everything(
        int: 42, negative: -1_234_567_890_123, small: -8, unsigned: .max, double: -0.1, float: 3.5,
        bool: true,
        string: "", unicode: "héllo wörld ✓ 日本 \u{1F600}", optionalPresent: "yes", optionalAbsent: nil,
        date: Date(timeIntervalSince1970: 1_700_000_000.25),
        preciseDate: Date(timeIntervalSinceReferenceDate: 786_543_210.123_456_7),
        uuid: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, data: Data([0, 1, 2, 255]),
        decimal: Decimal(string: "123.45")!, bigDecimal: Decimal(string: "123456789012345678901234567890.5")!,
        negativeDecimal: Decimal(string: "-0.000001")!, url: URL(string: "https://example.com/a?b=c")!,
        address: Address(street: "Main St", city: "Springfield", zip: nil),
        addresses: [Address(street: "A", city: "B", zip: 1), Address(street: "C", city: "D", zip: 2)],
        matrix: [[1, 2], [], [3]], dictionary: ["a": 1, "b": 2], intKeyed: [1: "one", 2: "two"],
        shapes: [.circle(radius: 2), .rectangle(width: 1, height: 2), .labelled("x", 3), .none],
        nested: ["k": [.circle(radius: 1), nil]], status: .doing)
}
