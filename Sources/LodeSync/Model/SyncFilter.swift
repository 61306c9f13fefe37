/// Which rows of a type's server table a client keeps (partial sync): conditions on the fields of the
/// stored objects, evaluated by PostgreSQL. A row that stops matching — changed by anyone — leaves
/// the store; one that starts matching arrives.
///
/// Field names and values are sent as parameters, never as SQL text. A filter chooses what a client
/// downloads; it does not protect rows from a client that connects with the same rights (use
/// PostgreSQL's roles and row-level security for that).
public indirect enum SyncFilter: Sendable, Equatable {
    /// The field at `path` (top-level field first, then nested ones) equals `value`.
    case equals([String], SyncValue)
    /// The field at `path` is one of `values`.
    case isIn([String], [SyncValue])
    /// The field at `path` is missing or null.
    case isNull([String])
    /// Every condition holds.
    case all([SyncFilter])
    /// At least one condition holds.
    case any([SyncFilter])
    /// The condition does not hold.
    case not(SyncFilter)

    /// `field` (a top-level field) equals `value`.
    public static func field(_ field: String, equals value: SyncValue) -> SyncFilter {
        .equals([field], value)
    }

    /// The SQL expression over the row's `data`, with its values appended to `parameters` (`$n`).
    func sql(parameters: inout [String?]) -> String {
        func bind(_ text: String) -> String {
            parameters.append(text)
            return "$\(parameters.count)"
        }
        // The path is SQL text (a literal): an index on the same expression serves the filter
        // (``SyncServer/FilterIndex``); values stay parameters.
        func path(_ path: [String]) -> String { FilterSQL.fieldExpression(path) }
        switch self {
        case .equals(let field, let value):
            return "(\(path(field)) = \(bind(value.json))::jsonb)"
        case .isIn(let field, let values):
            guard !values.isEmpty else { return "false" }
            return "(\(path(field)) = ANY (\(bind(SyncValue.arrayLiteral(values.map(\.json))))::jsonb[]))"
        case .isNull(let field):
            return "(\(path(field)) IS NULL OR \(path(field)) = 'null'::jsonb)"
        case .all(let filters):
            return filters.isEmpty
                ? "true"
                : "(" + filters.map { $0.sql(parameters: &parameters) }.joined(separator: " AND ") + ")"
        case .any(let filters):
            return filters.isEmpty
                ? "false"
                : "(" + filters.map { $0.sql(parameters: &parameters) }.joined(separator: " OR ") + ")"
        case .not(let filter):
            return "(NOT coalesce(\(filter.sql(parameters: &parameters)), false))"
        }
    }

    /// A stable text of the filter: when it changes, the type is downloaded again from the start.
    var fingerprint: String {
        var parameters: [String?] = []
        let text = sql(parameters: &parameters)
        return text + " " + parameters.map { $0 ?? "" }.joined(separator: "\u{1F}")
    }
}
