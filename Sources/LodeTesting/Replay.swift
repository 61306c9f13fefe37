import Foundation
import Lode
import ModelStorage

extension ListMirror where Item == ObjectID {
    /// A mirror of the identities `results` hold.
    ///
    /// - Throws: what evaluating the results throws (`LodeError`).
    public init<Element>(_ results: Results<Element>) throws { self.init(sections: [try results.objectIDs]) }

    /// A mirror of the identities of each section.
    ///
    /// - Throws: what evaluating the sections throws (`LodeError`).
    public init<Key, Element>(_ sections: SectionedResults<Key, Element>) throws {
        self.init(sections: try sections.fetchSections().map { try $0.objects.objectIDs })
    }

    /// A mirror of what a live-results storage's data source shows.
    public init(_ storage: LiveResultsStorage) { self.init(sections: Self.contents(of: storage)) }

    /// Replays a change of `results` and checks the mirror then shows what a fresh read of the same
    /// query shows (evaluated anew on the last committed version, not by the live engine).
    ///
    /// - Throws: `ListMirror.Inconsistency` naming what a table view would reject, or the first
    ///   section that differs from the fresh read.
    public mutating func replay<Element>(_ change: CollectionChange, against results: Results<Element>) throws
    {
        try replay(change.storageUpdate(), dataSource: [try results.reevaluated().objectIDs])
    }

    /// Replays a change of sectioned results against a fresh read of them.
    ///
    /// - Throws: `ListMirror.Inconsistency` naming what a table view would reject or the first section that
    ///   differs from a fresh read, and what the fresh read throws.
    public mutating func replay<Key, Element>(
        _ change: SectionedChange, against sections: SectionedResults<Key, Element>
    ) throws {
        let fresh = try sections.reevaluated().fetchSections().map { try $0.objects.objectIDs }
        try replay(change.storageUpdate(), dataSource: fresh)
    }

    /// Replays an update of a live-results storage (after its delegate applied it) against what its
    /// data source shows.
    ///
    /// - Throws: `ListMirror.Inconsistency` naming what a table view would reject or the first section that
    ///   differs from the storage's data source.
    public mutating func replay(_ update: StorageUpdate, against storage: LiveResultsStorage) throws {
        try replay(update, dataSource: Self.contents(of: storage))
    }

    private static func contents(of storage: LiveResultsStorage) -> [[ObjectID]] {
        (0..<storage.numberOfSections()).map { section in
            (0..<storage.numberOfItems(inSection: section)).compactMap {
                storage.objectID(at: IndexPath(item: $0, section: section))
            }
        }
    }
}

extension ListMirror where Item: Equatable {
    /// A mirror of what `storage`'s data source shows, each item read as an `Item`.
    public init(_ storage: any Storage, as type: Item.Type = Item.self) {
        self.init(sections: Self.contents(of: storage))
    }

    /// Replays an update of any storage (after it was applied) against what its data source shows.
    ///
    /// - Throws: `ListMirror.Inconsistency` naming what a table view would reject or the first section
    ///   that differs from the storage's data source.
    public mutating func replay(_ update: StorageUpdate, against storage: any Storage) throws {
        try replay(update, dataSource: Self.contents(of: storage))
    }

    private static func contents(of storage: any Storage) -> [[Item]] {
        (0..<storage.numberOfSections()).map { section in
            (0..<storage.numberOfItems(inSection: section)).compactMap {
                storage.item(at: IndexPath(item: $0, section: section), as: Item.self)
            }
        }
    }
}
