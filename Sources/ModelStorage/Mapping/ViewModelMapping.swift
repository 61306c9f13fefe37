import Foundation

/// A view that shows one model type: the registry creates it and calls ``update(with:)``.
public protocol ModelTransfer: AnyObject {
    /// The model type this view shows.
    associatedtype ModelType
    /// Shows `model`.
    func update(with model: ModelType)
}

/// Where a mapping applies.
public enum MappingCondition {
    /// Everywhere.
    case none
    /// Only in one section.
    case section(Int)
    /// Where the closure says so.
    case custom((_ indexPath: IndexPath, _ model: Any) -> Bool)

    func matches(_ indexPath: IndexPath, _ model: Any) -> Bool {
        switch self {
        case .none: return true
        case .section(let section): return indexPath.count == 2 && indexPath.section == section
        case .custom(let test): return test(indexPath, model)
        }
    }
}

/// What kind of view a mapping makes.
public enum ViewKind: Hashable, Sendable {
    /// A cell for an item.
    case cell
    /// A supplementary view of a kind (a header, a footer…).
    case supplementary(String)
}

/// Events a mapping can react to, dispatched by index path.
public enum MappingEvent: Hashable, Sendable {
    /// The item was selected.
    case select
    /// The item was deselected.
    case deselect
}

/// One registration: a view type for a model type, where it applies, how to make and configure the
/// view, and what to do on events.
public final class ViewModelMapping {
    /// The kind of view.
    public let kind: ViewKind
    /// The view type.
    public let viewType: Any.Type
    /// The model type (as written at registration).
    public let modelType: Any.Type
    /// Where it applies.
    public let condition: MappingCondition
    let accepts: (Any) -> Bool
    let make: () -> AnyObject
    let configure: (AnyObject, Any, IndexPath) -> Void
    var reactions: [MappingEvent: (AnyObject?, Any, IndexPath) -> Void] = [:]

    init(
        kind: ViewKind, viewType: Any.Type, modelType: Any.Type, condition: MappingCondition,
        accepts: @escaping (Any) -> Bool, make: @escaping () -> AnyObject,
        configure: @escaping (AnyObject, Any, IndexPath) -> Void
    ) {
        self.kind = kind
        self.viewType = viewType
        self.modelType = modelType
        self.condition = condition
        self.accepts = accepts
        self.make = make
        self.configure = configure
    }

    /// True when this mapping shows `model` at `indexPath`.
    public func matches(_ model: Any, at indexPath: IndexPath) -> Bool {
        accepts(unwrapOptionals(model)) && condition.matches(indexPath, model)
    }

    /// Reacts to a selection of an item this mapping shows.
    public func didSelect(
        _ reaction: @escaping (_ view: AnyObject?, _ model: Any, _ indexPath: IndexPath) -> Void
    ) {
        reactions[.select] = reaction
    }

    /// Reacts to a deselection.
    public func didDeselect(
        _ reaction: @escaping (_ view: AnyObject?, _ model: Any, _ indexPath: IndexPath) -> Void
    ) {
        reactions[.deselect] = reaction
    }
}

/// Registers which view shows which model, and configures views and dispatches events with it —
/// the configure-and-handle-in-one-place idea of closure-based data sources, with no UI framework.
/// The first registration that matches a model wins.
public final class ViewModelMappingRegistry {
    /// The registrations, in order.
    public private(set) var mappings: [ViewModelMapping] = []

    /// Makes an empty registry.
    public init() {}

    /// Registers a view type for its model type. `make` creates a view; `configure` runs before
    /// ``ModelTransfer/update(with:)`` each time a view is configured.
    @discardableResult
    public func register<View: ModelTransfer>(
        _ viewType: View.Type, kind: ViewKind = .cell, condition: MappingCondition = .none,
        make: @escaping () -> View, configure: ((View, View.ModelType, IndexPath) -> Void)? = nil
    ) -> ViewModelMapping {
        let mapping = ViewModelMapping(
            kind: kind, viewType: View.self, modelType: View.ModelType.self, condition: condition,
            accepts: { $0 is View.ModelType }, make: make,
            configure: { view, model, indexPath in
                guard let view = view as? View, let model = unwrapOptionals(model) as? View.ModelType else {
                    return
                }
                configure?(view, model, indexPath)
                view.update(with: model)
            })
        mappings.append(mapping)
        return mapping
    }

    /// Removes every registration of a view type.
    public func unregister<View>(_ viewType: View.Type) {
        mappings.removeAll { $0.viewType == viewType }
    }

    /// The first mapping of `kind` that shows `model` at `indexPath`.
    public func mapping(for model: Any, at indexPath: IndexPath, kind: ViewKind = .cell) -> ViewModelMapping?
    {
        mappings.first { $0.kind == kind && $0.matches(model, at: indexPath) }
    }

    /// A new view for `model`, configured, or nil when no mapping shows it.
    public func makeView(for model: Any, at indexPath: IndexPath, kind: ViewKind = .cell) -> AnyObject? {
        guard let mapping = mapping(for: model, at: indexPath, kind: kind) else { return nil }
        let view = mapping.make()
        mapping.configure(view, model, indexPath)
        return view
    }

    /// Configures an existing (reused) view with `model`; false when no mapping shows it.
    @discardableResult
    public func configure(_ view: AnyObject, with model: Any, at indexPath: IndexPath, kind: ViewKind = .cell)
        -> Bool
    {
        guard let mapping = mapping(for: model, at: indexPath, kind: kind) else { return false }
        mapping.configure(view, model, indexPath)
        return true
    }

    /// A configured view for the item of `storage` at `indexPath`.
    public func makeView(forItemAt indexPath: IndexPath, in storage: any Storage) -> AnyObject? {
        guard let model = storage.item(at: indexPath) else { return nil }
        return makeView(for: model, at: indexPath)
    }

    /// Sends an event for the item at `indexPath` to the reaction of its mapping; false when nothing
    /// handled it.
    @discardableResult
    public func handle(
        _ event: MappingEvent, at indexPath: IndexPath, in storage: any Storage, view: AnyObject? = nil
    ) -> Bool {
        guard let model = storage.item(at: indexPath), let mapping = mapping(for: model, at: indexPath),
            let reaction = mapping.reactions[event]
        else { return false }
        reaction(view, model, indexPath)
        return true
    }
}

/// `Optional<Optional<T>>.some(.some(x))` → `x`; `nil` stays an empty optional.
func unwrapOptionals(_ value: Any) -> Any {
    let mirror = Mirror(reflecting: value)
    guard mirror.displayStyle == .optional else { return value }
    guard let child = mirror.children.first else { return value }
    return unwrapOptionals(child.value)
}
