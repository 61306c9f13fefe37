import Foundation
import LodeCodec

/// A type's generated record codec (its ``RecordCodable`` conformance), called through closures made
/// once per schema: the store's generic code runs unspecialized, and a conformance check or cast per
/// record would cost more than the decode.
package struct RecordCodec<Object>: @unchecked Sendable {
    // @unchecked: immutable closures over a metatype.
    /// The fields' names.
    package let fields: RecordFieldNames
    /// Reads an object from a whole record.
    package let decode: (UnsafeRawBufferPointer) throws -> Object
    /// Writes an object's record into a writer's buffer.
    package let encode: (Object, inout RecordWriter) throws -> Void

    /// The codec of `Object`, which is `codable`.
    init(_ object: Object.Type, codable: any RecordCodable.Type) {
        func make<Codable: RecordCodable>(_ type: Codable.Type) -> RecordCodec {
            precondition(Codable.self == Object.self)
            return RecordCodec(
                fields: Codable.recordFields,
                decode: { bytes in unsafeBitCast(try Codable.decodeRecord(bytes), to: Object.self) },
                encode: { object, writer in try unsafeBitCast(object, to: Codable.self).write(record: &writer)
                })
        }
        self = make(codable)
    }

    private init(
        fields: RecordFieldNames, decode: @escaping (UnsafeRawBufferPointer) throws -> Object,
        encode: @escaping (Object, inout RecordWriter) throws -> Void
    ) {
        self.fields = fields
        self.decode = decode
        self.encode = encode
    }
}
