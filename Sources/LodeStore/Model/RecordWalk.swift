import Foundation
import LMDB
import LodeCodec
import Synchronization

/// A model whose walks of its records are compiled for it: the model macro writes the conformance
/// (`@Model`), each requirement one line that calls the ``RecordWalk`` loop with the model's type, so
/// the loop — LMDB's step, the decode, the key check, the append — is specialized in the model's
/// module with no closure and no generic dispatch per record.
///
/// The store's generic code (a fetch, a projection) runs unspecialized: it hands a whole walk of
/// records in key order to these requirements, one call per walk instead of several per record.
public protocol RecordWalking: Persistable, RecordCodable {
    /// Decodes each record `walk` steps to into the walk's objects, and notes its key.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that does not
    ///   decode or whose primary key is not the key it is stored under, or what LMDB throws.
    static func walkRecords(_ walk: inout RecordWalk) throws

    /// Reads field `field` (a position in ``RecordCodable/recordFields``) of each record `walk` steps
    /// to into the walk's values, and notes its key; a record the field does not read from alone is
    /// decoded whole.
    /// - Throws: as ``walkRecords(_:)``.
    static func walkField(_ field: Int, _ walk: inout RecordWalk) throws
}

/// One walk of a type's records in key order, from a read transaction's cursor: what a
/// ``RecordWalking`` model's generated loop steps through, and where it puts what it reads (the
/// objects or values, in an ``ObjectCollector``, and the keys). Made by the store for one walk;
/// a model's code only runs its loops.
public struct RecordWalk: ~Copyable {
    /// The cursor, on the first record.
    @usableFromInline var cursor: CursorWalk
    /// The model's field names.
    @usableFromInline let names: RecordFieldNames
    /// The keys of the records read, in order.
    @usableFromInline let keys: WalkedKeys
    /// The collector of what is read: an `ObjectCollector` of the model, or of the field's values
    /// (kept alive by the store while the walk runs).
    @usableFromInline let collector: UnsafeMutableRawPointer
    /// The type `collector` collects.
    @usableFromInline let collected: Any.Type
    /// The offset of the model's primary key in its memory when it is an `Int` stored there, else -1.
    @usableFromInline let integerKeyOffset: Int
    /// What a walk does apart from its loop: key checks of other key types, errors, whole decodes.
    @usableFromInline let context: RecordWalkContext

    /// A walk from `cursor`'s position collecting into `collector` (an ``ObjectCollector`` of
    /// `collected`), which outlives the walk.
    package init<Model: RecordWalking>(
        _ model: Model.Type, cursor: CursorWalk, keys: WalkedKeys, collector: AnyObject, collected: Any.Type,
        readObject: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void)? = nil
    ) {
        let storage = Model.schema.storage
        self.cursor = cursor
        self.names = Model.recordFields
        self.keys = keys
        self.collector = Unmanaged.passUnretained(collector).toOpaque()
        self.collected = collected
        self.integerKeyOffset = storage.integerKeyOffset ?? -1
        self.context = RecordWalkContext(storage, readObject: readObject)
    }

    /// Decodes every record into the walk's objects (an ``ObjectCollector`` of `Model`): the loop of
    /// ``RecordWalking/walkRecords(_:)``, compiled for `Model` where it calls this.
    /// - Throws: as ``RecordWalking/walkRecords(_:)``.
    @inlinable
    public mutating func decodeRecords<Model: RecordWalking>(as model: Model.Type) throws {
        precondition(
            ObjectIdentifier(collected) == ObjectIdentifier(Model.self),
            "a walk collecting \(collected) decodes \(Model.self)")
        let objects = Unmanaged<ObjectCollector<Model>>.fromOpaque(collector).takeUnretainedValue()
        let names = self.names
        while let (key, record) = try cursor.next() {
            let place = objects.nextPlace()
            do {
                try Model.decodeRecord(record, names: names, into: UnsafeMutableRawPointer(place))
            } catch {
                throw context.decodeFailure(error, key: key)
            }
            if integerKeyOffset >= 0 {
                let value = UnsafeRawPointer(place).load(fromByteOffset: integerKeyOffset, as: Int.self)
                if !KeyEncoder.isKey(key.assumingMemoryBound(to: UInt8.self), ofInteger: Int64(value)) {
                    defer { place.deinitialize(count: 1) }
                    throw try context.wrongKey(UnsafeRawPointer(place), key: key)
                }
            } else if !(try context.hasKey(UnsafeRawPointer(place), key.assumingMemoryBound(to: UInt8.self)))
            {
                defer { place.deinitialize(count: 1) }
                throw try context.wrongKey(UnsafeRawPointer(place), key: key)
            }
            objects.didInitializeNextPlace()
            keys.append(key)
        }
    }

    /// Reads field `field` of every record with `read` into the walk's values (an
    /// ``ObjectCollector`` of `Value`): the loop of ``RecordWalking/walkField(_:_:)``, compiled for the
    /// field's type where it calls this. A record without the field, or whose field does not read
    /// alone, is decoded whole (its defaults and its errors are the object's).
    /// - Throws: as ``RecordWalking/walkField(_:_:)``.
    @inlinable
    public mutating func readField<Value>(_ field: Int, _ read: (inout RecordReader) throws -> Value) throws {
        precondition(
            ObjectIdentifier(collected) == ObjectIdentifier(Value.self),
            "a walk collecting \(collected) reads \(Value.self)")
        let values = Unmanaged<ObjectCollector<Value>>.fromOpaque(collector).takeUnretainedValue()
        let names = self.names
        while let (key, record) = try cursor.next() {
            var placed = false
            do {
                var reader = try RecordReader(record, names: names)
                // The fields before it in declared order, passed one name comparison each; else (a
                // record written in another order) found by name.
                var position = 0
                while position < field, reader.nextFieldIs(position) {
                    try reader.skipValue()
                    position &+= 1
                }
                if try (position == field && reader.nextFieldIs(field)) || reader.seek(field: field) {
                    values.nextPlace().initialize(to: try read(&reader))
                    values.didInitializeNextPlace()
                    placed = true
                }
            } catch {
                // Not dropped: the whole decode below throws the record's error, naming its key.
            }
            if !placed { try context.readObject(key, record) }
            keys.append(key)
        }
    }
}

