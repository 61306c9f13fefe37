import Dispatch
import Foundation
import LodeCodec
import LodeStore

import class LMDB.ReadSnapshot

/// One property of an observed object that a commit changed, with its value before and after.
public struct PropertyChange<Object>: @unchecked Sendable {
    // @unchecked: the values are copies of the object's properties, handed to one observer.
    /// The property's name (its field in the record).
    public let name: String
    /// The property.
    public let keyPath: PartialKeyPath<Object>
    /// The value before the commit.
    public let oldValue: Any
    /// The value after it.
    public let newValue: Any
}

/// What an observer of one object receives (see ``Store/observe(_:key:on:_:)``).
public enum ObjectEvent<Object: Persistable>: @unchecked Sendable {
    // @unchecked: the objects are values handed to one observer.
    /// The object when observation began, or nil when there was none.
    case initial(Object?)
    /// The object was inserted (it did not exist at the last delivery).
    case inserted(Object)
    /// Commits changed the object: it is now `object`, and `properties` changed (in declared order):
    /// their values differ (`==` where the type is `Equatable`, else their encodings with maps in key
    /// order), not merely their stored bytes.
    case changed(Object, properties: [PropertyChange<Object>])
    /// The object was deleted; `last` is how it was at the last delivery.
    case deleted(last: Object)
    /// Following the store failed; observation goes on (and ends after `storeClosed`).
    case error(LodeError)
}

/// Follows one object of a generated model from version to version: the commits in between are read
/// from the change log and, when one touched the object's key (or the log cannot say), its record is
/// read again and compared field by field with the one last delivered (kept with its object, so only
/// the new record is decoded).
final class ObjectSource<T: Persistable & RecordCodable>: LiveSource, @unchecked Sendable {
    // @unchecked: `current` is guarded by its lock; the rest is immutable.
    let store: Store
    let key: [UInt8]
    private let current: Locked<(version: Int, last: (record: [UInt8], object: T)?)>

    init(store: Store, key: [UInt8], version: Int, last: (record: [UInt8], object: T)?) {
        self.store = store
        self.key = key
        self.current = Locked((version, last))
    }

    var version: Int { current.withLock { $0.version } }

    func advance(to snapshot: ReadSnapshot) throws -> ObjectEvent<T>? {
        let (from, before) = current.withLock { ($0.version, $0.last) }
        let typeName = T.schema.typeName
        let key = self.key
        // nil: no commit touched the object; .some(nil): it is gone.
        let after: (record: [UInt8], object: T)?? = try mapStorageErrors {
            try snapshot.read { txn in
                let transaction = Transaction(store: store, lmdb: txn)
                let history = try transaction.commits(after: from)
                let touched =
                    !history.isComplete
                    || history.commits.contains { commit in
                        commit.changes.contains { change in
                            guard change.type == typeName else { return false }
                            switch change.kind {
                            case .clear, .bulk: return true
                            case .insert, .update, .delete: return change.key == key
                            }
                        }
                    }
                guard touched else { return .none }
                return .some(try transaction.storedObject(T.self, keyBytes: key))
            }
        }
        guard case .some(let now) = after else {
            current.withLock { $0.version = snapshot.transactionID }
            return nil
        }
        current.withLock { $0 = (snapshot.transactionID, now) }
        return Self.event(from: before, to: now)
    }

    /// What changed between two versions of the object (nil: nothing).
    static func event(from before: (record: [UInt8], object: T)?, to after: (record: [UInt8], object: T)?)
        -> ObjectEvent<T>?
    {
        switch (before, after) {
        case (nil, nil): return nil
        case (nil, let after?): return .inserted(after.object)
        case (let before?, nil): return .deleted(last: before.object)
        case (let before?, let after?):
            guard before.record != after.record else { return nil }
            let changed = before.record.withUnsafeBytes { old in
                after.record.withUnsafeBytes { new in RecordDiff.changedFields(old, new) }
            }
            let (old, new) = (before.object, after.object)
            let properties = zip(T.recordFields.names, T.recordKeyPaths).compactMap {
                name, keyPath -> PropertyChange<T>? in
                // A field whose bytes are the same did not change (fields the diff could not tell
                // apart are all compared); one whose bytes differ may hold the same value: a
                // dictionary or set in another order, a default now stored.
                guard changed?.contains(name) ?? true else { return nil }
                let (oldValue, newValue) = (old[keyPath: keyPath], new[keyPath: keyPath])
                guard !PropertyValues.same(oldValue, newValue) else { return nil }
                return PropertyChange(name: name, keyPath: keyPath, oldValue: oldValue, newValue: newValue)
            }
            // A record rewritten with the same values (or only fields the type does not know
            // changed) changed nothing the observer can see.
            return properties.isEmpty ? nil : .changed(new, properties: properties)
        }
    }
}

extension Transaction {
    /// The record of the `T` under encoded key `key` and its object, or nil.
    fileprivate func storedObject<T: Persistable>(_ type: T.Type, keyBytes key: [UInt8]) throws -> (
        record: [UInt8], object: T
    )? {
        guard let record = try record(T.self, keyBytes: key) else { return nil }
        return (record, try record.withUnsafeBytes { try decode(T.self, from: $0, key: key) })
    }
}

extension Store {
    /// Follows the object of a generated model (`@Model`) whose primary key is `key`: `handler` receives
    /// it first (``ObjectEvent/initial(_:)``), then, on `queue`, after every commit of any process
    /// that changed it, what changed — the properties, each with its value before and after — or
    /// that it was inserted or deleted. Commits that change other objects deliver nothing.
    ///
    /// ```swift
    /// let token = try store.observe(Todo.self, key: id) { event in
    ///     if case .changed(_, let properties) = event { print(properties.map(\.name)) }
    /// }
    /// ```
    ///
    /// Keep the token: releasing it (or ``ObservationToken/cancel()``) ends the observation.
    ///
    /// - Throws: `EncodingError` when `key` does not encode, and what reading the object throws.
    public func observe<T: Persistable & RecordCodable, Key: Encodable>(
        _ type: T.Type, key: Key, on queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (ObjectEvent<T>) -> Void
    ) throws -> ObservationToken {
        let keyBytes = try KeyEncoder().encode(key)
        let (version, last) = try read { tx in (tx.version, try tx.storedObject(T.self, keyBytes: keyBytes)) }
        let source = ObjectSource<T>(store: self, key: keyBytes, version: version, last: last)
        let token = ObservationToken()
        let queue = queue ?? DispatchQueue(label: "lode.object")
        let driver = ObservationDriver(source: source, queue: queue, token: token) { result in
            switch result {
            case .success(let event): handler(event)
            case .failure(let error): handler(.error(error))
            }
        }
        let first = ObjectEvent<T>.initial(last?.object)
        queue.async {
            handler(first)
            driver.start()
        }
        return token
    }
}
