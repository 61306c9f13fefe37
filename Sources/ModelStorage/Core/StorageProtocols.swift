import Foundation

/// What a table-like view reads: sections of items.
public protocol Storage: AnyObject {
    /// The number of sections.
    func numberOfSections() -> Int
    /// The number of items in a section (0 for a missing section).
    func numberOfItems(inSection section: Int) -> Int
    /// The item at an index path, or nil when there is none.
    func item(at indexPath: IndexPath) -> Any?
}

extension Storage {
    /// The item at an index path if it is a `T` (seeing through optionals and type-erased boxes such
    /// as ``AnyIdentifiableEquatable``), or nil.
    public func item<T>(at indexPath: IndexPath, as type: T.Type) -> T? {
        item(at: indexPath).flatMap { unwrapModel($0) as? T }
    }

    /// The storage as a ``SupplementaryStorage`` (for header and footer models), or nil when it has
    /// none — DTTableViewManager's `supplementaryStorage` accessor, so
    /// `owner.supplementaryStorage?.setSectionHeaderModels(…)` reads as it does there.
    public var supplementaryStorage: (any SupplementaryStorage)? { self as? any SupplementaryStorage }
}

/// One section of a storage.
public protocol Section {
    /// The item at an index, or nil.
    func item(at index: Int) -> Any?
    /// The number of items.
    var numberOfItems: Int { get }
    /// True when the section has no items.
    var isEmpty: Bool { get }
}

extension Section {
    /// True when the section has no items.
    public var isEmpty: Bool { numberOfItems == 0 }
}

/// Receives what a storage did: one animated batch per ``StorageUpdate``, or a request to reload.
public protocol StorageUpdating: AnyObject {
    /// Apply this batch (call ``StorageUpdate/applyDeferredDatasourceUpdates()`` first, inside the
    /// view's batch-update block).
    func storageDidPerformUpdate(_ update: StorageUpdate)
    /// Reload everything (the storage changed without a batch).
    func storageNeedsReloading()
    /// The storage could not produce its next update (a record no longer decodes, the store was
    /// closed…). It keeps showing what the view last applied and tries again with the next change.
    /// The default implementation writes the error to standard error, so it is never silent.
    func storageDidFail(_ error: any Error)
}

extension StorageUpdating {
    /// Writes the error to standard error.
    public func storageDidFail(_ error: any Error) {
        FileHandle.standardError.write(Data("storage update failed: \(error)\n".utf8))
    }
}

/// What a storage emits, as delivered through ``BaseStorage/updates``.
///
/// An event is handed over whole: the storage never touches an update again once it has delivered
/// it, and updates reach the stream with their data changes already applied (or applied by the
/// delegate), so the receiving task only reads it. The models it carries are the app's own values.
public enum StorageEvent: @unchecked Sendable {
    // @unchecked: `StorageUpdate` is a class and `any Error` may not be Sendable; an event is handed
    // over whole and never touched by the storage again (see above), so the receiver only reads it.
    /// An animated batch.
    case update(StorageUpdate)
    /// A full reload.
    case reload
    /// The storage could not produce its next update; it keeps its contents and tries again with the
    /// next change.
    case failure(any Error)
}

/// Header, footer and other supplementary models of a storage's sections.
///
/// Routing (kept from the lineage): for the header kind the header provider answers first, for the
/// footer kind the footer provider; every other kind goes to ``supplementaryModelProvider``.
public protocol SupplementaryStorage: AnyObject {
    /// The header model of a section.
    var headerModelProvider: ((_ sectionIndex: Int) -> Any?)? { get set }
    /// The footer model of a section.
    var footerModelProvider: ((_ sectionIndex: Int) -> Any?)? { get set }
    /// The model of any supplementary kind at an index path.
    var supplementaryModelProvider: ((_ kind: String, _ indexPath: IndexPath) -> Any?)? { get set }
    /// The kind answered by the header provider.
    var supplementaryHeaderKind: String? { get set }
    /// The kind answered by the footer provider.
    var supplementaryFooterKind: String? { get set }
}

extension SupplementaryStorage {
    /// The header model of a section. Asking for a section the storage does not have reports
    /// ``ListAnomaly/supplementaryForMissingSection(kind:section:numberOfSections:)``.
    public func headerModel(forSection index: Int) -> Any? {
        noteSupplementary(supplementaryHeaderKind ?? "header", section: index)
        return headerModelProvider?(index)
    }

    /// The footer model of a section (a missing section is reported as for headers).
    public func footerModel(forSection index: Int) -> Any? {
        noteSupplementary(supplementaryFooterKind ?? "footer", section: index)
        return footerModelProvider?(index)
    }

    /// The header model of a section — DTTableViewManager's spelling of ``headerModel(forSection:)``.
    public func header(for section: Int) -> Any? { headerModel(forSection: section) }

    /// The footer model of a section — DTTableViewManager's spelling of ``footerModel(forSection:)``.
    public func footer(for section: Int) -> Any? { footerModel(forSection: section) }

    /// The model of a supplementary kind at an index path (a missing section is reported as for
    /// headers).
    public func supplementaryModel(ofKind kind: String, forSectionAt indexPath: IndexPath) -> Any? {
        if let section = indexPath.first { noteSupplementary(kind, section: section) }
        return supplementaryModelProvider?(kind, indexPath)
    }

    private func noteSupplementary(_ kind: String, section: Int) {
        guard let storage = self as? any Storage, let base = self as? BaseStorage else { return }
        let count = storage.numberOfSections()
        guard section < 0 || section >= count else { return }
        base.anomalyHandler.report(
            .supplementaryForMissingSection(kind: kind, section: section, numberOfSections: count))
    }

    /// Header models, one per section (a section past the end has none).
    public func setSectionHeaderModels<T>(_ models: [T]) {
        headerModelProvider = { index in models.indices.contains(index) ? models[index] : nil }
    }

    /// Footer models, one per section.
    public func setSectionFooterModels<T>(_ models: [T]) {
        footerModelProvider = { index in models.indices.contains(index) ? models[index] : nil }
    }

    /// Uses the table-view kind names for headers and footers.
    public func configureForTableViewUsage() {
        supplementaryHeaderKind = SupplementaryKind.tableHeader
        supplementaryFooterKind = SupplementaryKind.tableFooter
    }

    /// Uses the collection-view flow-layout kind names for headers and footers.
    public func configureForCollectionViewFlowLayoutUsage() {
        supplementaryHeaderKind = SupplementaryKind.collectionHeader
        supplementaryFooterKind = SupplementaryKind.collectionFooter
    }
}

/// Supplementary kind names used by table and collection views.
public enum SupplementaryKind {
    /// Table-view section headers.
    public static let tableHeader = "DTTableViewElementSectionHeader"
    /// Table-view section footers.
    public static let tableFooter = "DTTableViewElementSectionFooter"
    /// Collection-view flow-layout headers.
    public static let collectionHeader = "UICollectionElementKindSectionHeader"
    /// Collection-view flow-layout footers.
    public static let collectionFooter = "UICollectionElementKindSectionFooter"
}