/// What a ``RecordWalk`` does apart from its loop, out of line: the rare paths, and those that call
/// the schema's closures.
@usableFromInline
final class RecordWalkContext: @unchecked Sendable {
    // @unchecked: immutable; the closures are the schema's and the walk's owner's, used on its thread.
    let typeName: String
    @usableFromInline let hasKey: (UnsafeRawPointer, UnsafeBufferPointer<UInt8>) throws -> Bool
    let wrongKeyError: (UnsafeRawPointer, UnsafeRawBufferPointer) throws -> LodeError
    let objectReader: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void)?

    init<Object>(
        _ storage: Schema<Object>.Storage,
        readObject: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void)?
    ) {
        typeName = storage.typeName
        hasKey = storage.hasKey
        wrongKeyError = storage.wrongKey
        objectReader = readObject
    }

    /// The error of a record stored under `key` that does not decode.
    @usableFromInline
    func decodeFailure(_ error: any Error, key: UnsafeRawBufferPointer) -> any Error {
        LodeError.recordDoesNotDecode(type: typeName, key: Array(key), generated: error)
    }

    /// The error of the object at `object`, whose primary key is not `key`, the key it is stored under.
    /// - Throws: what encoding the object's own key throws (then that is the error).
    @usableFromInline
    func wrongKey(_ object: UnsafeRawPointer, key: UnsafeRawBufferPointer) throws -> any Error {
        try wrongKeyError(object, key)
    }

    /// Reads the record stored under `key` whole and collects what the walk collects of it.
    @usableFromInline
    func readObject(_ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer) throws {
        guard let objectReader else { preconditionFailure("a field walk without a whole-object reader") }
        try objectReader(key, record)
    }
}

/// The keys of the records a walk read, one after another in one buffer, in order.
public final class WalkedKeys {
    /// The buffers and how much of them is used: behind a pointer, for the reason
    /// ``ObjectCollector`` gives.
    @usableFromInline
    struct State {
        @usableFromInline var bytes: UnsafeMutableRawPointer
        @usableFromInline var byteCapacity: Int
        @usableFromInline var used: Int
        @usableFromInline var ends: UnsafeMutablePointer<Int>
        @usableFromInline var endCapacity: Int
        @usableFromInline var count: Int
    }

    @usableFromInline let state: UnsafeMutablePointer<State>

    /// Room for `count` keys of nine bytes (an integer key's) before it grows.
    package init(expecting count: Int = 16) {
        let endCapacity = Swift.max(count, 16)
        state = .allocate(capacity: 1)
        state.initialize(
            to: State(
                bytes: .allocate(byteCount: endCapacity * 9, alignment: 8), byteCapacity: endCapacity * 9,
                used: 0, ends: .allocate(capacity: endCapacity), endCapacity: endCapacity, count: 0))
    }

    deinit {
        state.pointee.bytes.deallocate()
        state.pointee.ends.deallocate()
        state.deallocate()
    }

