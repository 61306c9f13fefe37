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
        var objects: [T] = []
        objects.reserveCapacity(keys.count)
        // Objects are appended inside the reads: no optional of `T` per object (unspecialized generic
        // code pays a metadata lookup for each one).
        try forEachRecord(of: T.self, keys: keys, ascending: ascending) { key, value in
            objects.append(try decode(T.self, from: value, key: key))
        }
        return objects
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
        guard ascending else {
            for index in 0..<keys.count {
                let key = keys[index]
                let found: Void? = try lmdb.withValue(forKey: Array(key), in: records) { try body(key, $0) }
                guard found != nil else { throw missing(index) }
            }
            return
        }
        try lmdb.withCursor(in: records) { cursor in
            for index in 0..<keys.count {
                let key = keys[index]
                // After the first object the cursor is on the previous key: the wanted one is usually next.
                if index > 0 {
                    let stepped = try cursor.withNext { found, value -> Bool in
                        guard found.elementsEqual(key) else { return false }
                        try body(key, value)
                        return true
                    }
                    if stepped == true { continue }
                }
                let sought: Void? = try cursor.withValue(at: Array(key)) { try body(key, $0) }
                guard sought != nil else { throw missing(index) }
            }
        }
    }
}
