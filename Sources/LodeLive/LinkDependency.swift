import LodeQuery
import LodeStore

/// A link live results depend on: the objects it points at decide rows' membership, order or section
/// (a condition, a sort or a section key across the link), or their changes count as modifications
/// of the rows linking to them (``LinkedKeyPath``). When such an object changes, the rows linking to
/// it — found in the link's inverse index, never by a scan — are placed again.
struct LinkDependency: Equatable {
    /// The link's field.
    var field: String
    /// The linked type's store name.
    var targetTypeName: String
    /// The linked objects' top-level fields whose changes count as modifications of the rows linking
    /// to them: nil for every field, empty for none (the link only places rows).
    var observed: Set<String>?
    /// True when the linked objects decide rows' membership, order or section (a condition, sort or
    /// section key across the link); false when only their changes are observed.
    var places: Bool

    /// The links `results` and a section key depend on, and the linked paths observed; with
    /// `keyPathsGiven`, only the observed linked paths count as modifications.
    static func of<Element: Persistable>(
        _ results: Results<Element>, section: (field: String, target: String)? = nil, keyPathsGiven: Bool,
        linked: [LinkedKeyPath<Element>]
    ) -> [LinkDependency] {
        var found: [LinkDependency] = []
        func add(_ field: String, _ target: String, _ observed: Set<String>?, places: Bool) {
            if let position = found.firstIndex(where: { $0.field == field }) {
                switch (found[position].observed, observed) {
                case (nil, _), (_, nil): found[position].observed = nil
                case (let a?, let b?): found[position].observed = a.union(b)
                }
                found[position].places = found[position].places || places
            } else {
                found.append(
                    LinkDependency(field: field, targetTypeName: target, observed: observed, places: places))
            }
        }
        let placing: Set<String>? = keyPathsGiven ? [] : nil
        for filter in results.linkFilters { add(filter.field, filter.targetTypeName, placing, places: true) }
        if let sort = results.linkedSort { add(sort.field, sort.targetTypeName, placing, places: true) }
        if let section { add(section.field, section.target, placing, places: true) }
        for path in linked { add(path.field, path.targetTypeName, [path.targetField], places: false) }
        return found
    }
}

/// A path through a link, for key-path filtered observation: `.through(\.project, \Project.name)`
/// makes a change of a task's project's name a modification of the task's row.
public struct LinkedKeyPath<Element: Persistable>: Sendable {
    /// The link's field.
    let field: String
    /// The linked type's store name.
    let targetTypeName: String
    /// The linked object's top-level field observed.
    let targetField: String

    /// The value at `path` of the object the to-one link `link` points at.
    public static func through<Target: Persistable, Value>(
        _ link: KeyPath<Element, Link<Target>?>, _ path: KeyPath<Target, Value>
    ) -> LinkedKeyPath {
        LinkedKeyPath(
            field: fieldName(of: link), targetTypeName: Target.schema.typeName, targetField: topField(path))
    }

    /// The value at `path` of the objects the to-many link `links` points at.
    public static func through<Target: Persistable, Value>(
        _ links: KeyPath<Element, [Link<Target>]>, _ path: KeyPath<Target, Value>
    ) -> LinkedKeyPath {
        LinkedKeyPath(
            field: fieldName(of: links), targetTypeName: Target.schema.typeName, targetField: topField(path))
    }

    private static func topField<Root>(_ path: PartialKeyPath<Root>) -> String {
        fieldName(of: path).split(separator: ".").first.map(String.init) ?? ""
    }
}
