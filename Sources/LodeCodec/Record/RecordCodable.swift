import Foundation

/// A type whose records are written and read by code written for it (the model macro's), straight
/// between its properties and the stored CBOR map, without `Encoder` and `Decoder` containers. The
/// bytes are those its synthesized `Codable` conformance gives through ``CBOREncoder``, so either
/// codec reads what the other wrote; Lode uses this one when a type has it.
public protocol RecordCodable {
    /// The stored fields' names, in declared order (indexes into it name fields in
    /// ``RecordReader`` and ``RecordWriter``).
    static var recordFields: RecordFieldNames { get }
    /// Reads an object from a record.
    /// - Throws: ``RecordDecodingError`` naming the field that does not decode, or a field the type
    ///   needs that the record lacks.
    init(record: inout RecordReader) throws
    /// Writes the object's fields into `record`.
    /// - Throws: what a nested `Encodable` property throws.
    func write(record: inout RecordWriter) throws
}

extension RecordCodable {
    /// Reads an object from the record `bytes` (which must hold only the record).
    /// - Throws: ``RecordDecodingError``.
    public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws -> Self {
        var reader = try RecordReader(bytes, names: recordFields)
        let object = try Self(record: &reader)
        try reader.finish()
        return object
    }

    /// The object's record and its shape, written into `buffer`'s storage.
    /// - Throws: what a nested `Encodable` property throws.
    public func encodeRecord(reusing buffer: [UInt8] = []) throws -> (bytes: [UInt8], shape: UInt64) {
        var writer = RecordWriter(names: Self.recordFields, buffer: buffer)
        try write(record: &writer)
        let shape = writer.recordShape
        return (writer.bytes, shape)
    }
}
