import Foundation

/// Registers which view shows which model, and makes and configures views, dispatches events and
/// answers queries with it — the configure-and-handle-in-one-place idea of closure-based data
/// sources, with no UI framework. The first registration that matches a model wins.
///
/// Usage mistakes it cannot throw for — a model no mapping shows, an index path with no item, a
/// reaction that can never run — go to its ``anomalyHandler``.
public final class ViewModelMappingRegistry {
    /// The registrations, in order.
    public private(set) var mappings: [ViewModelMapping] = []
    /// Receives this registry's anomalies.
    public let anomalyHandler = AnomalyHandler(label: "ViewModelMappingRegistry")
    /// Reactions registered on the registry for a model type (they run for every mapping that shows
    /// it, after the mapping's own reaction).
    private var modelReactions: [ModelReaction] = []

    private struct ModelReaction {
        let event: MappingEvent
        let kind: ViewKind
        let run: (Any, IndexPath) -> Bool
    }

    /// Makes an empty registry.
    public init() {}

    // MARK: Registering

    /// Registers a view type for its model type. `make` creates a view; `configure` (DTTableViewManager's
    /// handler) runs before ``ModelTransfer/update(with:)`` each time a view is configured.
    @discardableResult
    public func register<View: ModelTransfer>(
        _ viewType: View.Type, kind: ViewKind = .cell, condition: MappingCondition = .none,
        make: @escaping () -> View, configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, kind: kind, condition: condition, make: make, mapping: { _ in }, configure: configure)
    }

    /// Registers a view type for its model type, handing the new mapping to `mapping` to add
    /// reactions to before any view is made.
    @discardableResult
    public func register<View: ModelTransfer>(
        _ viewType: View.Type, kind: ViewKind = .cell, condition: MappingCondition = .none,
        make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, for: View.ModelType.self, kind: kind, condition: condition, make: make,
            mapping: mapping
        ) {
            view, model, indexPath in
            configure?(view, model, indexPath)
            view.update(with: model)
        }
    }

    /// Registers any view type for a model type, configured by `configure` alone.
    @discardableResult
    public func register<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, kind: ViewKind = .cell,
        condition: MappingCondition = .none, make: @escaping () -> View,
        configure: @escaping (View, Model, IndexPath) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        register(
            View.self, for: Model.self, kind: kind, condition: condition, make: make, mapping: { _ in },
            configure: configure)
    }

    /// Registers any view type for a model type, handing the new mapping to `mapping` first.
    @discardableResult
    public func register<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, kind: ViewKind = .cell,
        condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: (TypedViewModelMapping<View, Model>) -> Void,
        configure: @escaping (View, Model, IndexPath) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        let registered = TypedViewModelMapping<View, Model>(
            kind: kind, viewType: View.self, modelType: Model.self, condition: condition,
            accepts: { $0 is Model }, acceptsType: { $0 is Model.Type }, make: make,
            configure: { view, model, indexPath in
                guard let view = view as? View, let model = unwrapModel(model) as? Model else { return false }
                configure(view, model, indexPath)
                return true
            })
        mappings.append(registered)
        mapping(registered)
        return registered
    }

    /// Registers a section-header view (of a storage's header kind, by default the table-view one).
    @discardableResult
    public func registerHeader<View: ModelTransfer>(
        _ viewType: View.Type, kind: String = SupplementaryKind.tableHeader,
        condition: MappingCondition = .none, make: @escaping () -> View,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, kind: .supplementary(kind), condition: condition, make: make, configure: configure)
    }

    /// Registers a section-header view, handing the mapping to `mapping` first.
    @discardableResult
    public func registerHeader<View: ModelTransfer>(
        _ viewType: View.Type, kind: String = SupplementaryKind.tableHeader,
        condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, kind: .supplementary(kind), condition: condition, make: make, mapping: mapping,
            configure: configure)
    }

    /// Registers a section-footer view (of a storage's footer kind, by default the table-view one).
    @discardableResult
    public func registerFooter<View: ModelTransfer>(
        _ viewType: View.Type, kind: String = SupplementaryKind.tableFooter,
        condition: MappingCondition = .none, make: @escaping () -> View,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, kind: .supplementary(kind), condition: condition, make: make, configure: configure)
    }

    /// Registers a section-footer view, handing the mapping to `mapping` first.
    @discardableResult
    public func registerFooter<View: ModelTransfer>(
        _ viewType: View.Type, kind: String = SupplementaryKind.tableFooter,
        condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: @escaping (TypedViewModelMapping<View, View.ModelType>) -> Void,
        configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> TypedViewModelMapping<View, View.ModelType> {
        register(
            View.self, kind: .supplementary(kind), condition: condition, make: make, mapping: mapping,
            configure: configure)
    }

    /// Registers any view type (an unsubclassed header view) as the section header for a model type:
    /// `mapping` adds reactions, `handler` configures each view with its model and section.
    @discardableResult
    public func registerHeader<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, kind: String = SupplementaryKind.tableHeader,
        condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: (TypedViewModelMapping<View, Model>) -> Void = { _ in },
        handler: @escaping (_ view: View, _ model: Model, _ section: Int) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        registerSupplementary(View.self, for: Model.self, kind, condition, make, mapping, handler)
    }

    /// Registers any view type as the section footer for a model type (see
    /// ``registerHeader(_:for:kind:condition:make:mapping:handler:)``).
    @discardableResult
    public func registerFooter<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, kind: String = SupplementaryKind.tableFooter,
        condition: MappingCondition = .none, make: @escaping () -> View,
        mapping: (TypedViewModelMapping<View, Model>) -> Void = { _ in },
        handler: @escaping (_ view: View, _ model: Model, _ section: Int) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        registerSupplementary(View.self, for: Model.self, kind, condition, make, mapping, handler)
    }

    /// A supplementary view of `kind` whose handler takes the section rather than an index path.
    private func registerSupplementary<View: AnyObject, Model>(
        _ viewType: View.Type, for modelType: Model.Type, _ kind: String, _ condition: MappingCondition,
        _ make: @escaping () -> View, _ mapping: (TypedViewModelMapping<View, Model>) -> Void,
        _ handler: @escaping (View, Model, Int) -> Void
    ) -> TypedViewModelMapping<View, Model> {
        register(
            View.self, for: Model.self, kind: .supplementary(kind), condition: condition, make: make,
            mapping: mapping
        ) { view, model, indexPath in handler(view, model, indexPath.section) }
    }

    /// Registers a cell source: its view, configuration and reactions in one call.
    @discardableResult
    public func register<View, Model>(_ source: CellSource<View, Model>) -> TypedViewModelMapping<View, Model>
    {
        register(
            View.self, for: Model.self, kind: source.kind, condition: source.condition, make: source.make,
            mapping: { mapping in
                if let didSelect = source.didSelect { mapping.didSelect(didSelect) }
                if let didDeselect = source.didDeselect { mapping.didDeselect(didDeselect) }
            }, configure: source.configure)
    }

    /// Removes every registration of a view type (of one kind, or of every kind).
    public func unregister<View>(_ viewType: View.Type, kind: ViewKind? = nil) {
        mappings.removeAll { $0.viewType == viewType && (kind == nil || $0.kind == kind) }
    }

    /// Reacts to an event for every mapping of `kind` that shows a `Model`, with the model and its
    /// index path. When no registered mapping can show a `Model`, the reaction can never run:
    /// ``ListAnomaly/reactionForUnmappedModel(event:modelType:)`` is reported (register the views
    /// first).
    public func on<Model>(
        _ event: MappingEvent, for modelType: Model.Type, kind: ViewKind = .cell,
        _ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        let shown = mappings.contains { mapping in
            mapping.kind == kind && (mapping.acceptsType(Model.self) || mapping.modelType is Model.Type)
        }
        if !shown {
            anomalyHandler.report(.reactionForUnmappedModel(event: "\(event)", modelType: "\(Model.self)"))
        }
        modelReactions.append(
            ModelReaction(event: event, kind: kind) { model, indexPath in
                guard let model = model as? Model else { return false }
                reaction(model, indexPath)
                return true
            })
    }

    // MARK: Finding

    /// The first mapping of `kind` that shows `model` at `indexPath`, or nil (a plain lookup: no
    /// anomaly).
    public func mapping(for model: Any, at indexPath: IndexPath, kind: ViewKind = .cell) -> ViewModelMapping?
    {
        let model = unwrapModel(model)
        return mappings.first { $0.kind == kind && $0.matches(unwrapped: model, at: indexPath) }
    }

    /// The mapping for `model`, or nil after reporting ``ListAnomaly/noMapping(modelType:indexPath:kind:)``.
    private func requireMapping(for model: Any, at indexPath: IndexPath, kind: ViewKind) -> ViewModelMapping?
    {
        if let found = mapping(for: model, at: indexPath, kind: kind) { return found }
        anomalyHandler.report(
            .noMapping(modelType: "\(type(of: unwrapModel(model)))", indexPath: indexPath, kind: kind))
        return nil
    }

    /// The item at `indexPath`, or nil after reporting ``ListAnomaly/indexPathOutsideData(_:numberOfSections:)``.
    private func requireItem(at indexPath: IndexPath, in storage: any Storage) -> Any? {
        if let item = storage.item(at: indexPath) { return item }
        anomalyHandler.report(.indexPathOutsideData(indexPath, numberOfSections: storage.numberOfSections()))
        return nil
    }

    private func supplementaryModel(_ kind: String, section: Int, in storage: any SupplementaryStorage)
        -> Any?
    {
        storage.supplementaryModel(ofKind: kind, forSectionAt: IndexPath(item: 0, section: section))
    }

    // MARK: Views

    /// A new view for `model`, configured, or nil when no mapping shows it.
    public func makeView(for model: Any, at indexPath: IndexPath, kind: ViewKind = .cell) -> AnyObject? {
        guard let mapping = requireMapping(for: model, at: indexPath, kind: kind) else { return nil }
        let view = mapping.make()
        _ = mapping.configure(view, model, indexPath)  // made by the mapping: of its type
        return view
    }

    /// Configures an existing (reused) view with `model`; false when no mapping shows it
    /// (``ListAnomaly/noMapping(modelType:indexPath:kind:)``) or the view is not of the type the
    /// model's mapping makes (``ListAnomaly/viewOfWrongType(expected:got:indexPath:)``; the view is
    /// left as it was).
    @discardableResult
    public func configure(_ view: AnyObject, with model: Any, at indexPath: IndexPath, kind: ViewKind = .cell)
        -> Bool
    {
        guard let mapping = requireMapping(for: model, at: indexPath, kind: kind) else { return false }
        guard mapping.configure(view, model, indexPath) else {
            anomalyHandler.report(
                .viewOfWrongType(
                    expected: "\(mapping.viewType)", got: "\(type(of: view))", indexPath: indexPath))
            return false
        }
        return true
    }

    /// A configured view for the item of `storage` at `indexPath`.
    public func makeView(forItemAt indexPath: IndexPath, in storage: any Storage) -> AnyObject? {
        guard let model = requireItem(at: indexPath, in: storage) else { return nil }
        return makeView(for: model, at: indexPath)
    }

    /// A configured view for a section's supplementary model of `kind` (nil when the section has
    /// none: a section without a header is not a mistake).
    public func makeSupplementaryView(
        ofKind kind: String, forSection section: Int, in storage: any SupplementaryStorage
    ) -> AnyObject? {
        guard let model = supplementaryModel(kind, section: section, in: storage) else { return nil }
        return makeView(for: model, at: IndexPath(item: 0, section: section), kind: .supplementary(kind))
    }

    /// A configured header view for a section (of the storage's header kind).
    public func makeHeaderView(forSection section: Int, in storage: any SupplementaryStorage) -> AnyObject? {
        makeSupplementaryView(
            ofKind: storage.supplementaryHeaderKind ?? SupplementaryKind.tableHeader, forSection: section,
            in: storage)
    }

    /// A configured footer view for a section (of the storage's footer kind).
    public func makeFooterView(forSection section: Int, in storage: any SupplementaryStorage) -> AnyObject? {
        makeSupplementaryView(
            ofKind: storage.supplementaryFooterKind ?? SupplementaryKind.tableFooter, forSection: section,
            in: storage)
    }

    // MARK: Events and queries

    /// Sends an event for the item at `indexPath` to the reaction of its mapping and to the
    /// registry's reactions for its type; false when nothing handled it.
    @discardableResult
    public func handle(
        _ event: MappingEvent, at indexPath: IndexPath, in storage: any Storage, view: AnyObject? = nil
    ) -> Bool {
        guard let model = requireItem(at: indexPath, in: storage) else { return false }
        return dispatch(event, model: model, at: indexPath, kind: .cell, view: view)
    }

    /// Sends an event for a section's supplementary view of `kind` (a header, a footer…).
    @discardableResult
    public func handle(
        _ event: MappingEvent, supplementaryOfKind kind: String, inSection section: Int,
        in storage: any SupplementaryStorage, view: AnyObject? = nil
    ) -> Bool {
        guard let model = supplementaryModel(kind, section: section, in: storage) else { return false }
        return dispatch(
            event, model: model, at: IndexPath(item: 0, section: section), kind: .supplementary(kind),
            view: view)
    }

    private func dispatch(
        _ event: MappingEvent, model: Any, at indexPath: IndexPath, kind: ViewKind, view: AnyObject?
    ) -> Bool {
        guard let mapping = requireMapping(for: model, at: indexPath, kind: kind) else { return false }
        let model = unwrapModel(model)
        var handled = false
        if let reaction = mapping.reactions[event] {
            if reaction(view, model, indexPath) {
                handled = true
            } else {
                anomalyHandler.report(
                    .reactionWithoutView(
                        event: "\(event)", viewType: "\(mapping.viewType)", indexPath: indexPath))
            }
        }
        for reaction in modelReactions where reaction.event == event && reaction.kind == kind {
            if reaction.run(model, indexPath) { handled = true }
        }
        return handled
    }

    /// The answer of the mapping of the item at `indexPath` to a query (a row's height…), or nil when
    /// it has none.
    public func answer<Value>(
        _ query: MappingQuery<Value>, at indexPath: IndexPath, in storage: any Storage, view: AnyObject? = nil
    ) -> Value? {
        guard let model = requireItem(at: indexPath, in: storage) else { return nil }
        return answer(query, model: model, at: indexPath, kind: .cell, view: view)
    }

    /// The answer of the mapping of a section's supplementary view of `kind` to a query.
    public func answer<Value>(
        _ query: MappingQuery<Value>, supplementaryOfKind kind: String, inSection section: Int,
        in storage: any SupplementaryStorage, view: AnyObject? = nil
    ) -> Value? {
        guard let model = supplementaryModel(kind, section: section, in: storage) else { return nil }
        return answer(
            query, model: model, at: IndexPath(item: 0, section: section), kind: .supplementary(kind),
            view: view)
    }

    private func answer<Value>(
        _ query: MappingQuery<Value>, model: Any, at indexPath: IndexPath, kind: ViewKind, view: AnyObject?
    ) -> Value? {
        guard let mapping = requireMapping(for: model, at: indexPath, kind: kind),
            let body = mapping.answers[query.name]
        else { return nil }
        guard let value = body(view, unwrapModel(model), indexPath) else {
            anomalyHandler.report(
                .reactionWithoutView(event: query.name, viewType: "\(mapping.viewType)", indexPath: indexPath)
            )
            return nil
        }
        return value as? Value
    }
}
