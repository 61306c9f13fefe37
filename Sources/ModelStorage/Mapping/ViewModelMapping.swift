import Foundation

/// A view that shows one model type: the registry creates it and calls ``update(with:)``.
public protocol ModelTransfer: AnyObject {
    /// The model type this view shows.
    associatedtype ModelType
    /// Shows `model`.
    func update(with model: ModelType)
}

extension ModelTransfer {
    /// A condition on this view's model, typed: the mapping applies where `test` accepts the model
    /// (DTModelStorage's `modelCondition`).
    public static func modelCondition(
        _ test: @escaping (_ indexPath: IndexPath, _ model: ModelType) -> Bool
    ) -> MappingCondition {
        .model(ModelType.self, test)
    }
}

/// Where a mapping applies.
public enum MappingCondition {
    /// Everywhere.
    case none
    /// Only in one section.
    case section(Int)
    /// Where the closure says so (it receives the model with optionals and boxes unwrapped).
    case custom((_ indexPath: IndexPath, _ model: Any) -> Bool)

    /// Where `test` accepts the model, typed: a model of another type never matches.
    public static func model<Model>(
        _ type: Model.Type, _ test: @escaping (_ indexPath: IndexPath, _ model: Model) -> Bool
    ) -> MappingCondition {
        .custom { indexPath, model in (model as? Model).map { test(indexPath, $0) } ?? false }
    }

    func matches(_ indexPath: IndexPath, _ model: Any) -> Bool {
        switch self {
        case .none: return true
        case .section(let section): return indexPath.count == 2 && indexPath.section == section
        case .custom(let test): return test(indexPath, model)
        }
    }
}

/// Events a mapping can react to, dispatched by index path.
public enum MappingEvent: Hashable, Sendable, CustomStringConvertible {
    /// The item was selected.
    case select
    /// The item was deselected.
    case deselect
    /// The view is about to be shown.
    case willDisplay
    /// The view stopped being shown.
    case didEndDisplaying
    /// An event of the app's own, by name.
    case custom(String)

    /// The event's name.
    public var description: String {
        switch self {
        case .select: return "select"
        case .deselect: return "deselect"
        case .willDisplay: return "willDisplay"
        case .didEndDisplaying: return "didEndDisplaying"
        case .custom(let name): return name
        }
    }
}

/// A question a mapping answers with a value — a row's height, whether it can be edited… — the
/// reactions that return a value (DTTableViewManager's height and size closures). The value type is
/// part of the query, so an answer of the wrong type does not compile.
public struct MappingQuery<Value>: Hashable, Sendable {
    /// The query's name.
    public let name: String

    /// A query of the app's own.
    public init(_ name: String) { self.name = name }
}

extension MappingQuery where Value == Double {
    /// The height of a row, header or footer.
    public static var height: MappingQuery<Double> { MappingQuery("height") }
    /// The estimated height of a row, header or footer.
    public static var estimatedHeight: MappingQuery<Double> { MappingQuery("estimatedHeight") }
}

extension MappingQuery where Value == CGSize {
    /// The size of an item of a grid or flow layout.
    public static var size: MappingQuery<CGSize> { MappingQuery("size") }
}

extension MappingQuery where Value == Bool {
    /// Whether the item can be edited.
    public static var canEdit: MappingQuery<Bool> { MappingQuery("canEdit") }
    /// Whether the item can be moved.
    public static var canMove: MappingQuery<Bool> { MappingQuery("canMove") }
    /// Whether the item can be selected.
    public static var shouldSelect: MappingQuery<Bool> { MappingQuery("shouldSelect") }
}

/// One registration: a view type for a model type, where it applies, how to make and configure the
/// view, and what to do on events. The registry returns it typed (``TypedViewModelMapping``), where
/// reactions are added.
public class ViewModelMapping {
    /// The kind of view.
    public let kind: ViewKind
    /// The view type.
    public let viewType: Any.Type
    /// The model type (as written at registration).
    public let modelType: Any.Type
    /// Where it applies (settable in the registration's `mapping` closure, as DTTableViewManager's
    /// `mapping.condition = .section(0)`).
    public var condition: MappingCondition
    let accepts: (Any) -> Bool
    let acceptsType: (Any.Type) -> Bool
    let make: () -> AnyObject
    /// Configures a view; false when the view is not of ``viewType`` (nothing was done).
    let configure: (AnyObject, Any, IndexPath) -> Bool
    /// Event reactions; `run` returns false when the reaction takes a view and none of its type was
    /// given.
    var reactions: [MappingEvent: (AnyObject?, Any, IndexPath) -> Bool] = [:]
    /// Answers by query name; nil when the answer takes a view and none of its type was given.
    var answers: [String: (AnyObject?, Any, IndexPath) -> Any?] = [:]

