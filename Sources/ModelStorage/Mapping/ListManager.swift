import Foundation

/// A storage and the registry that shows it, together — the headless counterpart of
/// DTTableViewManager's manager: register views, then make views, dispatch events and ask values by
/// index path of the storage, with no UI framework. A list view on Linux calls these from its own
/// data-source and delegate callbacks.
public final class ListManager {
    /// The data shown.
    public var storage: any Storage
    /// Which view shows which model.
    public let registry: ViewModelMappingRegistry

    /// A manager of `storage` (a new ``MemoryStorage`` by default).
    public init(
        storage: any Storage = MemoryStorage(),
        registry: ViewModelMappingRegistry = ViewModelMappingRegistry()
    ) {
        self.storage = storage
        self.registry = registry
    }

    /// The storage as a ``MemoryStorage``, or nil when it is another kind.
    public var memoryStorage: MemoryStorage? { storage as? MemoryStorage }

    /// The storage as a ``SupplementaryStorage`` (header and footer models), or nil.
    public var supplementaryStorage: (any SupplementaryStorage)? { storage.supplementaryStorage }

    /// The registry's anomalies (the storage has its own).
    public var anomalyHandler: AnomalyHandler { registry.anomalyHandler }

    /// Registers a view for its model type (see ``ViewModelMappingRegistry``).
    @discardableResult
    public func register<View: ModelTransfer>(
        _ viewType: View.Type, condition: MappingCondition = .none, make: @escaping () -> View,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        registry.register(View.self, condition: condition, make: make, configure: configure)
    }

    /// Registers a view for its model type, handing the mapping to `mapping` to add reactions to.
    @discardableResult
    public func register<View: ModelTransfer>(
        _ viewType: View.Type, condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        registry.register(View.self, condition: condition, make: make, mapping: mapping, configure: configure)
    }

    /// Registers any view type (an unsubclassed cell) for a model type, as DTTableViewManager's guide
    /// does: `mapping` adds reactions and sets the condition, `handler` configures each view.
    ///
    /// ```swift
    /// manager.register(Cell.self, for: MenuItem.self, make: Cell.init) { mapping in
    ///     mapping.didSelect { cell, item, indexPath in … }
    /// } handler: { cell, item, indexPath in
    ///     cell.text = item.title
    /// }
    /// ```
    @discardableResult
    public func register<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, condition: MappingCondition = .none,
        make: @escaping () -> View, mapping: (TypedViewModelMapping<View, Model>) -> Void = { _ in },
        handler: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        registry.register(
            View.self, for: Model.self, condition: condition, make: make, mapping: mapping, configure: handler
        )
    }

    /// Registers a section-header view for its model type (shown for the storage's header models).
    @discardableResult
    public func registerHeader<View: ModelTransfer>(
        _ viewType: View.Type, condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void = { _ in },
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        registry.registerHeader(
            View.self, condition: condition, make: make, mapping: mapping, configure: configure)
    }

    /// Registers a section-footer view for its model type.
    @discardableResult
    public func registerFooter<View: ModelTransfer>(
        _ viewType: View.Type, condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void = { _ in },
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        registry.registerFooter(
            View.self, condition: condition, make: make, mapping: mapping, configure: configure)
    }

    /// Registers any view type (an unsubclassed header view) as the section header for a model type,
    /// as DTTableViewManager's guide does: `handler` configures it with its model and section.
    @discardableResult
    public func registerHeader<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, condition: MappingCondition = .none,
        make: @escaping () -> View, mapping: (TypedViewModelMapping<View, Model>) -> Void = { _ in },
        handler: @escaping (_ view: View, _ model: Model, _ section: Int) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        registry.registerHeader(
            View.self, for: Model.self, condition: condition, make: make, mapping: mapping, handler: handler)
    }

    /// Registers any view type as the section footer for a model type.
    @discardableResult
    public func registerFooter<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, condition: MappingCondition = .none,
        make: @escaping () -> View, mapping: (TypedViewModelMapping<View, Model>) -> Void = { _ in },
        handler: @escaping (_ view: View, _ model: Model, _ section: Int) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        registry.registerFooter(
            View.self, for: Model.self, condition: condition, make: make, mapping: mapping, handler: handler)
    }

    /// Configures a reused view for the item at `indexPath`; false when no mapping shows the item or
    /// the view is not of the type its mapping makes (reported as an anomaly).
    @discardableResult
    public func configure(_ view: AnyObject, forItemAt indexPath: IndexPath) -> Bool {
        guard let model = storage.item(at: indexPath) else {
            registry.anomalyHandler.report(
                .indexPathOutsideData(indexPath, numberOfSections: storage.numberOfSections()))
            return false
        }
        return registry.configure(view, with: model, at: indexPath)
    }

    /// Registers a cell source.
    @discardableResult
    public func register<View, Model>(_ source: CellSource<View, Model>) -> TypedViewModelMapping<View, Model>
    {
        registry.register(source)
    }

    /// A configured view for the item at `indexPath`.
    public func makeView(forItemAt indexPath: IndexPath) -> AnyObject? {
        registry.makeView(forItemAt: indexPath, in: storage)
    }

    /// A configured header view for a section, or nil when it has no header model.
    public func makeHeaderView(forSection section: Int) -> AnyObject? {
        supplementaryStorage.flatMap { registry.makeHeaderView(forSection: section, in: $0) }
    }

    /// A configured footer view for a section, or nil when it has no footer model.
    public func makeFooterView(forSection section: Int) -> AnyObject? {
        supplementaryStorage.flatMap { registry.makeFooterView(forSection: section, in: $0) }
    }

    /// Sends an event for the item at `indexPath`; false when nothing handled it.
    @discardableResult
    public func handle(_ event: MappingEvent, at indexPath: IndexPath, view: AnyObject? = nil) -> Bool {
        registry.handle(event, at: indexPath, in: storage, view: view)
    }

    /// The answer to a query for the item at `indexPath`, or nil.
    public func answer<Value>(_ query: MappingQuery<Value>, at indexPath: IndexPath, view: AnyObject? = nil)
        -> Value?
    {
        registry.answer(query, at: indexPath, in: storage, view: view)
    }
}
