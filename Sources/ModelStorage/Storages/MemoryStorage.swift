import Foundation

/// A storage of sections of items of any types, edited by the app, that reports every edit as an
/// exact batch update.
///
/// Every edit checks its arguments first and throws a ``MemoryStorageError`` without changing
/// anything when they are wrong. Edits made inside ``performUpdates(_:)`` — nested or not — become one
/// ``StorageUpdate``; each edit outside one is its own update. Updates are computed from item
/// identities, so any sequence of edits yields one valid batch (deletes at old index paths, inserts
/// at new ones, moves, reloads).
///
/// The data-source methods (`numberOfSections()`, `numberOfItems(inSection:)`, `item(at:)`) show the
/// data a view has applied: with a delegate, an edit becomes visible when the delegate calls
/// ``StorageUpdate/applyDeferredDatasourceUpdates()``; without one, at once. The app-side queries
/// (``items(inSection:)``, ``indexPath(forItem:)``, ``sections``) always show every edit made.
open class MemoryStorage: BaseStorage, Storage {
    /// The sections, with every edit made (the app's view of the data).
    public private(set) var sections: [SectionModel] = [] {
        didSet { for section in sections { section.owner = self } }
    }
    private var visible: [[Any]] = []
    private var delivered: [ChangeSetBuilder<UInt64, UInt64>.SectionShape] = []
    private var batchDepth = 0
    /// The delivered updates and the newest the view applied (an older one applied late changes
    /// nothing, and an update applied out of order is reported as an anomaly).
    private let applied = AppliedUpdates()
    private var reloadedTokens = Set<UInt64>()
    private var needsReload = false

    /// Makes an empty storage.
    public override init() { super.init() }

    // MARK: Data source

    /// The number of sections the view has applied.
    public func numberOfSections() -> Int { visible.count }

    /// The number of items in a section, as the view has applied them.
    public func numberOfItems(inSection section: Int) -> Int {
        visible.indices.contains(section) ? visible[section].count : 0
    }

    /// The item at an index path, as the view has applied it, or nil.
    public func item(at indexPath: IndexPath) -> Any? {
        guard indexPath.count == 2, visible.indices.contains(indexPath.section),
            visible[indexPath.section].indices.contains(indexPath.item)
        else { return nil }
        return visible[indexPath.section][indexPath.item]
    }

    // MARK: Queries

    /// The items of a section, or nil when it does not exist.
    public func items(inSection index: Int) -> [Any]? {
        sections.indices.contains(index) ? sections[index].items : nil
    }

    /// The section at an index, or nil.
    public func section(atIndex index: Int) -> SectionModel? {
        sections.indices.contains(index) ? sections[index] : nil
    }

    /// The index path of the first item equal to `item`.
    public func indexPath<T: Equatable>(forItem item: T) -> IndexPath? {
        for (sectionIndex, section) in sections.enumerated() {
            for (row, candidate) in section.items.enumerated() where (candidate as? T) == item {
                return IndexPath(item: row, section: sectionIndex)
            }
        }
        return nil
    }

    /// The items of a section that are `T` (seeing through type-erased boxes), or nil when the
    /// section does not exist.
    public func items<T>(inSection index: Int, as type: T.Type) -> [T]? {
        items(inSection: index)?.compactMap { unwrapModel($0) as? T }
    }

    /// The index path of the first item equal to each of `items` (nil for one that is not stored);
    /// an item given twice names two stored items when two are equal to it.
    public func indexPaths<T: Equatable>(forItems items: [T]) -> [IndexPath?] {
        var taken = Set<IndexPath>()
        return items.map { item in
            for (sectionIndex, section) in sections.enumerated() {
                for (row, candidate) in section.items.enumerated() where (candidate as? T) == item {
                    let path = IndexPath(item: row, section: sectionIndex)
                    if taken.insert(path).inserted { return path }
                }
            }
            return nil
        }
    }

    /// The index of a section of this storage (by identity), or nil.
    public func sectionIndex(for section: SectionModel) -> Int? { sections.firstIndex { $0 === section } }

    /// The number of items in all sections.
    public var totalNumberOfItems: Int { sections.reduce(0) { $0 + $1.numberOfItems } }

    // MARK: Batching

    /// Runs `block` and reports everything it changed as one update (nested calls join the outer one).
    /// Edits that threw are not part of it; edits made before the error are.
    ///
    /// - Throws: whatever `block` throws; the edits it made before throwing are still delivered as one
    ///   update.
    public func performUpdates(_ block: () throws -> Void) rethrows {
        batchDepth += 1
        defer {
            batchDepth -= 1
            if batchDepth == 0 { flush() }
        }
        try block()
    }

