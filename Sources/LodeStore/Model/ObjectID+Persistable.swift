import LodeCodec

/// Identities of typed objects.
extension ObjectID {
    /// The identity of `object`.
    ///
    /// - Throws: `EncodingError` when the primary key does not encode (see `KeyEncoder`).
    public init<T: Persistable>(_ object: T) throws {
        self.init(typeName: T.schema.typeName, primaryKey: try T.schema.primaryKeyBytes(object))
    }

    /// The identity of the `T` whose primary key is `key`.
    ///
    /// - Throws: `EncodingError` when `key` does not encode (see `KeyEncoder`).
    public init<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key) throws {
        self.init(typeName: T.schema.typeName, primaryKey: try KeyEncoder().encode(key))
    }
}