    /// Adds `key` after the others.
    @inlinable @inline(__always)
    public func append(_ key: UnsafeRawBufferPointer) {
        let length = key.count
        var used = state.pointee.used
        let count = state.pointee.count
        if used &+ length > state.pointee.byteCapacity || count == state.pointee.endCapacity { grow(length) }
        let target = state.pointee.bytes + used
        if length >= 8 && length <= 16 {
            // A key of eight to sixteen bytes (an integer key's nine): two words that may overlap,
            // not a call to memcpy.
            let source = key.baseAddress!
            target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            target.storeBytes(
                of: source.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self),
                toByteOffset: length &- 8,
                as: UInt64.self)
        } else if length > 0 {
            target.copyMemory(from: key.baseAddress!, byteCount: length)
        }
        used &+= length
        state.pointee.used = used
        state.pointee.ends[count] = used
        state.pointee.count = count &+ 1
    }

    @usableFromInline
    func grow(_ length: Int) {
        let (used, count) = (state.pointee.used, state.pointee.count)
        if used + length > state.pointee.byteCapacity {
            let capacity = Swift.max(state.pointee.byteCapacity * 2, used + length)
            let larger = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            larger.copyMemory(from: state.pointee.bytes, byteCount: used)
            state.pointee.bytes.deallocate()
            state.pointee.bytes = larger
            state.pointee.byteCapacity = capacity
        }
        if count == state.pointee.endCapacity {
            let larger = UnsafeMutablePointer<Int>.allocate(capacity: count * 2)
            larger.moveInitialize(from: state.pointee.ends, count: count)
            state.pointee.ends.deallocate()
            state.pointee.ends = larger
            state.pointee.endCapacity = count * 2
        }
    }

    /// The keys' bytes, one after another, and where each ends.
    package func take() -> (bytes: [UInt8], ends: [Int]) {
        let (used, count) = (state.pointee.used, state.pointee.count)
        let keyBytes = [UInt8](unsafeUninitializedCapacity: used) { buffer, initialized in
            if used > 0 {
                UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(
                    from: state.pointee.bytes, byteCount: used)
            }
            initialized = used
        }
        let keyEnds = [Int](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { buffer.baseAddress!.update(from: state.pointee.ends, count: count) }
            initialized = count
        }
        return (keyBytes, keyEnds)
    }
}

/// A walk of every record of a type compiled for it (``RecordWalking``), ready to run from a cursor
/// on the first record: it collects what it reads where it was made to, and the keys into the
/// ``WalkedKeys`` given.
package typealias RecordWalker = (CursorWalk, WalkedKeys) throws -> Void

/// How many compiled walks of each model type ran: tests check that a read took the compiled loop.
package let compiledWalksRun = Mutex<[ObjectIdentifier: Int]>([:])

extension Schema {
    /// A walk decoding each record into `objects`, when the type's walks are compiled for it.
    package func recordWalker(into objects: ObjectCollector<Object>) -> RecordWalker? {
        guard let walking = storage.walking else { return nil }
        func walker<Model: RecordWalking>(_ model: Model.Type) -> RecordWalker {
            { cursor, keys in
                var walk = RecordWalk(
                    Model.self, cursor: cursor, keys: keys, collector: objects, collected: Object.self)
                compiledWalksRun.withLock { $0[ObjectIdentifier(Model.self), default: 0] += 1 }
                // Once per walk, not per record: the decoders may run a property's own `init(from:)`.
                LockWatch.check(entering: "the record decoder of \(Model.self)")
                try Model.walkRecords(&walk)
            }
        }
        return walker(walking)
    }

    /// A walk reading field `field` (a position in the type's record fields) of each record into
    /// `values`, when the type's walks are compiled for it; `readObject` collects what a record the
    /// field does not read from alone gives (its key, then its bytes), from the whole object.
    package func fieldWalker<Value>(
        field: Int, into values: ObjectCollector<Value>,
        readObject: @escaping (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void
    ) -> RecordWalker? {
        guard let walking = storage.walking else { return nil }
        func walker<Model: RecordWalking>(_ model: Model.Type) -> RecordWalker {
            { cursor, keys in
                var walk = RecordWalk(
                    Model.self, cursor: cursor, keys: keys, collector: values, collected: Value.self,
                    readObject: readObject)
                compiledWalksRun.withLock { $0[ObjectIdentifier(Model.self), default: 0] += 1 }
                LockWatch.check(entering: "the record decoder of \(Model.self)")
                try Model.walkField(field, &walk)
            }
        }
        return walker(walking)
    }
}
