import Foundation
import LMDB
import LodeCodec

/// Reads the objects of one type from their records, as a walk of the records finds them: the
/// schema's decode and primary-key check are looked up once, not per record. (The store's generic
/// code runs unspecialized: each `T.schema` there is a witness call and a lazy-global check, and a key
/// passed as `some Collection` is read through more witness calls.) A class: a closure made per
/// record that captured a generic struct would look up the struct's metadata each time.
package final class ObjectReader<T: Persistable>: @unchecked Sendable {
    // @unchecked: immutable; the closures are the schema's, which is Sendable for the same reason.
    private let storage: Schema<T>.Storage
    /// The generated codec's decodes, if the type has one (read once, not through the storage per
    /// record): into memory of its own, and as a value.
    private let generated: ((UnsafeRawBufferPointer, UnsafeMutablePointer<T>) throws -> Void)?
    private let generatedValue: ((UnsafeRawBufferPointer) throws -> T)?
    private let hasKey: (UnsafeRawPointer, UnsafeBufferPointer<UInt8>) throws -> Bool

    /// A reader of `T`'s records.
    package init() {
        storage = T.schema.storage
        generated = storage.recordCodec?.decode
        generatedValue = storage.recordCodec?.decodeValue
        hasKey = storage.hasKey
    }

    /// The `T` the record `bytes` stored under the encoded primary key `key` holds.
    ///
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the record does not
    ///   decode as a `T` — a map with a field twice included — or when its primary-key field does not
    ///   give the key it is stored under (a damaged or hand-edited store: one result would otherwise
    ///   hold two objects with the same primary key).
    package func read(_ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws -> T {
        // A value, not memory of its own: temporary memory for a generic value costs a metadata
        // lookup per read here.
        LockWatch.check(entering: "the record decoder of \(T.self)")
        var object: T
        if let generatedValue {
            do {
                object = try generatedValue(bytes)
            } catch {
                throw LodeError.recordDoesNotDecode(type: storage.typeName, key: Array(key), generated: error)
            }
        } else {
            object = try decodeCodable(bytes, key: key)
        }
        try withUnsafeMutablePointer(to: &object) { try checkKey(key, of: $0) }
        return object
    }

    /// Reads the `T` the record `bytes` stored under `key` holds into `object`, uninitialized memory
    /// for one `T` (left uninitialized when it throws), as ``read(_:key:)`` does: a walk collecting
    /// objects reads each into its place without copying it.
    package func read(
        _ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, into object: UnsafeMutablePointer<T>
    )
        throws
    {
        LockWatch.check(entering: "the record decoder of \(T.self)")
        if let generated {
            do {
                try generated(bytes, object)
            } catch {
                throw LodeError.recordDoesNotDecode(type: storage.typeName, key: Array(key), generated: error)
            }
        } else {
            object.initialize(to: try decodeCodable(bytes, key: key))
        }
        do {
            try checkKey(key, of: object)
        } catch {
            object.deinitialize(count: 1)
            throw error
        }
    }

    /// Throws unless the object at `object` has the primary key whose encoding is `key`.
    private func checkKey(_ key: UnsafeRawBufferPointer, of object: UnsafeMutablePointer<T>) throws {
        guard try !hasKey(UnsafeRawPointer(object), key.assumingMemoryBound(to: UInt8.self)) else { return }
        throw try storage.wrongKey(UnsafeRawPointer(object), storedUnder: key)
    }

    /// A type without a generated codec: `Codable` (apart: its error handling would otherwise cost
    /// the generated path metadata lookups per record).
    @inline(never)
    private func decodeCodable(_ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws -> T {
        func failure(_ error: DecodingError) -> LodeError {
            .recordDoesNotDecode(
                type: storage.typeName, key: KeyDescription.describe(Array(key)), field: error.fieldPath,
                reason: error.reason)
        }
        do {
            // The thread's decoding state, reused record after record.
            return try CBORDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            // A record written before a field with a declared default existed: read it with the default.
            guard case .keyNotFound(_, let context) = error, context.codingPath.isEmpty,
                let patched = try T.schema.applyingDefaults(to: bytes)
            else { throw failure(error) }
            do {
                return try CBORDecoder().decode(T.self, from: patched)
            } catch let error as DecodingError {
                throw failure(error)
            }
        }
    }

    /// Reads the `T` the record `bytes` stored under `key` holds and adds it after the objects
    /// `collector` holds, in place.
    package func read(
        _ bytes: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
        appendingTo collector: ObjectCollector<T>
    ) throws {
        try read(bytes, key: key, into: collector.nextPlace())
        collector.didInitializeNextPlace()
    }
}
