/// The identifiers of a list's sections and items, built up and then applied to a
/// ``SnapshotStorage`` (like `NSDiffableDataSourceSnapshot`, with errors that throw instead of
/// crashing). Identifiers are unique: a section or item is in at most one place.
public struct Snapshot<SectionID: Hashable & Sendable, ItemID: Hashable & Sendable> {
    /// The error type of this snapshot's edits.
    public typealias Failure = SnapshotError<SectionID, ItemID>

    private(set) var sections: [(id: SectionID, items: [ItemID])] = []
    private var sectionIndex: [SectionID: Int] = [:]
    private var itemSection: [ItemID: SectionID] = [:]
    /// Items marked for reloading when the snapshot is applied.
    public private(set) var reloadedItems = Set<ItemID>()
    /// Sections marked for reloading when the snapshot is applied.
    public private(set) var reloadedSections = Set<SectionID>()

    /// An empty snapshot.
    public init() {}

    // MARK: Reading

    /// The number of sections.
    public var numberOfSections: Int { sections.count }
    /// The number of items in all sections.
    public var numberOfItems: Int { itemSection.count }
    /// The section identifiers, in order.
    public var sectionIdentifiers: [SectionID] { sections.map(\.id) }
    /// Every item identifier, section by section.
    public var itemIdentifiers: [ItemID] { sections.flatMap(\.items) }

    /// The items of a section.
    ///
    /// - Throws: ``SnapshotError`` `.sectionNotFound` for a section not in the snapshot.
    public func itemIdentifiers(inSection section: SectionID) throws(Failure) -> [ItemID] {
        guard let index = sectionIndex[section] else { throw .sectionNotFound(section) }
        return sections[index].items
    }

    /// The number of items in a section.
    ///
    /// - Throws: ``SnapshotError`` `.sectionNotFound` for a section not in the snapshot.
    public func numberOfItems(inSection section: SectionID) throws(Failure) -> Int {
        try itemIdentifiers(inSection: section).count
    }

    /// The section that holds an item, or nil.
    public func sectionIdentifier(containingItem item: ItemID) -> SectionID? { itemSection[item] }

    /// The position of an item within its section, or nil.
    public func indexOfItem(_ item: ItemID) -> Int? {
        guard let section = itemSection[item], let index = sectionIndex[section] else { return nil }
        return sections[index].items.firstIndex(of: item)
    }

    /// The position of a section, or nil.
    public func indexOfSection(_ section: SectionID) -> Int? { sectionIndex[section] }

    // MARK: Sections

    private mutating func reindexSections() {
        sectionIndex.removeAll(keepingCapacity: true)
        for (index, section) in sections.enumerated() { sectionIndex[section.id] = index }
    }

    private func checkNew(_ identifiers: [SectionID]) throws(Failure) {
        var seen = Set<SectionID>()
        for id in identifiers where sectionIndex[id] != nil || !seen.insert(id).inserted {
            throw .duplicateSection(id)
        }
    }

    /// Adds sections at the end.
    ///
    /// - Throws: ``SnapshotError`` `.duplicateSection` for a section already in the snapshot (or given
    ///   twice); nothing changes then.
    public mutating func appendSections(_ identifiers: [SectionID]) throws(Failure) {
        try checkNew(identifiers)
        sections += identifiers.map { ($0, []) }
        reindexSections()
    }

    /// Inserts sections before another.
    ///
    /// - Throws: ``SnapshotError`` `.duplicateSection` as for ``appendSections(_:)``, and `.sectionNotFound`
    ///   for a `target` not in the snapshot.
    public mutating func insertSections(_ identifiers: [SectionID], beforeSection target: SectionID)
        throws(Failure)
    {
        try checkNew(identifiers)
        guard let index = sectionIndex[target] else { throw .sectionNotFound(target) }
        sections.insert(contentsOf: identifiers.map { ($0, []) }, at: index)
        reindexSections()
    }

    /// Inserts sections after another.
    ///
    /// - Throws: as ``insertSections(_:beforeSection:)``.
    public mutating func insertSections(_ identifiers: [SectionID], afterSection target: SectionID)
        throws(Failure)
    {
        try checkNew(identifiers)
        guard let index = sectionIndex[target] else { throw .sectionNotFound(target) }
        sections.insert(contentsOf: identifiers.map { ($0, []) }, at: index + 1)
        reindexSections()
    }

    /// Deletes sections and their items.
    ///
    /// - Throws: ``SnapshotError`` `.sectionNotFound` for a section not in the snapshot; nothing changes
    ///   then.
    public mutating func deleteSections(_ identifiers: [SectionID]) throws(Failure) {
        for id in identifiers where sectionIndex[id] == nil { throw .sectionNotFound(id) }
        let doomed = Set(identifiers)
        for section in sections where doomed.contains(section.id) {
            for item in section.items { itemSection[item] = nil }
        }
        sections.removeAll { doomed.contains($0.id) }
        reloadedSections.subtract(doomed)
        reindexSections()
    }

    /// Moves a section before another.
    ///
    /// - Throws: ``SnapshotError`` `.sectionNotFound` for a section not in the snapshot,
    ///   `.moveRelativeToItself` when `target` is `identifier`.
    public mutating func moveSection(_ identifier: SectionID, beforeSection target: SectionID) throws(Failure)
    {
        try moveSection(identifier, relativeTo: target, after: false)
    }

    /// Moves a section after another.
    ///
    /// - Throws: as ``moveSection(_:beforeSection:)``.
    public mutating func moveSection(_ identifier: SectionID, afterSection target: SectionID) throws(Failure)
    {
        try moveSection(identifier, relativeTo: target, after: true)
    }