    /// Runs `block`, applies everything it changed at once, and asks the delegate to reload instead
    /// of animating (the lineage left the reload to the caller).
    ///
    /// - Throws: whatever `block` throws.
    public func updateWithoutAnimations(_ block: () throws -> Void) rethrows {
        try performUpdates {
            needsReload = true
            try block()
        }
    }

    private func flush() {
        let shape = sections.map {
            ChangeSetBuilder<UInt64, UInt64>.SectionShape(id: $0.token, items: $0.tokens)
        }
        let snapshot = sections.map(\.items)
        if needsReload {
            needsReload = false
            reloadedTokens.removeAll()
            delivered = shape
            visible = snapshot
            applied.reloadAll()
            deliverReload()
            return
        }
        let changes = ChangeSetBuilder(from: delivered, to: shape, reloadedItems: reloadedTokens)
        reloadedTokens.removeAll()
        guard !changes.isEmpty else { return }
        delivered = shape
        let update = StorageUpdate()
        changes.record(into: update) { path in snapshot[path.section][path.item] }
        applied.enqueue(update, reportingTo: anomalyHandler) { [weak self] in self?.visible = snapshot }
        deliver(update)
    }

    /// Runs one edit as a batch of its own unless a batch is open.
    private func change(_ body: () throws -> Void) rethrows { try performUpdates(body) }

    /// Creates sections up to `index` (reported as inserted).
    @discardableResult
    private func validSection(_ index: Int) -> SectionModel {
        while sections.count <= index { sections.append(SectionModel()) }
        return sections[index]
    }

    private func checkSection(_ index: Int) throws(MemoryStorageError) {
        guard sections.indices.contains(index) else {
            throw .sectionOutOfRange(index, numberOfSections: sections.count)
        }
    }

    private func checkItem(_ path: IndexPath) throws(MemoryStorageError) {
        guard path.count == 2, sections.indices.contains(path.section),
            sections[path.section].items.indices.contains(path.item)
        else { throw .invalidIndexPath(path) }
    }

    // MARK: Adding and inserting

    /// Appends an item to a section, creating missing sections.
    public func addItem<T>(_ item: T, toSection index: Int = 0) {
        change {
            let section = validSection(index)
            section.insert(item, at: section.numberOfItems)
        }
    }

    /// Appends items to a section, creating missing sections.
    public func addItems<T>(_ items: [T], toSection index: Int = 0) {
        change {
            let section = validSection(index)
            for item in items { section.insert(item, at: section.numberOfItems) }
        }
    }

    /// Inserts an item at an index path (creating missing sections).
    /// - Throws: ``MemoryStorageError/indexPathTooBig(_:itemsInSection:)`` past the end of the section.
    public func insertItem<T>(_ item: T, to indexPath: IndexPath) throws {
        try insertItems([item], at: indexPath)
    }

    /// Inserts items one after another starting at an index path (creating missing sections).
    ///
    /// - Throws: ``MemoryStorageError/indexPathTooBig(_:itemsInSection:)`` for a position past the end of its
    ///   section; nothing is inserted then.
    public func insertItems<T>(_ items: [T], at indexPath: IndexPath) throws {
        guard indexPath.count == 2, indexPath.section >= 0, indexPath.item >= 0 else {
            throw MemoryStorageError.invalidIndexPath(indexPath)
        }
        let count =
            sections.indices.contains(indexPath.section) ? sections[indexPath.section].numberOfItems : 0
        guard indexPath.item <= count else {
            throw MemoryStorageError.indexPathTooBig(indexPath, itemsInSection: count)
        }
        change {
            let section = validSection(indexPath.section)
            for (offset, item) in items.enumerated() { section.insert(item, at: indexPath.item + offset) }
        }
    }

    /// Inserts each item at its index path, in order (each path counts the insertions before it).
    /// - Throws: ``MemoryStorageError/itemCountMismatch(items:indexPaths:)``, or the first invalid path;
    ///   nothing is inserted then.
    public func insertItems<T>(_ items: [T], to indexPaths: [IndexPath]) throws {
        guard items.count == indexPaths.count else {
            throw MemoryStorageError.itemCountMismatch(items: items.count, indexPaths: indexPaths.count)
        }
        // Check against the counts as they will be when each insertion happens.
        var counts = sections.map(\.numberOfItems)
        for path in indexPaths {
            guard path.count == 2, path.section >= 0, path.item >= 0 else {
                throw MemoryStorageError.invalidIndexPath(path)
            }
            while counts.count <= path.section { counts.append(0) }
            guard path.item <= counts[path.section] else {
                throw MemoryStorageError.indexPathTooBig(path, itemsInSection: counts[path.section])
            }
            counts[path.section] += 1
        }
        change {
            for (item, path) in zip(items, indexPaths) {
                validSection(path.section).insert(item, at: path.item)
            }
        }
    }

