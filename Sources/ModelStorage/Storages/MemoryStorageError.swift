import Foundation

/// Why a ``MemoryStorage`` edit was refused. Every refused edit throws to its caller and changes
/// nothing.
public enum MemoryStorageError: Error, Equatable, CustomStringConvertible {
    /// The index path is past the end of its section.
    case indexPathTooBig(IndexPath, itemsInSection: Int)
    /// No item equal to this one is stored.
    case itemNotFound(String)
    /// The section index is out of range.
    case sectionOutOfRange(Int, numberOfSections: Int)
    /// `insertItems(_:to:)` got a different number of items and index paths.
    case itemCountMismatch(items: Int, indexPaths: Int)
    /// The index path does not name an item.
    case invalidIndexPath(IndexPath)
    /// The view has not applied this many delivered updates yet, so an edit it made by itself (a
    /// drag and drop) cannot be matched to the data.
    case viewNotUpToDate(pendingUpdates: Int)

    /// One line a developer can act on.
    public var description: String {
        switch self {
        case .indexPathTooBig(let path, let count):
            return
                "index path \(path) is past the end of section \(path.first ?? 0), which has \(count) items"
        case .itemNotFound(let item): return "no item equal to \(item) is in the storage"
        case .sectionOutOfRange(let index, let count):
            return "section \(index) does not exist (there are \(count))"
        case .itemCountMismatch(let items, let paths): return "\(items) items for \(paths) index paths"
        case .invalidIndexPath(let path): return "index path \(path) does not name an item"
        case .viewNotUpToDate(let pending):
            return
                "the view has not applied \(pending) earlier update\(pending == 1 ? "" : "s") yet, so a move it made itself cannot be matched to the data; apply the updates first"
        }
    }
}
