import Foundation
import LodeCodec

/// A type's generated record codec (its ``RecordCodable`` conformance), called through closures made
/// once per schema: the store's generic code runs unspecialized, and a conformance check or cast per
/// record would cost more than the decode.
package struct RecordCodec<Object>: @unchecked Sendable {
    // @unchecked: immutable closures over a metatype.
    /// The fields' names.
    package let fields: RecordFieldNames
    /// Reads an object from a whole record into uninitialized memory for one object (left
    /// uninitialized when it throws): no copy of the object, which the store's unspecialized code
    /// would make through the type's value witnesses.
    package let decode: (UnsafeRawBufferPointer, UnsafeMutablePointer<Object>) throws -> Void
    /// Reads an object from a whole record as a value (one object read alone: memory of its own
    /// would cost more than the copy).
    package let decodeValue: (UnsafeRawBufferPointer) throws -> Object
    /// Writes an object's record into a writer's buffer.
    package let encode: (Object, inout RecordWriter) throws -> Void
    /// The field of each stored property, by key path.
    package let fieldsByKeyPath: [AnyKeyPath: Int]

    /// The field that holds the property at `keyPath`, or nil (not a stored property of the type).
    package func field(of keyPath: AnyKeyPath) -> Int? { fieldsByKeyPath[keyPath] }

    /// The codec of `Object`, which is `codable`.
    init(_ object: Object.Type, codable: any RecordCodable.Type) {
        func make<Codable: RecordCodable>(_ type: Codable.Type) -> RecordCodec {
            precondition(Codable.self == Object.self)
            // The names are read once here, not per record through the static property.
            let fields = Codable.recordFields
            return RecordCodec(
                fields: fields,
                fieldsByKeyPath: Dictionary(
                    Codable.recordKeyPaths.enumerated().map { ($1 as AnyKeyPath, $0) },
                    uniquingKeysWith: { a, _ in a }),
                decode: { bytes, object in
                    try Codable.decodeRecord(bytes, names: fields, into: UnsafeMutableRawPointer(object))
                },
                decodeValue: { bytes in
                    unsafeBitCast(try Codable.decodeRecord(bytes, names: fields), to: Object.self)
                },
                encode: { object, writer in try unsafeBitCast(object, to: Codable.self).write(record: &writer)
                })
        }
        self = make(codable)
    }

    private init(
        fields: RecordFieldNames, fieldsByKeyPath: [AnyKeyPath: Int],
        decode: @escaping (UnsafeRawBufferPointer, UnsafeMutablePointer<Object>) throws -> Void,
        decodeValue: @escaping (UnsafeRawBufferPointer) throws -> Object,
        encode: @escaping (Object, inout RecordWriter) throws -> Void
    ) {
        self.fields = fields
        self.fieldsByKeyPath = fieldsByKeyPath
        self.decode = decode
        self.decodeValue = decodeValue
        self.encode = encode
    }
}
