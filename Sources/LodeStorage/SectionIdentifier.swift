/// The identifier of a ``LiveResultsStorage`` section in its ``LiveResultsStorage/snapshot()``: any
/// hashable, sendable value (a string, an enum case, a group key), compared by value and type.
public struct SectionIdentifier: Hashable, @unchecked Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    // @unchecked: the only initializer takes a Sendable value; AnyHashable just erases its type.
    /// The value, type-erased.
    public let base: AnyHashable

    /// An identifier holding `value`.
    public init<Value: Hashable & Sendable>(_ value: Value) { base = AnyHashable(value) }

    /// An identifier holding a string.
    public init(stringLiteral value: String) { self.init(value) }

    /// The value's description.
    public var description: String { "\(base)" }
}

/// The name a member's section has in a snapshot when none was given: numbered if used twice.
struct DefaultSectionName: Hashable, Sendable {
    var text: String
}
