import Foundation
import ModelStorage
import Testing

/// DTModelStorage / DTTableViewManager code as their READMEs and specs write it, with `try` added
/// where Lode's edits throw (the README's "Coming from DTModelStorage" table says which). Every
/// update it produces replays on the list mirror.
@Suite struct LineageTests {
    struct Post: Equatable {
        var title: String
    }

    /// DTModelStorage's README tour of MemoryStorage, pasted, with `try` where the table says so.
    @Test func theMemoryStorageTourCompilesAndBehavesAsItsReadmeDescribes() throws {
        let storage = MemoryStorage()
        let table = MirroringDelegate<Post>(storage)
        storage.delegate = table
        let (model, model1, model2, model3) = (
            Post(title: "a"), Post(title: "b"), Post(title: "c"), Post(title: "d")
        )

        // Adding items
        storage.addItem(model)
        storage.addItem(model, toSection: 0)
        storage.addItems([model1, model2])
        storage.addItems([model1, model2], toSection: 0)
        try storage.insertItem(model3, to: IndexPath(item: 0, section: 0))
        #expect(
            storage.items(inSection: 0) as? [Post] == [model3, model, model, model1, model2, model1, model2])

        // Removing items
        try storage.removeItem(model)
        try storage.removeItems([model1, model2])
        try storage.removeItems(at: [IndexPath(item: 0, section: 0)])
        #expect(storage.items(inSection: 0) as? [Post] == [model, model1, model2])

        // Replacing and reloading
        try storage.replaceItem(model1, with: model3)
        try storage.reloadItem(model3)
        #expect(table.lastUpdate?.updatedObjects[IndexPath(item: 1, section: 0)] as? Post == model3)

