/// SQL text for partial-sync filters: a field of a row's data as an expression, names as literals.
/// Filters compare the expression and a filter index is built on it, so the two match.
enum FilterSQL {
    /// `text` as an SQL string literal: `E'…'`, backslashes and quotes escaped (its meaning does not
    /// depend on `standard_conforming_strings`). Text with a NUL character has none: PostgreSQL text
    /// cannot hold one.
    static func literal(_ text: String) -> String? {
        guard !text.contains("\u{0}") else { return nil }
        return "E'"
            + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            + "'"
    }

    /// The SQL expression of the field at `path` of a row's data: `(data -> 'field')` for a top-level
    /// field, `(data #> '{a,b}')` for a nested one. Filters compare it, and a filter index is built on
    /// it, so the two match. A path with a NUL character (which no JSON key from Lode holds) reads as
    /// SQL NULL.
    static func fieldExpression(_ path: [String]) -> String {
        if path.count == 1, let key = literal(path[0]) { return "(data -> \(key))" }
        guard let array = literal(SyncValue.arrayLiteral(path)) else { return "(NULL::jsonb)" }
        return "(data #> \(array)::text[])"
    }
}
