/// Why a ``Snapshot`` edit was refused (a diffable data source snapshot would crash instead).
public enum SnapshotError<SectionID: Hashable & Sendable, ItemID: Hashable & Sendable>: Error, Equatable,
    CustomStringConvertible
{
    /// The section is already in the snapshot.
    case duplicateSection(SectionID)
    /// The item is already in the snapshot.
    case duplicateItem(ItemID)
    /// The section is not in the snapshot.
    case sectionNotFound(SectionID)
    /// The item is not in the snapshot.
    case itemNotFound(ItemID)
    /// Items were appended with no section to hold them.
    case noSections
    /// An item or section was moved relative to itself.
    case moveRelativeToItself

    /// One line a developer can act on.
    public var description: String {
        switch self {
        case .duplicateSection(let id): return "section \(id) is already in the snapshot"
        case .duplicateItem(let id): return "item \(id) is already in the snapshot"
        case .sectionNotFound(let id): return "section \(id) is not in the snapshot"
        case .itemNotFound(let id): return "item \(id) is not in the snapshot"
        case .noSections: return "the snapshot has no section to append items to"
        case .moveRelativeToItself: return "an item or section cannot be moved relative to itself"
        }
    }
}