    private mutating func moveSection(_ identifier: SectionID, relativeTo target: SectionID, after: Bool)
        throws(Failure)
    {
        guard identifier != target else { throw .moveRelativeToItself }
        guard let from = sectionIndex[identifier] else { throw .sectionNotFound(identifier) }
        guard sectionIndex[target] != nil else { throw .sectionNotFound(target) }
        let section = sections.remove(at: from)
        reindexSections()
        sections.insert(section, at: sectionIndex[target]! + (after ? 1 : 0))
        reindexSections()
    }

    /// Marks sections for reloading.
    ///
    /// - Throws: ``SnapshotError`` `.sectionNotFound` for a section not in the snapshot.
    public mutating func reloadSections(_ identifiers: [SectionID]) throws(Failure) {
        for id in identifiers where sectionIndex[id] == nil { throw .sectionNotFound(id) }
        reloadedSections.formUnion(identifiers)
    }

    // MARK: Items

    private func checkNew(_ identifiers: [ItemID]) throws(Failure) {
        var seen = Set<ItemID>()
        for id in identifiers where itemSection[id] != nil || !seen.insert(id).inserted {
            throw .duplicateItem(id)
        }
    }

    /// Adds items at the end of a section (by default the last one).
    ///
    /// - Throws: ``SnapshotError`` `.duplicateItem` for an item already in the snapshot (or given twice),
    ///   `.sectionNotFound` for a `section` not in it, `.noSections` when it has none; nothing changes then.
    public mutating func appendItems(_ identifiers: [ItemID], toSection section: SectionID? = nil)
        throws(Failure)
    {
        try checkNew(identifiers)
        guard let target = section ?? sections.last?.id else { throw .noSections }
        guard let index = sectionIndex[target] else { throw .sectionNotFound(target) }
        sections[index].items += identifiers
        for id in identifiers { itemSection[id] = target }
    }

    /// Inserts items before another item.
    ///
    /// - Throws: ``SnapshotError`` `.duplicateItem` as for ``appendItems(_:toSection:)``, and `.itemNotFound`
    ///   for a `target` not in the snapshot.
    public mutating func insertItems(_ identifiers: [ItemID], beforeItem target: ItemID) throws(Failure) {
        try insertItems(identifiers, relativeTo: target, after: false)
    }

    /// Inserts items after another item.
    ///
    /// - Throws: as ``insertItems(_:beforeItem:)``.
    public mutating func insertItems(_ identifiers: [ItemID], afterItem target: ItemID) throws(Failure) {
        try insertItems(identifiers, relativeTo: target, after: true)
    }

    private mutating func insertItems(_ identifiers: [ItemID], relativeTo target: ItemID, after: Bool)
        throws(Failure)
    {
        try checkNew(identifiers)
        guard let section = itemSection[target], let sectionPosition = sectionIndex[section],
            let position = sections[sectionPosition].items.firstIndex(of: target)
        else { throw .itemNotFound(target) }
        sections[sectionPosition].items.insert(contentsOf: identifiers, at: position + (after ? 1 : 0))
        for id in identifiers { itemSection[id] = section }
    }

    /// Deletes items.
    ///
    /// - Throws: ``SnapshotError`` `.itemNotFound` for an item not in the snapshot; nothing changes then.
    public mutating func deleteItems(_ identifiers: [ItemID]) throws(Failure) {
        for id in identifiers where itemSection[id] == nil { throw .itemNotFound(id) }
        let doomed = Set(identifiers)
        for id in doomed { itemSection[id] = nil }
        for index in sections.indices { sections[index].items.removeAll { doomed.contains($0) } }
        reloadedItems.subtract(doomed)
    }

    /// Deletes every item (sections stay).
    public mutating func deleteAllItems() {
        for index in sections.indices { sections[index].items.removeAll() }
        itemSection.removeAll()
        reloadedItems.removeAll()
    }

    /// Moves an item before another (possibly into another section).
    ///
    /// - Throws: ``SnapshotError`` `.itemNotFound` for an item not in the snapshot, `.moveRelativeToItself`
    ///   when `target` is `identifier`.
    public mutating func moveItem(_ identifier: ItemID, beforeItem target: ItemID) throws(Failure) {
        try moveItem(identifier, relativeTo: target, after: false)
    }

    /// Moves an item after another.
    ///
    /// - Throws: as ``moveItem(_:beforeItem:)``.
    public mutating func moveItem(_ identifier: ItemID, afterItem target: ItemID) throws(Failure) {
        try moveItem(identifier, relativeTo: target, after: true)
    }

    private mutating func moveItem(_ identifier: ItemID, relativeTo target: ItemID, after: Bool)
        throws(Failure)
    {
        guard identifier != target else { throw .moveRelativeToItself }
        guard let from = itemSection[identifier], let fromIndex = sectionIndex[from] else {
            throw .itemNotFound(identifier)
        }
        guard itemSection[target] != nil else { throw .itemNotFound(target) }
        sections[fromIndex].items.removeAll { $0 == identifier }
        let to = itemSection[target]!
        let toIndex = sectionIndex[to]!
        let position = sections[toIndex].items.firstIndex(of: target)!
        sections[toIndex].items.insert(identifier, at: position + (after ? 1 : 0))
        itemSection[identifier] = to
    }

    /// Marks items for reloading.
    ///
    /// - Throws: ``SnapshotError`` `.itemNotFound` for an item not in the snapshot.
    public mutating func reloadItems(_ identifiers: [ItemID]) throws(Failure) {
        for id in identifiers where itemSection[id] == nil { throw .itemNotFound(id) }
        reloadedItems.formUnion(identifiers)
    }

    /// The same snapshot with no reload marks.
    func clearingReloads() -> Snapshot {
        var copy = self
        copy.reloadedItems.removeAll()
        copy.reloadedSections.removeAll()
        return copy
    }
}
