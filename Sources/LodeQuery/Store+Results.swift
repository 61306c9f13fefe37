import Foundation
import LodeCodec
import LodeStore

extension Store {
    /// Lazy, live-on-access results of every stored `T`, evaluated on the last committed version when
    /// first read.
    public func objects<T: Persistable>(_ type: T.Type) -> Results<T> {
        Results(source: .store(self))
    }

}

extension Transaction {
    /// Every stored `T`, as results bound to this transaction (use them inside it).
    public func objects<T: Persistable>(_ type: T.Type) -> Results<T> {
        Results(source: .transaction(self))
    }

    /// The stored `T`s under `keys`, which must all exist. Keys in ascending order are read with one
    /// cursor that steps to the next entry when it is the one wanted (a scan), and seeks otherwise.
    package func objects<T: Persistable>(_ type: T.Type, keys: KeyList, ascending: Bool) throws -> [T] {
        let objects = ObjectCollector<T>(capacity: keys.count)
        let reader = ObjectReader<T>()
        // Objects are collected inside the reads: no optional of `T` per object (unspecialized generic
        // code pays a metadata lookup for each one).
        try forEachRecord(of: T.self, keys: keys, ascending: ascending) { key, value in
            try key.withUnsafeBytes { try reader.read(value, key: $0, appendingTo: objects) }
        }
        return objects.take()
    }

    /// Whether `found` holds the bytes of `key`.
    private static func bytes(_ found: UnsafeRawBufferPointer, equal key: ArraySlice<UInt8>) -> Bool {
        found.count == key.count
            && key.withUnsafeBytes { key in
                key.isEmpty || memcmp(found.baseAddress!, key.baseAddress!, key.count) == 0
            }
    }

    /// Calls `body` with the key and record of each stored `T` under `keys`, in order; all must exist.
    /// Keys in ascending order are read with one cursor that steps to the next entry when it is the
    /// one wanted (a scan), and seeks otherwise.
    /// - Throws: ``LodeError/objectNotFound(type:key:)`` for a key with no record, and what `body` throws.
    package func forEachRecord<T: Persistable>(
        of type: T.Type, keys: KeyList, ascending: Bool,
        _ body: (ArraySlice<UInt8>, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let state = try typeState(T.self)
        func missing(_ index: Int) -> LodeError {
            .objectNotFound(type: T.schema.typeName, key: KeyDescription.describe(Array(keys[index])))
        }
        guard let records = state.records else {
            if keys.isEmpty { return }
            throw missing(0)
        }
        // Records stored under hashed keys (an encrypted store) are not next to each other.
        guard ascending, records.isOrdered else {
            for index in 0..<keys.count {
                let key = keys[index]
                let found: Void? = try lmdb.withValue(forKey: Array(key), in: records) { try body(key, $0) }
                guard found != nil else { throw missing(index) }
            }
            return
        }
        try lmdb.withCursor(in: records) { cursor in
            // Whether the last step to the next entry found the key wanted: keys of a scan are next to
            // each other, keys of a sparse range are not (then each is sought, with a step now and
            // then to notice a dense run).
            var stepping = true
            for index in 0..<keys.count {
                let key = keys[index]
                // After the first object the cursor is on the previous key: the wanted one may be next.
                if index > 0 && (stepping || index % 16 == 0) {
                    let stepped = try cursor.withNext { found, value -> Bool in
                        guard Self.bytes(found, equal: key) else { return false }
                        try body(key, value)
                        return true
                    }
                    stepping = stepped == true
                    if stepping { continue }
                }
                let sought: Void? = try key.withUnsafeBytes { bytes in
                    try cursor.withValue(atBytes: bytes) { try body(key, $0) }
                }
                guard sought != nil else { throw missing(index) }
            }
        }
    }
}
