import Foundation

/// What the planner can learn from a `#Predicate`: its top-level conjuncts, each either a condition
/// on one property that an index can answer, or something only a per-object check can.
package enum Condition {
    package enum Comparison {
        case equal, less, lessOrEqual, greater, greaterOrEqual
    }
    /// `property <op> value`.
    case compare(AnyKeyPath, Comparison, any Encodable)
    /// `[values].contains(property)`.
    case membership(AnyKeyPath, [any Encodable])
    /// `property.starts(with: prefix)` on a string.
    case prefix(AnyKeyPath, String)
    /// Anything else.
    case opaque

    var keyPath: AnyKeyPath? {
        switch self {
        case .compare(let keyPath, _, _), .membership(let keyPath, _), .prefix(let keyPath, _): return keyPath
        case .opaque: return nil
        }
    }
}

// Each expression type the planner understands gets a small view of itself through these
// protocols, so the analysis needs no knowledge of the generic parameters.

protocol ConjunctionView { var parts: [Any] { get } }
protocol KeyPathView { var propertyPath: AnyKeyPath? { get } }
protocol ValueView { var constant: Any { get } }
protocol VariableView {}
protocol EqualView { var sides: (Any, Any) { get } }
protocol ComparisonView {
    var sides: (Any, Any) { get }
    var comparison: Condition.Comparison { get }
}
protocol ContainsView { var parts: (sequence: Any, element: Any) { get } }
protocol StartsWithView { var parts: (base: Any, prefix: Any) { get } }
protocol NegationView { var negated: Any { get } }

extension PredicateExpressions.Negation: NegationView {
    var negated: Any { wrapped }
}

extension PredicateExpressions.Conjunction: ConjunctionView {
    var parts: [Any] { [lhs, rhs] }
}

extension PredicateExpressions.Variable: VariableView {}

extension PredicateExpressions.KeyPath: KeyPathView {
    var propertyPath: AnyKeyPath? {
        if root is VariableView { return keyPath }
        // `$0.address.city`: the inner path, then this one.
        if let inner = (root as? KeyPathView)?.propertyPath { return inner.appending(path: keyPath) }
        return nil
    }
}

extension PredicateExpressions.Value: ValueView {
    var constant: Any { value }
}

extension PredicateExpressions.Equal: EqualView {
    var sides: (Any, Any) { (lhs, rhs) }
}

extension PredicateExpressions.Comparison: ComparisonView {
    var sides: (Any, Any) { (lhs, rhs) }
    var comparison: Condition.Comparison {
        switch op {
        case .lessThan: return .less
        case .lessThanOrEqual: return .lessOrEqual
        case .greaterThan: return .greater
        case .greaterThanOrEqual: return .greaterOrEqual
        @unknown default: return .equal
        }
    }
}

extension PredicateExpressions.SequenceContains: ContainsView {
    var parts: (sequence: Any, element: Any) { (sequence, element) }
}

extension PredicateExpressions.SequenceStartsWith: StartsWithView {
    var parts: (base: Any, prefix: Any) { (base, prefix) }
}

package enum PredicateAnalysis {
    /// The conjuncts of `expression`, flattened, each analysed.
    package static func conditions(of expression: Any) -> [Condition] {
        if let conjunction = expression as? ConjunctionView {
            return conjunction.parts.flatMap(conditions(of:))
        }
        return [condition(of: expression)]
    }

    private static func propertyAndValue(_ sides: (Any, Any)) -> (AnyKeyPath, Any, flipped: Bool)? {
        if let keyPath = (sides.0 as? KeyPathView)?.propertyPath, let value = sides.1 as? ValueView {
            return (keyPath, value.constant, false)
        }
        if let keyPath = (sides.1 as? KeyPathView)?.propertyPath, let value = sides.0 as? ValueView {
            return (keyPath, value.constant, true)
        }
        return nil
    }

    /// The property a Boolean key path expression reads (`$0.done`), if it is one.
    private static func booleanProperty(_ expression: Any) -> AnyKeyPath? {
        guard let keyPath = (expression as? KeyPathView)?.propertyPath,
            type(of: keyPath).valueType == Bool.self
        else { return nil }
        return keyPath
    }

    static func condition(of expression: Any) -> Condition {
        // `$0.done` and `!$0.done` are `$0.done == true` and `== false`.
        if let keyPath = booleanProperty(expression) { return .compare(keyPath, .equal, true) }
        if let negation = expression as? NegationView, let keyPath = booleanProperty(negation.negated) {
            return .compare(keyPath, .equal, false)
        }
        if let equal = expression as? EqualView, let (keyPath, value, _) = propertyAndValue(equal.sides),
            let encodable = value as? any Encodable
        {
            return .compare(keyPath, .equal, encodable)
        }
        if let comparison = expression as? ComparisonView,
            let (keyPath, value, flipped) = propertyAndValue(comparison.sides),
            let encodable = value as? any Encodable
        {
            var op = comparison.comparison
            if flipped {
                switch op {
                case .less: op = .greater
                case .lessOrEqual: op = .greaterOrEqual
                case .greater: op = .less
                case .greaterOrEqual: op = .lessOrEqual
                case .equal: break
                }
            }
            return .compare(keyPath, op, encodable)
        }
        if let contains = expression as? ContainsView,
            let keyPath = (contains.parts.element as? KeyPathView)?.propertyPath,
            let sequence = (contains.parts.sequence as? ValueView)?.constant as? any Sequence
        {
            var values: [any Encodable] = []
            for element in sequence {
                guard let encodable = element as? any Encodable else { return .opaque }
                values.append(encodable)
            }
            return .membership(keyPath, values)
        }
        if let startsWith = expression as? StartsWithView,
            let keyPath = (startsWith.parts.base as? KeyPathView)?.propertyPath,
            let prefix = (startsWith.parts.prefix as? ValueView)?.constant as? String
        {
            return .prefix(keyPath, prefix)
        }
        return .opaque
    }
}
