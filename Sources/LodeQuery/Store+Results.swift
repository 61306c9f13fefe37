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
        let state = try typeState(T.self)
        var objects: [T] = []
        objects.reserveCapacity(keys.count)
        func missing(_ index: Int) -> LodeError {
            .objectNotFound(type: T.schema.typeName, key: KeyDescription.describe(Array(keys[index])))
        }
        guard let records = state.records else {
            if keys.isEmpty { return [] }
            throw missing(0)
        }
        guard ascending else {
            for index in 0..<keys.count {
                guard let object = try object(T.self, keyBytes: Array(keys[index]), state: state) else {
                    throw missing(index)
                }
                objects.append(object)
            }
            return objects
        }
        try lmdb.withCursor(in: records) { cursor in
            // Objects are appended inside the reads: no optional of `T` per object (unspecialized
            // generic code pays a metadata lookup for each one).
            for index in 0..<keys.count {
                let key = keys[index]
                // After the first object the cursor is on the previous key: the wanted one is usually next.
                if index > 0 {
                    let stepped = try cursor.withNext { found, value -> Bool in
                        guard found.elementsEqual(key) else { return false }
                        objects.append(try decode(T.self, from: value, key: key))
                        return true
                    }
                    if stepped == true { continue }
                }
                let sought: Void? = try cursor.withValue(at: Array(key)) { value in
                    objects.append(try decode(T.self, from: value, key: key))
                }
                guard sought != nil else { throw missing(index) }
            }
        }
        return objects
    }

}
