import Foundation

/// One declaration per kind of cell, in FFSDataSource's spirit: the view type, how to make and
/// configure it, and what selecting and deselecting it does, registered in one call
/// (`registry.register(source)`) and usable with any storage.
///
/// ```swift
/// let people = CellSource(PersonCell.self, make: PersonCell.init,
///                         configure: { cell, person, _ in cell.accessory = person.isAdmin },
///                         didSelect: { person, _ in open(person) })
/// registry.register(people)
/// ```
public struct CellSource<View: AnyObject, Model> {
    /// The kind of view (a cell by default).
    public let kind: ViewKind
    /// Where it applies.
    public let condition: MappingCondition
    let make: () -> View
    let configure: (View, Model, IndexPath) -> Void
    let didSelect: ((Model, IndexPath) -> Void)?
    let didDeselect: ((Model, IndexPath) -> Void)?

    /// A source for any view showing a `Model`, configured by `configure` alone.
    public init(
        _ viewType: View.Type, for modelType: Model.Type, kind: ViewKind = .cell,
        condition: MappingCondition = .none, make: @escaping () -> View,
        configure: @escaping (_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void,
        didSelect: ((_ model: Model, _ indexPath: IndexPath) -> Void)? = nil,
        didDeselect: ((_ model: Model, _ indexPath: IndexPath) -> Void)? = nil
    ) {
        self.kind = kind
        self.condition = condition
        self.make = make
        self.configure = configure
        self.didSelect = didSelect
        self.didDeselect = didDeselect
    }
}

extension CellSource where View: ModelTransfer, View.ModelType == Model {
    /// A source for a ``ModelTransfer`` view: `configure` runs before its `update(with:)`.
    public init(
        _ viewType: View.Type, kind: ViewKind = .cell, condition: MappingCondition = .none,
        make: @escaping () -> View,
        configure: ((_ view: View, _ model: Model, _ indexPath: IndexPath) -> Void)? = nil,
        didSelect: ((_ model: Model, _ indexPath: IndexPath) -> Void)? = nil,
        didDeselect: ((_ model: Model, _ indexPath: IndexPath) -> Void)? = nil
    ) {
        self.init(
            View.self, for: Model.self, kind: kind, condition: condition, make: make,
            configure: { view, model, indexPath in
                configure?(view, model, indexPath)
                view.update(with: model)
            }, didSelect: didSelect, didDeselect: didDeselect)
    }
}