    /// Inserts a section at an index.
    /// - Throws: ``MemoryStorageError/sectionOutOfRange(_:numberOfSections:)`` past the end.
    public func insertSection(_ section: SectionModel, atIndex index: Int) throws {
        guard index >= 0 && index <= sections.count else {
            throw MemoryStorageError.sectionOutOfRange(index, numberOfSections: sections.count)
        }
        guard !sections.contains(where: { $0 === section }) else {
            throw MemoryStorageError.sectionOutOfRange(index, numberOfSections: sections.count)
        }
        change { sections.insert(section, at: index) }
    }

    // MARK: Replacing and reloading

    /// Reports an item as changed (its view reloads with the current value).
    /// - Throws: ``MemoryStorageError/itemNotFound(_:)``.
    public func reloadItem<T: Equatable>(_ item: T) throws {
        guard let path = indexPath(forItem: item) else { throw MemoryStorageError.itemNotFound("\(item)") }
        change {
            sections[path.section].replace(at: path.item, with: item)
            reloadedTokens.insert(sections[path.section].tokens[path.item])
        }
    }

    /// Replaces the first item equal to `itemToReplace` with `replacingItem` (reported as a reload).
    ///
    /// - Throws: ``MemoryStorageError/itemNotFound(_:)`` when no item equals `itemToReplace`.
    public func replaceItem<T: Equatable>(_ itemToReplace: T, with replacingItem: Any) throws {
        guard let path = indexPath(forItem: itemToReplace) else {
            throw MemoryStorageError.itemNotFound("\(itemToReplace)")
        }
        change {
            sections[path.section].replace(at: path.item, with: replacingItem)
            reloadedTokens.insert(sections[path.section].tokens[path.item])
        }
    }

    // MARK: Removing

    /// Removes the first item equal to `item`.
    ///
    /// - Throws: ``MemoryStorageError/itemNotFound(_:)`` when no item equals `item`.
    public func removeItem<T: Equatable>(_ item: T) throws {
        guard let path = indexPath(forItem: item) else { throw MemoryStorageError.itemNotFound("\(item)") }
        change { sections[path.section].remove(at: path.item) }
    }

    /// Removes the first item equal to each of `items`; throws, removing nothing, if one is missing.
    ///
    /// - Throws: ``MemoryStorageError/itemNotFound(_:)`` for the first item no stored item equals; nothing is
    ///   removed then.
    public func removeItems<T: Equatable>(_ items: [T]) throws {
        // Each occurrence removes a distinct stored item.
        var paths: [IndexPath] = []
        for (item, path) in zip(items, indexPaths(forItems: items)) {
            guard let path else { throw MemoryStorageError.itemNotFound("\(item)") }
            paths.append(path)
        }
        change { removeSorted(paths) }
    }

    /// Removes the items at index paths; throws, removing nothing, if one does not name an item.
    ///
    /// - Throws: ``MemoryStorageError/invalidIndexPath(_:)`` for an index path that names no item; nothing is
    ///   removed then.
    public func removeItems(at indexPaths: [IndexPath]) throws {
        for path in indexPaths { try checkItem(path) }
        change { removeSorted(Array(Set(indexPaths))) }
    }

    private func removeSorted(_ paths: [IndexPath]) {
        for path in paths.sorted(by: >) { sections[path.section].remove(at: path.item) }
    }

    /// Removes every item of a section (the section stays).
    ///
    /// - Throws: ``MemoryStorageError/sectionOutOfRange(_:numberOfSections:)`` for a section the storage does
    ///   not have.
    public func removeItems(fromSection index: Int) throws {
        try checkSection(index)
        change { sections[index].removeAll() }
    }

    /// Removes every item of every section (the sections stay); the view reloads.
    public func removeAllItems() {
        change {
            for section in sections { section.removeAll() }
            needsReload = true
        }
    }

    // MARK: Setting

    /// Replaces a section's items (creating missing sections); the view reloads.
    public func setItems<T>(_ items: [T], forSection index: Int = 0) {
        change {
            validSection(index).items = items
            needsReload = true
        }
    }