        // Moving
        try storage.moveItem(at: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0))
        storage.addItems([model1], toSection: 1)
        try storage.moveSection(0, toSection: 1)
        #expect(storage.items(inSection: 1) as? [Post] == [model3, model2, model])

        // Sections and headers
        storage.setSectionHeaderModels(["Header 1", "Header 2"])
        #expect(storage.headerModel(forSection: 1) as? String == "Header 2")
        try storage.deleteSections(IndexSet(integer: 0))
        #expect(storage.sections.count == 1)

        // Batches
        storage.performUpdates {
            storage.addItem(model1)
            storage.addItem(model2, toSection: 2)
        }
        // The new sections arrive with their rows; only the row added to an existing section is an insert.
        #expect(changes(table.lastUpdate) == ["s.insert [1]", "s.insert [2]", "insert [[0, 3]]"])

        // Setting everything at once reloads
        storage.setItems([model], forSection: 0)
        storage.setItemsForAllSections([[model1], [model2, model3]])
        storage.updateWithoutAnimations { storage.addItem(model) }
        #expect(table.reloads == 3)

        // Querying
        #expect(storage.item(at: IndexPath(item: 1, section: 1)) as? Post == model3)
        #expect(storage.indexPath(forItem: model) == IndexPath(item: 1, section: 0))
        #expect(storage.section(atIndex: 1)?.items(ofType: Post.self) == [model2, model3])
        #expect(storage.totalNumberOfItems == 4)

        #expect(table.failures.isEmpty)
        #expect(table.mirror.sections == [[model1, model], [model2, model3]])
    }

    /// DTTableViewManager's guides: a section with no items, headers through `supplementaryStorage`,
    /// and `header(for:)` in place of the removed `tableHeaderModel`.
    @Test func theTableViewManagerSpellingsWork() throws {
        let manager = ListManager()
        let table = MirroringDelegate<String>(manager.storage)
        manager.memoryStorage?.delegate = table
        manager.memoryStorage?.setItems(["one"], forSectionAt: 0)
        manager.memoryStorage?.setItems([String](), forSectionAt: 2)  // shows section 2's header, no rows
        manager.supplementaryStorage?.setSectionHeaderModels(["First", "Second", "Third"])
        manager.supplementaryStorage?.setSectionFooterModels(["end"])
        #expect(manager.storage.numberOfSections() == 3)
        #expect(manager.storage.numberOfItems(inSection: 2) == 0)
        #expect(manager.supplementaryStorage?.header(for: 2) as? String == "Third")
        #expect(manager.supplementaryStorage?.footer(for: 0) as? String == "end")
        #expect(manager.supplementaryStorage?.footer(for: 1) == nil)
        #expect(table.failures.isEmpty)
        #expect(table.reloads == 2)
    }

    final class PostCell: ModelTransfer {
        var title = ""
        func update(with model: Post) { title = model.title }
    }

    final class FeaturedCell: ModelTransfer {
        var title = ""
        func update(with model: Post) { title = "★ " + model.title }
    }

    /// DTTableViewManager's registration: the condition set inside the mapping closure, reactions
    /// added there, the handler as the trailing closure.
    @Test func registrationReadsAsInTheManagersGuides() throws {
        let manager = ListManager()
        var selected: [String] = []
        manager.register(FeaturedCell.self, make: FeaturedCell.init) { mapping in
            mapping.condition = .section(0)
            mapping.didSelect { cell, post, indexPath in selected.append(cell.title) }
        }
        manager.register(PostCell.self, make: PostCell.init) { cell, post, indexPath in
            cell.title = "configured"  // the handler runs before update(with:)
        }
        manager.memoryStorage?.addItems([Post(title: "top")])
        manager.memoryStorage?.addItems([Post(title: "rest")], toSection: 1)
        let featured = try #require(manager.makeView(forItemAt: ip(0, 0)) as? FeaturedCell)
        #expect(featured.title == "★ top")
        #expect((manager.makeView(forItemAt: ip(0, 1)) as? PostCell)?.title == "rest")
        #expect(manager.handle(.select, at: ip(0, 0), view: featured))
        #expect(selected == ["★ top"])
    }

    /// MemoryStorageSearchTestCase's section-location spec, and index paths for several items.
    @Test func sectionsKnowTheirIndexAndSeveralItemsAreFoundAtOnce() throws {
        let storage = MemoryStorage()
        storage.addItems([1, 2], toSection: 0)
        storage.addItems([3], toSection: 1)
        storage.addItems([4, 2], toSection: 2)
        let middle = try #require(storage.section(atIndex: 1))
        let last = try #require(storage.section(atIndex: 2))
        #expect(middle.currentSectionIndex == 1)
        #expect(last.currentSectionIndex == 2)
        try storage.moveSection(2, toSection: 0)
        #expect(last.currentSectionIndex == 0)
        #expect(middle.currentSectionIndex == 2)
        try storage.deleteSections(IndexSet(integer: 2))
        #expect(middle.currentSectionIndex == nil)
        #expect(SectionModel(items: [1]).currentSectionIndex == nil)
        let inserted = SectionModel(items: [9])
        try storage.insertSection(inserted, atIndex: 1)
        #expect(inserted.currentSectionIndex == 1)

        #expect(storage.items(inSection: 0) as? [Int] == [4, 2])
        #expect(storage.items(inSection: 2) as? [Int] == [1, 2])
        #expect(
            storage.indexPaths(forItems: [2, 2, 2, 7, 9])
                == [ip(1, 0), ip(1, 2), nil, nil, ip(0, 1)])
        #expect(storage.items(inSection: 2, as: Int.self) == [1, 2])
        #expect(storage.items(inSection: 2, as: String.self) == [])
        #expect(storage.items(inSection: 5, as: Int.self) == nil)
        #expect(storage.item(at: ip(0, 1), as: Int.self) == 9)
    }
}

/// DTTableViewManager's guide, for what issue 24 found missing: unsubclassed views registered on
/// the manager (cells, headers, footers), every event in both closure shapes, and a reused view of
/// the wrong type. Written as the guide writes it, with `make:` where UIKit would make the view.
@Suite struct ManagerGuideTests {
    struct MenuItem: Equatable {
        var title: String
    }

    /// Stands for an unsubclassed `UITableViewCell`.
    final class Cell {
        var text = ""
    }

    /// Stands for an unsubclassed `UITableViewHeaderFooterView`.
    final class HeaderFooterView {
        var text = ""
    }

