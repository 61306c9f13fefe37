/// A `Decoder` that reads nothing: every field is there and holds zero, an empty string or false.
/// Decoding a ``Row`` through it counts what `Codable` itself costs — the synthesized `init(from:)`,
/// `KeyedDecodingContainer`'s box and its dispatch, the metadata of an unspecialized container — the
/// floor under any decoder that keeps `Codable` as the user's only obligation.
final class FloorDecoder: Decoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(FloorKeyedContainer<Key>())
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self, .init(codingPath: [], debugDescription: "the floor decoder holds maps only"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(
            Any.self, .init(codingPath: [], debugDescription: "the floor decoder holds maps only"))
    }
}

/// The keyed container of ``FloorDecoder``: every key present, every value zero.
struct FloorKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { false }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { "" }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { 0 }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { 0 }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { 0 }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { 0 }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { 0 }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { 0 }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { 0 }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { 0 }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { 0 }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { 0 }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { 0 }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { 0 }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try T(from: FloorDecoder())
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        KeyedDecodingContainer(FloorKeyedContainer<NestedKey>())
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try FloorDecoder().unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { FloorDecoder() }
    func superDecoder(forKey key: Key) throws -> any Decoder { FloorDecoder() }
}

/// Decodes a `T` through ``FloorDecoder`` without the call being specialized for `T` or the decoder
/// seen through (as a store's generic read path calls `init(from:)`: through the witness, with the
/// decoder an existential).
@_optimize(none)
func decodeFromFloor<T: Decodable>(_ type: T.Type, _ decoder: FloorDecoder) throws -> T {
    try T(from: decoder)
}
