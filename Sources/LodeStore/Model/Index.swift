import Foundation
import LodeCodec

/// A secondary index of a ``Persistable`` type: the values of one or more properties, kept sorted,
/// each pointing at the objects that have them.
public struct Index<Object>: @unchecked Sendable {
    // @unchecked: immutable; key paths, value types and the key closure are never mutated, but are
    // not marked Sendable.
    /// The index name (the field names joined with `+` unless set).
    public let name: String
    /// The indexed fields, in key order.
    public let fields: [String]
    /// True when no two objects may have the same value.
    public let isUnique: Bool
    package let keyPaths: [PartialKeyPath<Object>]
    /// Per component: whether memcmp order of the key encoding equals the value type's `<`.
    package let orderMatchesComparable: [Bool]
    /// Per component: the value type.
    package let componentTypes: [Any.Type]
    package let keyBytes: (Object) throws -> [UInt8]
    /// ``keyBytes`` of the object a pointer points at: a one-field index on a stored property of a
    /// struct reads the field at its offset, without projecting a key path per object.
    package let pointerKeyBytes: (UnsafeRawPointer) throws -> [UInt8]
    let valueDescription: (Object) -> String

    init(
        name: String?, unique: Bool, keyPaths: [PartialKeyPath<Object>], types: [Any.Type],
        keyBytes: @escaping (Object) throws -> [UInt8], describe: @escaping (Object) -> String,
        pointerKeyBytes: ((UnsafeRawPointer) throws -> [UInt8])? = nil
    ) {
        self.fields = keyPaths.map(fieldName(of:))
        self.name = name ?? fields.joined(separator: "+")
        self.isUnique = unique
        self.keyPaths = keyPaths
        self.orderMatchesComparable = types.map(keyOrderMatchesComparable)
        self.componentTypes = types
        self.keyBytes = keyBytes
        self.pointerKeyBytes =
            pointerKeyBytes ?? { try keyBytes($0.assumingMemoryBound(to: Object.self).pointee) }
        self.valueDescription = describe
    }

    /// An index on one property.
    public static func on<V: Codable>(_ keyPath: KeyPath<Object, V>, name: String? = nil) -> Index {
        single(keyPath, name: name, unique: false)
    }

    /// A unique index on one property: a second object with the same value is refused.
    public static func unique<V: Codable>(_ keyPath: KeyPath<Object, V>, name: String? = nil) -> Index {
        single(keyPath, name: name, unique: true)
    }

    /// A compound index on two properties, sorted by the first, then the second.
    public static func on<A: Codable, B: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, name: String? = nil
    ) -> Index {
        pair(first, second, name: name, unique: false)
    }

    /// A unique compound index on two properties.
    public static func unique<A: Codable, B: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, name: String? = nil
    ) -> Index {
        pair(first, second, name: name, unique: true)
    }

    /// A compound index on three properties.
    public static func on<A: Codable, B: Codable, C: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, _ third: KeyPath<Object, C>,
        name: String? = nil
    ) -> Index {
        triple(first, second, third, name: name, unique: false)
    }

    /// A unique compound index on three properties: no two objects may have the same three values.
    public static func unique<A: Codable, B: Codable, C: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, _ third: KeyPath<Object, C>,
        name: String? = nil
    ) -> Index {
        triple(first, second, third, name: name, unique: true)
    }

    private static func triple<A: Codable, B: Codable, C: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, _ third: KeyPath<Object, C>,
        name: String?, unique: Bool
    ) -> Index {
        Index(
            name: name, unique: unique, keyPaths: [first, second, third], types: [A.self, B.self, C.self],
            keyBytes: { object in
                var bytes: [UInt8] = []
                let encoder = KeyEncoder()
                try encoder.append(object[keyPath: first], to: &bytes)
                try encoder.append(object[keyPath: second], to: &bytes)
                try encoder.append(object[keyPath: third], to: &bytes)
                return bytes
            },
            describe: { "(\($0[keyPath: first]), \($0[keyPath: second]), \($0[keyPath: third]))" })
    }

    private static func single<V: Codable>(_ keyPath: KeyPath<Object, V>, name: String?, unique: Bool)
        -> Index
    {
        Index(
            name: name, unique: unique, keyPaths: [keyPath], types: [V.self],
            keyBytes: { try KeyEncoder().encode($0[keyPath: keyPath]) },
            describe: { "\($0[keyPath: keyPath])" },
            pointerKeyBytes: storedFieldReader(keyPath).map { read in { try KeyEncoder().encode(read($0)) } })
    }

    private static func pair<A: Codable, B: Codable>(
        _ first: KeyPath<Object, A>, _ second: KeyPath<Object, B>, name: String?, unique: Bool
    ) -> Index {
        Index(
            name: name, unique: unique, keyPaths: [first, second], types: [A.self, B.self],
            keyBytes: { object in
                var bytes: [UInt8] = []
                let encoder = KeyEncoder()
                try encoder.append(object[keyPath: first], to: &bytes)
                try encoder.append(object[keyPath: second], to: &bytes)
                return bytes
            },
            describe: { "(\($0[keyPath: first]), \($0[keyPath: second]))" })
    }
}

/// A function that reads the value at `keyPath` from the object a pointer points at by the field's
/// offset, when `keyPath` is a stored property of a struct (nil otherwise: a class, a computed
/// property): cheaper than projecting the key path, which looks up generic metadata per call.
func storedFieldReader<Object, Value>(_ keyPath: KeyPath<Object, Value>) -> ((UnsafeRawPointer) -> Value)? {
    guard let offset = MemoryLayout<Object>.offset(of: keyPath) else { return nil }
    return { $0.load(fromByteOffset: offset, as: Value.self) }
}
