import Dispatch
import Foundation
import LodeCodec
import LodeStore
import Observation

/// One object of a generated model (`@Model`) that follows every commit of any process, observable
/// with the Observation framework: code that reads properties inside `withObservationTracking` (a
/// SwiftUI view, an `Observations` loop) is told when a property it read changed — and not when
/// another did.
///
/// ```swift
/// let todo = try LiveObject(Todo.self, key: id, in: store)
/// withObservationTracking {
///     print(todo.title)              // tracks `title` only
/// } onChange: {
///     print("the title is changing")  // not called for a change of `priority`
/// }
/// ```
///
/// Properties read through the object (`todo.title`, by dynamic member lookup) are its values at the
/// last version delivered. When the object is deleted, ``isDeleted`` becomes true and the properties
/// keep their last values; when an object with its key is inserted again, it comes back. A commit
/// changes a property when its value changes (`==`, or the encoding with maps in key order for a
/// type that is not `Equatable`), not when its bytes do.
///
/// Changes are applied on `queue` (a serial queue of its own unless given; pass `.main` for UI code
/// on the main thread): observers' `onChange` runs there, before the new value is visible (the
/// Observation framework's *will set*). Reading is safe from any thread. The object follows the
/// store until ``cancel()``, the store closes, or it is released.
@dynamicMemberLookup
public final class LiveObject<Object: Persistable & RecordCodable>: Observable, @unchecked Sendable {
    // @unchecked: `state` is guarded by its lock; the registrar is thread-safe; the rest is immutable.
    private let registrar = ObservationRegistrar()
    private let state: Locked<(object: Object, isDeleted: Bool, error: LodeError?)>
    private let token = ObservationToken()

    /// Follows the object of `type` whose primary key is `key` in `store`.
    ///
    /// - Throws: ``LodeError/objectNotFound(type:key:)`` when there is none now, `EncodingError` when
    ///   `key` does not encode, and what reading the object throws.
    public init<Key: Encodable>(
        _ type: Object.Type, key: Key, in store: Store, on queue: DispatchQueue? = nil
    ) throws {
        let keyBytes = try KeyEncoder().encode(key)
        let (version, found) = try store.read { tx -> (Int, (record: [UInt8], object: Object)?) in
            guard let record = try tx.record(Object.self, keyBytes: keyBytes) else {
                return (tx.version, nil)
            }
            return (
                tx.version,
                (record, try record.withUnsafeBytes { try tx.decode(Object.self, from: $0, key: keyBytes) })
            )
        }
        guard let (stored, object) = found else {
            throw LodeError.objectNotFound(type: Object.schema.typeName, key: "\(key)")
        }
        state = Locked((object, false, nil))
        let source = ObjectSource<Object>(
            store: store, key: keyBytes, version: version, last: (stored, object))
        let queue = queue ?? DispatchQueue(label: "lode.live-object")
        let driver = ObservationDriver(source: source, queue: queue, token: token) {
            [weak self] result in
            self?.apply(result)
        }
        queue.async { driver.start() }
    }

    deinit { token.cancel() }

    /// Stops following the store: the values stay as they are.
    public func cancel() { token.cancel() }

    /// The object at the last version delivered (its last values when it was deleted). Reading it
    /// tracks every property.
    public var object: Object {
        registrar.access(self, keyPath: \.object)
        return state.withLock { $0.object }
    }

    /// A property of the object (see ``object``); reading it tracks that property alone.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Object, Value>) -> Value {
        registrar.access(self, keyPath: Self.path(keyPath))
        return state.withLock { $0.object[keyPath: keyPath] }
    }

    /// Whether the object was deleted (it comes back when an object with its key is inserted).
    public var isDeleted: Bool {
        registrar.access(self, keyPath: \.isDeleted)
        return state.withLock { $0.isDeleted }
    }

    /// The last error following the store met (nil after a delivery succeeds): a record that no
    /// longer decodes, a storage failure, the store closing.
    public var error: LodeError? {
        registrar.access(self, keyPath: \.error)
        return state.withLock { $0.error }
    }

    /// The key path the registrar tracks a property by: one of this class, made of the model's key
    /// path (a subscript key path compares equal when its argument does).
    private static func path(_ keyPath: PartialKeyPath<Object>) -> KeyPath<LiveObject, Any> {
        \LiveObject.[tracked: keyPath]
    }

    /// What ``path(_:)`` names: the property's value.
    private subscript(tracked keyPath: PartialKeyPath<Object>) -> Any {
        state.withLock { $0.object[keyPath: keyPath] }
    }

    /// What one delivery changes, as the registrar names it.
    private enum Tracked {
        case object, isDeleted, error
        case property(KeyPath<LiveObject, Any>)
    }

    /// Applies one delivery: the observers of what changed are told, then the values change.
    private func apply(_ result: Result<ObjectEvent<Object>, LodeError>) {
        var changed: [Tracked] = []
        let next: (object: Object, isDeleted: Bool, error: LodeError?)
        let current = state.withLock { $0 }
        switch result {
        case .failure(let error), .success(.error(let error)):
            next = (current.object, current.isDeleted, error)
        case .success(.changed(let object, let properties)):
            changed = [.object] + properties.map { .property(Self.path($0.keyPath)) }
            next = (object, false, nil)
        case .success(.inserted(let object)):
            // Back after a deletion: every property whose value differs, and the deletion.
            changed = [.object, .isDeleted]
            for keyPath in Object.recordKeyPaths
            where !PropertyValues.same(current.object[keyPath: keyPath], object[keyPath: keyPath]) {
                changed.append(.property(Self.path(keyPath)))
            }
            next = (object, false, nil)
        case .success(.deleted):
            changed = [.isDeleted]
            next = (current.object, true, nil)
        case .success(.initial):
            // The source is made with the object read here: no initial event reaches this.
            return
        }
        if (current.error == nil) != (next.error == nil) { changed.append(.error) }
        for tracked in changed { mutation(of: tracked, willSet: true) }
        state.withLock { $0 = next }
        for tracked in changed { mutation(of: tracked, willSet: false) }
    }

    private func mutation(of tracked: Tracked, willSet: Bool) {
        func tell<Value>(_ path: KeyPath<LiveObject, Value>) {
            willSet ? registrar.willSet(self, keyPath: path) : registrar.didSet(self, keyPath: path)
        }
        switch tracked {
        case .object: tell(\.object)
        case .isDeleted: tell(\.isDeleted)
        case .error: tell(\.error)
        case .property(let path): tell(path)
        }
    }
}