    @Test func unsubclassedViewsRegisterOnTheManagerAsTheGuideWritesThem() throws {
        let manager = ListManager()
        let table = MirroringDelegate<MenuItem>(manager.storage)
        manager.memoryStorage?.delegate = table
        var selected: [String] = []
        manager.register(Cell.self, for: MenuItem.self, make: Cell.init) { mapping in
            mapping.didSelect { cell, item, indexPath in selected.append(cell.text) }
            mapping.heightForCell { item, indexPath in 44 }
        } handler: { cell, item, indexPath in
            cell.text = item.title
        }
        manager.registerHeader(HeaderFooterView.self, for: String.self, make: HeaderFooterView.init) {
            mapping in
            mapping.condition = .section(0)
        } handler: { header, model, section in
            header.text = "\(section): \(model)"
        }
        manager.registerFooter(HeaderFooterView.self, for: String.self, make: HeaderFooterView.init) {
            footer, model, section in
            footer.text = "— \(model)"
        }
        manager.memoryStorage?.addItems([MenuItem(title: "Soup"), MenuItem(title: "Bread")])
        manager.memoryStorage?.addItems([MenuItem(title: "Cake")], toSection: 1)
        manager.supplementaryStorage?.setSectionHeaderModels(["Starters", "Desserts"])
        manager.supplementaryStorage?.setSectionFooterModels(["two dishes", "one dish"])

        let soup = try #require(manager.makeView(forItemAt: ip(0, 0)) as? Cell)
        #expect(soup.text == "Soup")
        #expect(manager.handle(.select, at: ip(0, 0), view: soup))
        #expect(selected == ["Soup"])
        #expect(manager.answer(.height, at: ip(1, 0)) == 44)
        #expect((manager.makeHeaderView(forSection: 0) as? HeaderFooterView)?.text == "0: Starters")
        // The header's condition is section 0: section 1's header has no view, and says so.
        let log = AnomalyLog(manager.anomalyHandler)
        #expect(manager.makeHeaderView(forSection: 1) == nil)
        #expect(log.kinds == [.noMapping])
        #expect((manager.makeFooterView(forSection: 1) as? HeaderFooterView)?.text == "— one dish")
        // A reused cell is configured again for another row.
        #expect(manager.configure(soup, forItemAt: ip(0, 1)))
        #expect(soup.text == "Cake")
        #expect(table.failures.isEmpty)
        #expect(table.mirror.sections == MirroringDelegate<MenuItem>.contents(of: manager.storage))
    }

    @Test func everyEventHasBothShapes() throws {
        let manager = ListManager()
        var events: [String] = []
        manager.register(Cell.self, for: MenuItem.self, make: Cell.init) { mapping in
            mapping.willDisplay { item, indexPath in events.append("will display \(item.title)") }
            mapping.didEndDisplaying { item, indexPath in events.append("ended \(item.title)") }
            mapping.didSelect { item, indexPath in events.append("selected \(item.title)") }
            mapping.didDeselect { item, indexPath in events.append("deselected \(item.title)") }
        } handler: { cell, item, indexPath in
            cell.text = item.title
        }
        manager.memoryStorage?.addItems([MenuItem(title: "Tea")])
        // Without a view: the two-argument reactions run.
        for event in [MappingEvent.willDisplay, .select, .deselect, .didEndDisplaying] {
            #expect(manager.handle(event, at: ip(0, 0)))
        }
        #expect(events == ["will display Tea", "selected Tea", "deselected Tea", "ended Tea"])
        // The three-argument forms, with the view.
        let other = ListManager()
        var seen: [String] = []
        other.register(Cell.self, for: MenuItem.self, make: Cell.init) { mapping in
            mapping.willDisplay { cell, item, indexPath in seen.append("will display \(cell.text)") }
            mapping.didEndDisplaying { cell, item, indexPath in seen.append("ended \(cell.text)") }
        } handler: { cell, item, indexPath in
            cell.text = item.title
        }
        other.memoryStorage?.addItems([MenuItem(title: "Tea")])
        let cell = try #require(other.makeView(forItemAt: ip(0, 0)))
        #expect(other.handle(.willDisplay, at: ip(0, 0), view: cell))
        #expect(other.handle(.didEndDisplaying, at: ip(0, 0), view: cell))
        #expect(seen == ["will display Tea", "ended Tea"])
    }

    /// Issue 24, point 1: a reused view of another type than the mapping makes was reported as
    /// configured (true) and left untouched, with no anomaly.
    @Test func aReusedViewOfTheWrongTypeIsRefusedAndReported() throws {
        let manager = ListManager()
        manager.register(Cell.self, for: MenuItem.self, make: Cell.init) { cell, item, indexPath in
            cell.text = item.title
        }
        manager.memoryStorage?.addItems([MenuItem(title: "Soup")])
        let log = AnomalyLog(manager.anomalyHandler)
        let wrong = HeaderFooterView()
        #expect(!manager.configure(wrong, forItemAt: ip(0, 0)))
        #expect(!manager.registry.configure(wrong, with: MenuItem(title: "Soup"), at: ip(0, 0)))
        #expect(wrong.text == "", "the view was left as it was")
        #expect(
            log.anomalies.first
                == .viewOfWrongType(expected: "Cell", got: "HeaderFooterView", indexPath: ip(0, 0)))
        #expect(log.anomalies.count == 2)
        #expect(log.anomalies.first?.debugDescription.contains("it was not configured") == true)
        // The right type is configured as before.
        let right = Cell()
        #expect(manager.configure(right, forItemAt: ip(0, 0)))
        #expect(right.text == "Soup")
        #expect(log.anomalies.count == 2)
    }
}