    /// Replaces a section's items — DTTableViewManager's spelling of ``setItems(_:forSection:)``, which
    /// its guides use to show a section with no items.
    public func setItems<T>(_ items: [T], forSectionAt index: Int) { setItems(items, forSection: index) }

    /// Replaces every section; the view reloads.
    public func setItemsForAllSections<T>(_ items: [[T]]) {
        change {
            sections = items.map { SectionModel(items: $0) }
            needsReload = true
        }
    }

    /// Puts a section at an index (creating missing sections); the view reloads.
    public func setSection(_ section: SectionModel, forSection index: Int) {
        change {
            validSection(index)
            sections[index] = section
            needsReload = true
        }
    }

    // MARK: Sections

    /// Deletes sections.
    /// - Throws: ``MemoryStorageError/sectionOutOfRange(_:numberOfSections:)``, deleting nothing.
    public func deleteSections(_ indexes: IndexSet) throws {
        for index in indexes { try checkSection(index) }
        change {
            for index in indexes.sorted(by: >) { sections.remove(at: index) }
        }
    }

    /// Moves a section.
    ///
    /// - Throws: ``MemoryStorageError/sectionOutOfRange(_:numberOfSections:)`` for a section the storage does
    ///   not have.
    public func moveSection(_ sourceSectionIndex: Int, toSection destinationSectionIndex: Int) throws {
        try checkSection(sourceSectionIndex)
        try checkSection(destinationSectionIndex)
        change {
            let section = sections.remove(at: sourceSectionIndex)
            sections.insert(section, at: destinationSectionIndex)
        }
    }

    // MARK: Moving items

    /// Moves an item. The destination counts the section after the item was taken out.
    ///
    /// A destination past the last section creates the missing sections, as ``addItem(_:toSection:)``
    /// and ``insertItem(_:to:)`` do (DTModelStorage does the same): the update inserts the sections
    /// and deletes the item where it was — a view shows an inserted section's rows with it, so the
    /// item is not a move.
    ///
    /// - Throws: ``MemoryStorageError/invalidIndexPath(_:)`` when `source` names no item,
    ///   ``MemoryStorageError/indexPathTooBig(_:itemsInSection:)`` when `destination` is past the end of its
    ///   section.
    public func moveItem(at source: IndexPath, to destination: IndexPath) throws {
        try checkMove(source, destination, creatingSections: true)
        change {
            let (item, token) = sections[source.section].remove(at: source.item)
            validSection(destination.section).insert(item, at: destination.item, token: token)
        }
    }

    private func checkMove(_ source: IndexPath, _ destination: IndexPath, creatingSections: Bool = false)
        throws(MemoryStorageError)
    {
        try checkItem(source)
        guard destination.count == 2, destination.section >= 0, destination.item >= 0,
            creatingSections || sections.indices.contains(destination.section)
        else {
            throw .invalidIndexPath(destination)
        }
        guard sections.indices.contains(destination.section) else {
            // A section that does not exist yet is empty.
            guard destination.item == 0 else { throw .indexPathTooBig(destination, itemsInSection: 0) }
            return
        }
        let countAfterRemoval =
            sections[destination.section].numberOfItems - (source.section == destination.section ? 1 : 0)
        guard destination.item <= countAfterRemoval else {
            throw .indexPathTooBig(destination, itemsInSection: countAfterRemoval)
        }
    }

    /// Moves an item that the view has already moved (a drag and drop): the data changes at once, in
    /// the view's data too, and no update is sent.
    ///
    /// - Throws: ``MemoryStorageError/viewNotUpToDate(pendingUpdates:)`` when the view has not applied
    ///   an earlier update yet: its rows are not the data's, so the move cannot be matched to them
    ///   (nothing changes).
    public func moveItemWithoutAnimation(from source: IndexPath, to destination: IndexPath) throws {
        try checkMove(source, destination)
        if batchDepth == 0 && applied.pending > 0 {
            throw MemoryStorageError.viewNotUpToDate(pendingUpdates: applied.pending)
        }
        let (item, token) = sections[source.section].remove(at: source.item)
        sections[destination.section].insert(item, at: destination.item, token: token)
        if batchDepth == 0 {
            // The view shows it already: it is delivered and visible.
            let visibleItem = visible[source.section].remove(at: source.item)
            visible[destination.section].insert(visibleItem, at: destination.item)
            let moved = delivered[source.section].items.remove(at: source.item)
            delivered[destination.section].items.insert(moved, at: destination.item)
        }
    }
}
