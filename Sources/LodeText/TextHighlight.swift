import LodeCodec
import LodeStore

import struct LMDB.Database

/// Where the words of a full-text search occur in one text of an object: for highlighting matches
/// in a list (`results.highlights(in:)`).
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
