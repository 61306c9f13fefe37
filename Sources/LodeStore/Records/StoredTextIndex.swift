/// One full-text index of a ``StoredType``, as the catalog and the index's statistics describe it.
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

/// What a full-text index holds, counted by reading all of it (``Transaction/textIndexReport(named:of:)``).
public struct TextIndexReport: Sendable, Equatable {
    /// Distinct terms.
    public var terms: Int
    /// Postings: (term, document) pairs.
    public var postings: Int
    /// Blocks the postings are kept in.
    public var blocks: Int
    /// Bytes of the index's two databases (their pages).
    public var bytes: Int
    /// The terms held by the most documents, most first (at most ten), with their document counts.
    public var commonTerms: [(term: String, documents: Int)]

    /// Two reports are equal when they count the same.
    public static func == (lhs: TextIndexReport, rhs: TextIndexReport) -> Bool {
        lhs.terms == rhs.terms && lhs.postings == rhs.postings && lhs.blocks == rhs.blocks
            && lhs.bytes == rhs.bytes
            && lhs.commonTerms.map(\.term) == rhs.commonTerms.map(\.term)
            && lhs.commonTerms.map(\.documents) == rhs.commonTerms.map(\.documents)
    }
}
