/// A value that wraps another one — a type-erased box such as ``AnyIdentifiableEquatable``. Mappings,
/// reactions and typed item access see through it to ``base``, so a boxed item finds the mapping of
/// the type it boxes. Conform your own boxes to it.
public protocol TypeErasedModel {
    /// The wrapped value.
    var base: Any { get }
}

/// `Optional<Optional<T>>.some(.some(x))` → `x`, and a type-erased box → what it boxes, repeatedly;
/// `nil` stays an empty optional.
func unwrapModel(_ value: Any) -> Any {
    if let box = value as? any TypeErasedModel { return unwrapModel(box.base) }
    let mirror = Mirror(reflecting: value)
    guard mirror.displayStyle == .optional else { return value }
    guard let child = mirror.children.first else { return value }
    return unwrapModel(child.value)
}