    init(
        kind: ViewKind, viewType: Any.Type, modelType: Any.Type, condition: MappingCondition,
        accepts: @escaping (Any) -> Bool, acceptsType: @escaping (Any.Type) -> Bool,
        make: @escaping () -> AnyObject, configure: @escaping (AnyObject, Any, IndexPath) -> Bool
    ) {
        self.kind = kind
        self.viewType = viewType
        self.modelType = modelType
        self.condition = condition
        self.accepts = accepts
        self.acceptsType = acceptsType
        self.make = make
        self.configure = configure
    }

    /// True when this mapping shows `model` at `indexPath` (optionals and type-erased boxes are seen
    /// through).
    public func matches(_ model: Any, at indexPath: IndexPath) -> Bool {
        matches(unwrapped: unwrapModel(model), at: indexPath)
    }

    /// ``matches(_:at:)`` for a model already unwrapped (a registry unwraps once for all mappings).
    func matches(unwrapped model: Any, at indexPath: IndexPath) -> Bool {
        accepts(model) && condition.matches(indexPath, model)
    }
}

/// A mapping of a `View` for a `Model`: reactions in DTTableViewManager's two closure shapes,
/// checked at compile time against the model type — `(View, Model, IndexPath)` where the view exists
/// (selection, display) and `(Model, IndexPath)` where it may not (heights, sizes, editing).
///
/// For headers and footers the index path names the section (item 0).
public final class TypedViewModelMapping<View: AnyObject, Model>: ViewModelMapping {
    /// Reacts to an event with the view, the model and its index path. Dispatched without a view of
    /// this type, the reaction does not run and ``ListAnomaly/reactionWithoutView(event:viewType:indexPath:)``
    /// is reported.
    public func on(
        _ event: MappingEvent,
        _ reaction: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        reactions[event] = { view, model, indexPath in
            guard let view = view as? View, let model = model as? Model else { return false }
            reaction(view, model, indexPath)
            return true
        }
    }

    /// Reacts to an event with the model and its index path.
    public func on(
        _ event: MappingEvent, _ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        reactions[event] = { _, model, indexPath in
            guard let model = model as? Model else { return false }
            reaction(model, indexPath)
            return true
        }
    }

    /// Answers a query with the view, the model and its index path.
    public func answer<Value>(
        _ query: MappingQuery<Value>,
        _ body: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Value
    ) {
        answers[query.name] = { view, model, indexPath in
            guard let view = view as? View, let model = model as? Model else { return nil }
            return body(view, model, indexPath)
        }
    }

    /// Answers a query with the model and its index path.
    public func answer<Value>(
        _ query: MappingQuery<Value>, _ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> Value
    ) {
        answers[query.name] = { _, model, indexPath in (model as? Model).map { body($0, indexPath) } }
    }

    /// Reacts to a selection.
    public func didSelect(
        _ reaction: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        on(.select, reaction)
    }

    /// Reacts to a selection, without the view.
    public func didSelect(_ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void) {
        on(.select, reaction)
    }

    /// Reacts to a deselection.
    public func didDeselect(
        _ reaction: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        on(.deselect, reaction)
    }

    /// Reacts to a deselection, without the view.
    public func didDeselect(_ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void) {
        on(.deselect, reaction)
    }

    /// Reacts before the view is shown.
    public func willDisplay(
        _ reaction: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        on(.willDisplay, reaction)
    }

    /// Reacts before the view is shown, without the view.
    public func willDisplay(_ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void) {
        on(.willDisplay, reaction)
    }

    /// Reacts after the view stopped being shown.
    public func didEndDisplaying(
        _ reaction: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void
    ) {
        on(.didEndDisplaying, reaction)
    }

    /// Reacts after the view stopped being shown, without the view.
    public func didEndDisplaying(_ reaction: @escaping (_ model: Model, _ indexPath: IndexPath) -> Void) {
        on(.didEndDisplaying, reaction)
    }

    /// The height of the row (DTTableViewManager's `heightForCell`).
    public func heightForCell(_ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> Double) {
        answer(.height, body)
    }

    /// The estimated height of the row.
    public func estimatedHeightForCell(_ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> Double) {
        answer(.estimatedHeight, body)
    }

    /// The size of the item (DTCollectionViewManager's `sizeForCell`).
    public func sizeForCell(_ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> CGSize) {
        answer(.size, body)
    }

    /// The height of a header this mapping shows.
    public func heightForHeader(_ body: @escaping (_ model: Model, _ section: Int) -> Double) {
        answerPerSection(.height, body)
    }

    /// The height of a footer this mapping shows.
    public func heightForFooter(_ body: @escaping (_ model: Model, _ section: Int) -> Double) {
        answerPerSection(.height, body)
    }

    /// Answers a query of a header or footer with its model and section.
    private func answerPerSection<Value>(
        _ query: MappingQuery<Value>, _ body: @escaping (Model, Int) -> Value
    ) {
        answer(query) { model, indexPath in body(model, indexPath.section) }
    }

    /// Whether the row can be edited.
    public func canEditCell(_ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> Bool) {
        answer(.canEdit, body)
    }

    /// Whether the row can be moved.
    public func canMoveCell(_ body: @escaping (_ model: Model, _ indexPath: IndexPath) -> Bool) {
        answer(.canMove, body)
    }
}
