/// One full-text index of a ``StoredType``, as the catalog and the index's statistics describe it.
///
/// The counts come from the full-text module, which a process uses once it declares a full-text
/// index (or a Lode tool opens the store); in a process that never did they are zero, and
/// ``IntegrityReport/unchecked`` names the index.
public struct StoredTextIndex: Sendable, Equatable {
    /// The index name.
    public var name: String
    /// The indexed fields.
    public var fields: [String]
    /// The identifier of the tokenizer that built it.
    public var tokenizer: String
    /// Documents indexed (one per object).
    public var documentCount: Int
    /// Tokens in all of them.
    public var tokenCount: Int

    /// Describes a full-text index.
    public init(
        name: String, fields: [String], tokenizer: String, documentCount: Int = 0, tokenCount: Int = 0
    ) {
        self.name = name
        self.fields = fields
        self.tokenizer = tokenizer
        self.documentCount = documentCount
        self.tokenCount = tokenCount
    }
}
