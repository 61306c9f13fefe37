import LodeCodec
import LodeStore

/// Reads linked objects in one transaction, each once: a query that filters, sorts or sections
/// across a link reads the project of a thousand tasks one time, not a thousand.
package final class LinkResolver {
    package let transaction: Transaction
    private var objects: [String: [[UInt8]: Any?]] = [:]

    /// A resolver reading in `transaction`.
    package init(_ transaction: Transaction) { self.transaction = transaction }

    /// The `T` stored under `key`, or nil when there is none.
    /// - Throws: what reading it throws (a record that no longer decodes, a storage failure).
    package func object<T: Persistable>(_ type: T.Type, key: [UInt8]) throws -> T? {
        let name = T.schema.typeName
        if let cached = objects[name]?[key] { return cached as? T }
        let state = try transaction.typeState(T.self)
        let object =
            key.count <= IndexKeyLimit.maximum
            ? try transaction.object(T.self, keyBytes: key, state: state) : nil
        objects[name, default: [:]][key] = .some(object)
        return object
    }

    /// Forgets the objects of the type stored as `typeName` read so far (they changed).
    package func forget(_ typeName: String) { objects[typeName] = nil }
}
