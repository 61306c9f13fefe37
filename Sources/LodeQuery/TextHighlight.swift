import LodeStore

/// Where the words of a full-text search occur in one text of an object: for highlighting matches
/// in a list (see ``Results/highlights(in:)``).
public struct TextHighlight: Sendable, Equatable {
    /// The indexed field the text is (each element of an array field is a text of its own).
    public var field: String
    /// The text.
    public var text: String
    /// Where the query's words, prefixes and phrases occur in it, ascending; overlapping ones joined.
    /// Excluded words are not highlighted.
    public var ranges: [Range<String.Index>]

    /// A highlight of `ranges` in `text` of `field`.
    public init(field: String, text: String, ranges: [Range<String.Index>]) {
        self.field = field
        self.text = text
        self.ranges = ranges
    }

    /// The text with each match wrapped in `open` and `close`, cut to about `words` words around the
    /// first match (`ellipsis` where it is cut): a line for a list of results.
    ///
    /// ```swift
    /// highlight.snippet(words: 8, open: "**", close: "**")  // "…the **live results** of a…"
    /// ```
    public func snippet(words: Int = 12, open: String = "[", close: String = "]", ellipsis: String = "…")
        -> String
    {
        // Word boundaries: the whitespace-separated spans of the text.
        var spans: [Range<String.Index>] = []
        var start: String.Index?
        var index = text.startIndex
        while index < text.endIndex {
            if text[index].isWhitespace {
                if let begun = start { spans.append(begun..<index) }
                start = nil
            } else if start == nil {
                start = index
            }
            index = text.index(after: index)
        }
        if let begun = start { spans.append(begun..<text.endIndex) }
        guard !spans.isEmpty else { return "" }
        let first =
            ranges.first.map { match in spans.firstIndex { $0.upperBound > match.lowerBound } ?? 0 } ?? 0
        let count = max(words, 1)
        let lower = max(0, min(first - count / 3, spans.count - count))
        let upper = min(spans.count, lower + count)
        let from = spans[lower].lowerBound
        let to = spans[upper - 1].upperBound
        var result = lower > 0 ? ellipsis : ""
        var cursor = from
        for range in ranges where range.upperBound > from && range.lowerBound < to {
            let lowerBound = max(range.lowerBound, from)
            let upperBound = min(range.upperBound, to)
            result += text[cursor..<lowerBound] + open + text[lowerBound..<upperBound] + close
            cursor = upperBound
        }
        result += text[cursor..<to]
        if upper < spans.count { result += ellipsis }
        return result
    }
}

extension Results {
    /// Where the words of this results' full-text search occur in `object`'s indexed fields: one
    /// highlight per text that holds a match, in the order of the index's fields. The ranges come
    /// from the index's tokenizer, as the search's terms do: `cafe` highlights `Café`.
    ///
    /// - Complexity: the results' evaluation, once; then O(length of the object's indexed text).
    /// - Throws: what ``matching(_:in:)-(TextQuery,_)`` makes a read throw (no full-text search, an
    ///   invalid query, an index that is not available), and ``LodeError/storage(_:)``.
    public func highlights(in object: Element) throws -> [TextHighlight] {
        guard textFilter != nil else {
            throw LodeError.textIndexUnavailable(
                type: Element.schema.typeName, index: "", reason: "the results have no full-text search")
        }
        let (index, search) = try read(at: try evaluation()) { transaction in
            let state = try transaction.typeState(Element.self)
            guard let found = try textSearch(state) else {
                throw LodeError.textIndexUnavailable(
                    type: Element.schema.typeName, index: "", reason: "the results have no full-text search")
            }
            return found
        }
        let definition = index.definition
        var highlights: [TextHighlight] = []
        for (field, texts) in zip(definition.fields, definition.texts(object)) {
            for text in texts {
                let ranges = search.highlightRanges(in: text, tokenizer: definition.tokenizer)
                if !ranges.isEmpty {
                    highlights.append(TextHighlight(field: field, text: text, ranges: ranges))
                }
            }
        }
        return highlights
    }
}
