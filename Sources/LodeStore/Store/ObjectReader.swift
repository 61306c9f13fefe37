import Foundation
import LMDB
import LodeCodec

/// Reads the objects of one type from their records, as a walk of the records finds them: the
/// schema's decode and primary-key check are looked up once, not per record. (The store's generic
/// code runs unspecialized: each `T.schema` there is a witness call and a lazy-global check, and a key
/// passed as `some Collection` is read through more witness calls.)
package struct ObjectReader<T: Persistable> {
    private let schema: Schema<T>

    /// A reader of `T`'s records.
    package init() { schema = T.schema }

    /// The `T` the record `bytes` stored under the encoded primary key `key` holds.
    ///
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the record does not
    ///   decode as a `T` — a map with a field twice included — or when its primary-key field does not
    ///   give the key it is stored under (a damaged or hand-edited store: one result would otherwise
    ///   hold two objects with the same primary key).
    package func read(_ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws -> T {
        let object = try decode(bytes, key: key)
        let storage = schema.storage
        let same = try withUnsafePointer(to: object) { pointer in
            try storage.hasKey(UnsafeRawPointer(pointer), key.assumingMemoryBound(to: UInt8.self))
        }
        guard same else {
            let ownKey = try withUnsafePointer(to: object) { try storage.pointerPrimaryKeyBytes($0) }
            throw LodeError.recordDoesNotDecode(
                type: storage.typeName, key: KeyDescription.describe(Array(key)),
                field: storage.primaryKeyField,
                reason: "the record's \(storage.primaryKeyField) is \(KeyDescription.describe(ownKey)), "
                    + "not the key it is stored under")
        }
        return object
    }

    private func decode(_ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws -> T {
        LockWatch.check(entering: "the Decodable initializer of \(T.self)")
        if let decode = schema.storage.generatedDecode {
            do {
                return try decode(bytes)
            } catch {
                throw LodeError.recordDoesNotDecode(type: schema.typeName, key: Array(key), generated: error)
            }
        }
        func failure(_ error: DecodingError) -> LodeError {
            .recordDoesNotDecode(
                type: schema.typeName, key: KeyDescription.describe(Array(key)), field: error.fieldPath,
                reason: error.reason)
        }
        do {
            // The thread's decoding state, reused record after record.
            return try CBORDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            // A record written before a field with a declared default existed: read it with the default.
            guard case .keyNotFound(_, let context) = error, context.codingPath.isEmpty,
                let patched = try schema.applyingDefaults(to: bytes)
            else { throw failure(error) }
            do {
                return try CBORDecoder().decode(T.self, from: patched)
            } catch let error as DecodingError {
                throw failure(error)
            }
        }
    }
}

/// Objects collected one at a time by the store's unspecialized generic code, in memory of their own:
/// appending to an `Array` of a generic element there looks up the array type's metadata for every
/// element, which costs more than decoding a small object.
package final class ObjectCollector<T> {
    // Unchecked: the collector is used by one walk at a time (and a dynamic exclusivity check per
    // object would cost more than the append).
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<T>
    @exclusivity(unchecked) private var capacity: Int
    /// How many objects were collected.
    @exclusivity(unchecked) package private(set) var count = 0

    /// An empty collector with room for `capacity` objects before it grows.
    package init(capacity: Int = 16) {
        self.capacity = Swift.max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Adds `object` after the others.
    package func append(_ object: consuming T) {
        if count == capacity { grow() }
        (base + count).initialize(to: object)
        count += 1
    }

    /// Makes room for `more` objects after those collected.
    package func reserve(_ more: Int) {
        if count + more > capacity { resize(count + more) }
    }

    private func grow() { resize(capacity * 2) }

    private func resize(_ newCapacity: Int) {
        let larger = UnsafeMutablePointer<T>.allocate(capacity: newCapacity)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity = newCapacity
    }

    /// The object collected at `index`.
    package subscript(index: Int) -> T {
        precondition(index >= 0 && index < count, "index \(index) out of 0..<\(count)")
        return base[index]
    }

    /// Drops the last object collected.
    package func removeLast() {
        precondition(count > 0, "no object to remove")
        count -= 1
        (base + count).deinitialize(count: 1)
    }

    /// Drops the objects collected.
    package func removeAll() {
        base.deinitialize(count: count)
        count = 0
    }

    /// The objects collected, in order; the collector is empty after.
    package func take() -> [T] {
        guard count > 0 else { return [] }
        let objects = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            buffer.baseAddress!.moveInitialize(from: base, count: count)
            initialized = count
        }
        count = 0
        return objects
    }
}
