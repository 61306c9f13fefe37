import Foundation

/// Bytes that are not one well-formed CBOR data item.
public struct CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong and at which byte offset.
    public var reason: String

    /// The reason.
    public var description: String { reason }
}
