/// Why a full-text query could not be read: where (a character offset into the query) and what.
public struct TextQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The query text.
    public let query: String
    /// The offset, in characters, of the part that is wrong.
    public let position: Int
    /// What is wrong.
    public let reason: String

    /// An error at `position` of `query`.
    public init(query: String, position: Int, reason: String) {
        self.query = query
        self.position = position
        self.reason = reason
    }

    /// `query "…", character N: reason`.
    public var description: String { "text query \"\(query)\", character \(position + 1): \(reason)" }
}
