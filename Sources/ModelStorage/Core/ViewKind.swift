/// What kind of view a mapping makes.
public enum ViewKind: Hashable, Sendable, CustomStringConvertible {
    /// A cell for an item.
    case cell
    /// A supplementary view of a kind (a header, a footer…).
    case supplementary(String)

    /// Section headers of table views (``SupplementaryKind/tableHeader``), the kind storages answer
    /// with their header models by default.
    public static var header: ViewKind { .supplementary(SupplementaryKind.tableHeader) }
    /// Section footers of table views (``SupplementaryKind/tableFooter``).
    public static var footer: ViewKind { .supplementary(SupplementaryKind.tableFooter) }

    /// `cell`, or the supplementary kind's name.
    public var description: String {
        switch self {
        case .cell: return "cell"
        case .supplementary(let kind): return kind
        }
    }
}
