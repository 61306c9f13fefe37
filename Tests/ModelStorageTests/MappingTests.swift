import Foundation
import ModelStorage
import Testing

/// Collects the anomalies a handler reports.
final class AnomalyLog {
    var anomalies: [ListAnomaly] = []

    init(_ handler: AnomalyHandler) {
        handler.anomalyAction = { [unowned self] in self.anomalies.append($0) }
    }

    var kinds: [ListAnomaly.Kind] { anomalies.map(\.kind) }
}

@Suite struct MappingTests {
    final class NameCell: ModelTransfer {
        var shown: String?
        var configuredAt: IndexPath?
        func update(with model: String) { shown = model }
    }

    final class NumberCell: ModelTransfer {
        var shown: Int?
        func update(with model: Int) { shown = model }
    }

    final class HeaderView: ModelTransfer {
        var title: String?
        func update(with model: String) { title = model }
    }

    @Test func theFirstMatchingRegistrationMakesAndConfiguresTheView() throws {
        let registry = ViewModelMappingRegistry()
        registry.register(NumberCell.self, condition: .section(1), make: NumberCell.init)
        registry.register(NameCell.self, make: NameCell.init) { cell, _, indexPath in
            cell.configuredAt = indexPath
        }
        registry.register(NumberCell.self, make: NumberCell.init)
        registry.register(HeaderView.self, kind: .supplementary("header"), make: HeaderView.init)
        let storage = MemoryStorage()
        storage.addItems(["ada", "bob"])
        storage.addItems([7], toSection: 1)
        let name = registry.makeView(forItemAt: IndexPath(item: 1, section: 0), in: storage) as? NameCell
        #expect(name?.shown == "bob")
        #expect(name?.configuredAt == IndexPath(item: 1, section: 0))
        #expect(
            (registry.makeView(forItemAt: IndexPath(item: 0, section: 1), in: storage) as? NumberCell)?.shown
                == 7)
        #expect(registry.mapping(for: 3, at: IndexPath(item: 0, section: 0))?.condition.isNone == true)
        #expect(registry.makeView(for: 2.5, at: IndexPath(item: 0, section: 0)) == nil)
        let header =
            registry.makeView(
                for: "Title", at: IndexPath(item: 0, section: 0), kind: .supplementary("header"))
            as? HeaderView
        #expect(header?.title == "Title")
        let optional: String? = "wrapped"
        #expect(
            (registry.makeView(for: optional as Any, at: IndexPath(item: 0, section: 0)) as? NameCell)?.shown
                == "wrapped")
        registry.unregister(NumberCell.self)
        #expect(registry.mapping(for: 3, at: IndexPath(item: 0, section: 1)) == nil)
    }

    @Test func eventsAreDispatchedByIndexPath() {
        let registry = ViewModelMappingRegistry()
        var selected: [String] = []
        let mapping = registry.register(NameCell.self, make: NameCell.init)
        mapping.didSelect { model, indexPath in selected.append("\(model)@\(indexPath.item)") }
        let storage = MemoryStorage()
        storage.addItems(["ada", "bob"])
        storage.addItem(1, toSection: 1)
        #expect(registry.handle(.select, at: IndexPath(item: 1, section: 0), in: storage))
        #expect(!registry.handle(.deselect, at: IndexPath(item: 1, section: 0), in: storage))
        #expect(!registry.handle(.select, at: IndexPath(item: 0, section: 1), in: storage))
        #expect(selected == ["bob@1"])
    }

    // MARK: Typed reactions

    final class PostCell: ModelTransfer {
        var title: String?
        func update(with model: Post) { title = model.title }
    }

    struct Post: Equatable, EntityIdentifiable {
        var id: Int
        var title: String
        var identifier: AnyHashable { id }
    }

    @Test func reactionsComeInBothClosureShapesTypedByTheMappingsModel() throws {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        var seen: [String] = []
        registry.register(PostCell.self, make: PostCell.init) { mapping in
            // (View, Model, IndexPath) where the view exists…
            mapping.didSelect { cell, post, indexPath in
                seen.append("select \(post.title) in \(cell.title ?? "?") at \(indexPath.item)")
            }
            mapping.willDisplay { cell, post, _ in seen.append("display \(post.id) \(cell.title ?? "?")") }
            // …and (Model, IndexPath) where it may not.
            mapping.didDeselect { post, indexPath in seen.append("deselect \(post.id) at \(indexPath.item)") }
            mapping.heightForCell { post, _ in post.id == 1 ? 44 : 88 }
            mapping.estimatedHeightForCell { _, _ in 60 }
            mapping.sizeForCell { post, _ in CGSize(width: 10, height: Double(post.id)) }
            mapping.canEditCell { post, _ in post.id != 2 }
        }
        let storage = MemoryStorage()
        storage.addItems([Post(id: 1, title: "a"), Post(id: 2, title: "b")])
        let cell = try #require(registry.makeView(forItemAt: ip(1, 0), in: storage) as? PostCell)
        #expect(registry.handle(.willDisplay, at: ip(1, 0), in: storage, view: cell))
        #expect(registry.handle(.select, at: ip(1, 0), in: storage, view: cell))
        #expect(registry.handle(.deselect, at: ip(0, 0), in: storage))
        #expect(seen == ["display 2 b", "select b in b at 1", "deselect 1 at 0"])
        #expect(registry.answer(.height, at: ip(0, 0), in: storage) == 44)
        #expect(registry.answer(.height, at: ip(1, 0), in: storage) == 88)
        #expect(registry.answer(.estimatedHeight, at: ip(1, 0), in: storage) == 60)
        #expect(registry.answer(.size, at: ip(1, 0), in: storage) == CGSize(width: 10, height: 2))
        #expect(registry.answer(.canEdit, at: ip(1, 0), in: storage) == false)
        #expect(registry.answer(.canMove, at: ip(1, 0), in: storage) == nil)
        #expect(log.anomalies.isEmpty)

        // A reaction that takes the view does not run without one, and says so.
        #expect(!registry.handle(.select, at: ip(0, 0), in: storage))
        #expect(seen.count == 3)
        #expect(
            log.anomalies == [
                .reactionWithoutView(event: "select", viewType: "\(PostCell.self)", indexPath: ip(0, 0))
            ])
    }

    @Test func anAnswerCanTakeTheViewAndAnEventCanBeTheAppsOwn() throws {
        let registry = ViewModelMappingRegistry()
        var shared: [Int] = []
        let mapping = registry.register(PostCell.self, make: PostCell.init)
        mapping.answer(.height) { cell, post, _ in Double((cell.title?.count ?? 0) * 10 + post.id) }
        mapping.on(.custom("share")) { post, _ in shared.append(post.id) }
        mapping.answer(MappingQuery<String>("accessibilityLabel")) { post, indexPath in
            "\(post.title), row \(indexPath.item + 1)"
        }
        let storage = MemoryStorage()
        storage.addItem(Post(id: 3, title: "abc"))
        let cell = try #require(registry.makeView(forItemAt: ip(0, 0), in: storage))
        #expect(registry.answer(.height, at: ip(0, 0), in: storage, view: cell) == 33)
        #expect(registry.handle(.custom("share"), at: ip(0, 0), in: storage))
        #expect(shared == [3])
        #expect(
            registry.answer(MappingQuery<String>("accessibilityLabel"), at: ip(0, 0), in: storage)
                == "abc, row 1")
    }

    final class TitleHeader: ModelTransfer {
        var title: String?
        func update(with model: String) { title = model }
    }

    final class CountFooter: ModelTransfer {
        var count: Int?
        func update(with model: Int) { count = model }
    }

    @Test func headersAndFootersHaveTypedMappingsToo() throws {
        let registry = ViewModelMappingRegistry()
        var displayed: [String] = []
        registry.registerHeader(TitleHeader.self, make: TitleHeader.init) { mapping in
            mapping.heightForHeader { title, section in Double(title.count + section) }
            mapping.willDisplay { view, title, indexPath in
                displayed.append("\(view.title ?? "?")=\(title)@\(indexPath.section)")
            }
        }
        registry.registerFooter(CountFooter.self, make: CountFooter.init) { mapping in
            mapping.heightForFooter { count, _ in Double(count) }
        }
        let storage = MemoryStorage()
        storage.addItems([1, 2])
        storage.addItems([3], toSection: 1)
        storage.setSectionHeaderModels(["First", "Second"])
        storage.setSectionFooterModels([2, 1])
        let header = try #require(registry.makeHeaderView(forSection: 1, in: storage) as? TitleHeader)
        #expect(header.title == "Second")
        #expect((registry.makeFooterView(forSection: 0, in: storage) as? CountFooter)?.count == 2)
        #expect(
            registry.answer(
                .height, supplementaryOfKind: SupplementaryKind.tableHeader, inSection: 1, in: storage)
                == 7)
        #expect(
            registry.answer(
                .height, supplementaryOfKind: SupplementaryKind.tableFooter, inSection: 1, in: storage)
                == 1)
        #expect(
            registry.handle(
                .willDisplay, supplementaryOfKind: SupplementaryKind.tableHeader, inSection: 0, in: storage,
                view: header))
        #expect(displayed == ["Second=First@0"])
        // A collection-view storage answers its own kind.
        storage.configureForCollectionViewFlowLayoutUsage()
        #expect(registry.makeHeaderView(forSection: 0, in: storage) == nil)
        registry.registerHeader(
            TitleHeader.self, kind: SupplementaryKind.collectionHeader, make: TitleHeader.init)
        #expect((registry.makeHeaderView(forSection: 0, in: storage) as? TitleHeader)?.title == "First")
    }

    @Test func typedModelConditionsSeeOnlyTheirType() {
        let registry = ViewModelMappingRegistry()
        registry.register(
            PostCell.self, condition: PostCell.modelCondition { _, post in post.id > 10 }, make: PostCell.init
        )
        registry.register(
            NameCell.self, condition: .model(String.self) { indexPath, name in name.count > indexPath.item },
            make: NameCell.init)
        #expect(registry.mapping(for: Post(id: 11, title: "x"), at: ip(0, 0)) != nil)
        #expect(registry.mapping(for: Post(id: 1, title: "x"), at: ip(0, 0)) == nil)
        #expect(registry.mapping(for: "ab", at: ip(1, 0)) != nil)
        #expect(registry.mapping(for: "ab", at: ip(2, 0)) == nil)
        #expect(registry.mapping(for: 5, at: ip(0, 0)) == nil)
    }

    @Test func typeErasedItemsResolveToTheirBasesMapping() throws {
        struct Tag: Equatable, EntityIdentifiable {
            var name: String
            var identifier: AnyHashable { name }
        }
        final class TagCell: ModelTransfer {
            var name: String?
            func update(with model: Tag) { name = model.name }
        }
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        var selected: [String] = []
        registry.register(PostCell.self, make: PostCell.init) { mapping in
            mapping.didSelect { post, _ in selected.append(post.title) }
        }
        registry.register(
            TagCell.self, condition: TagCell.modelCondition { _, tag in tag.name != "hidden" },
            make: TagCell.init)
        let storage = SingleSectionEquatableStorage<AnyIdentifiableEquatable>()
        storage.setItems([
            AnyIdentifiableEquatable(Post(id: 1, title: "first")),
            AnyIdentifiableEquatable(Tag(name: "swift")),
            AnyIdentifiableEquatable(Tag(name: "hidden")),
        ])
        #expect((registry.makeView(forItemAt: ip(0, 0), in: storage) as? PostCell)?.title == "first")
        #expect((registry.makeView(forItemAt: ip(1, 0), in: storage) as? TagCell)?.name == "swift")
        #expect(registry.handle(.select, at: ip(0, 0), in: storage))
        #expect(selected == ["first"])
        #expect(storage.item(at: ip(1, 0), as: Tag.self) == Tag(name: "swift"))
        #expect(storage.item(at: ip(1, 0), as: Post.self) == nil)
        // The condition saw the boxed tag, and refused it.
        #expect(registry.makeView(forItemAt: ip(2, 0), in: storage) == nil)
        #expect(log.anomalies == [.noMapping(modelType: "\(Tag.self)", indexPath: ip(2, 0), kind: .cell)])
    }

    @Test func aRegistryReactionRunsForEveryMappingShowingItsType() {
        class Animal {}
        final class Dog: Animal {}
        final class AnimalCell: ModelTransfer {
            func update(with model: Animal) {}
        }
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        registry.register(AnimalCell.self, make: AnimalCell.init)
        var events: [String] = []
        registry.on(.select, for: Dog.self) { _, indexPath in events.append("dog \(indexPath.item)") }
        registry.on(.select, for: Animal.self) { _, indexPath in events.append("animal \(indexPath.item)") }
        let storage = MemoryStorage()
        storage.addItems([Animal(), Dog()])
        #expect(registry.handle(.select, at: ip(1, 0), in: storage))
        #expect(registry.handle(.select, at: ip(0, 0), in: storage))
        #expect(events == ["dog 1", "animal 1", "animal 0"])
        #expect(log.anomalies.isEmpty)
    }

    // MARK: Cell sources

    @Test func aCellSourceDeclaresViewConfigurationAndSelectionInOneValue() throws {
        var log: [String] = []
        let posts = CellSource(
            PostCell.self, make: PostCell.init,
            configure: { cell, post, _ in
                log.append("configure \(post.id) (title set after: \(cell.title == nil))")
            },
            didSelect: { post, indexPath in log.append("select \(post.id) at \(indexPath.item)") },
            didDeselect: { post, _ in log.append("deselect \(post.id)") })
        final class Label {
            var text = ""
        }
        let numbers = CellSource(
            Label.self, for: Int.self, make: Label.init,
            configure: { label, number, _ in label.text = "#\(number)" },
            didSelect: { number, _ in log.append("select #\(number)") })

        // Usable with any storage: a memory storage…
        let manager = ListManager()
        manager.register(posts)
        manager.register(numbers)
        let memory = try #require(manager.memoryStorage)
        memory.addItems([Post(id: 7, title: "x")])
        memory.addItems([42], toSection: 1)
        #expect((manager.makeView(forItemAt: ip(0, 0)) as? PostCell)?.title == "x")
        #expect((manager.makeView(forItemAt: ip(0, 1)) as? Label)?.text == "#42")
        #expect(manager.handle(.select, at: ip(0, 0)))
        #expect(manager.handle(.deselect, at: ip(0, 0)))
        #expect(manager.handle(.select, at: ip(0, 1)))
        #expect(!manager.handle(.deselect, at: ip(0, 1)))
        // …and a single-section storage through the same registry.
        let single = SingleSectionEquatableStorage<Post>(items: [Post(id: 9, title: "y")])
        #expect((manager.registry.makeView(forItemAt: ip(0, 0), in: single) as? PostCell)?.title == "y")
        #expect(manager.registry.handle(.select, at: ip(0, 0), in: single))
        #expect(
            log == [
                "configure 7 (title set after: true)", "select 7 at 0", "deselect 7", "select #42",
                "configure 9 (title set after: true)", "select 9 at 0",
            ])
    }
}

extension MappingCondition {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }
}
