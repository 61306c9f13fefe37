/// A value a ``SyncFilter`` compares with, as it appears in the object's JSON.
public enum SyncValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    /// Text (also a UUID's text).
    case string(String)
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// A Boolean.
    case bool(Bool)
    /// JSON null.
    case null

    /// Text.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// The value as JSON text.
    var json: String {
        switch self {
        case .string(let text): SyncJSON.quoted(text)
        case .integer(let value): "\(value)"
        case .double(let value): value.isFinite ? "\(value)" : "null"
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        }
    }

    /// A PostgreSQL array literal of `elements`, each quoted and escaped.
    static func arrayLiteral(_ elements: [String]) -> String {
        "{"
            + elements.map {
                "\""
                    + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                        of: "\"", with: "\\\"")
                    + "\""
            }.joined(separator: ",") + "}"
    }
}
