import Foundation

/// A type whose records are written and read by code written for it (the model macro's), straight
/// between its properties and the stored CBOR map, without `Encoder` and `Decoder` containers. The
/// bytes are those its synthesized `Codable` conformance gives through `CBOREncoder`, so either
/// codec reads what the other wrote; Lode uses this one when a type has it.
public protocol RecordCodable {
    /// The stored fields' names, in declared order (indexes into it name fields in
    /// ``RecordReader`` and ``RecordWriter``).
    static var recordFields: RecordFieldNames { get }
    /// The stored properties, in the order of ``recordFields``: field readers find a property's
    /// field by its key path.
    static var recordKeyPaths: [PartialKeyPath<Self>] { get }
    /// Reads an object from a record.
    /// - Throws: ``RecordDecodingError`` naming the field that does not decode, or a field the type
    ///   needs that the record lacks.
    init(record: inout RecordReader) throws
    /// Writes the object's fields into `record`.
    /// - Throws: what a nested `Encodable` property throws.
    func write(record: inout RecordWriter) throws
    /// Reads an object from the whole record `bytes` into `object`, uninitialized memory for one
    /// `Self` (left uninitialized when it throws). The model macro writes it where the type is, so
    /// the decode is specialized for the type and lands in place; the default reads through
    /// `decodeRecord(_:names:)`.
    /// - Throws: ``RecordDecodingError``.
    static func decodeRecord(
        _ bytes: UnsafeRawBufferPointer, names: RecordFieldNames, into object: UnsafeMutableRawPointer
    ) throws
}

extension RecordCodable {
    /// Reads an object from the record `bytes` (which must hold only the record).
    /// - Throws: ``RecordDecodingError``.
    public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws -> Self {
        try decodeRecord(bytes, names: recordFields)
    }

    /// Reads an object from the record `bytes` with the type's ``recordFields`` given: for a caller
    /// that keeps them, instead of reading the static property per record.
    /// - Throws: ``RecordDecodingError``.
    @inlinable
    public static func decodeRecord(_ bytes: UnsafeRawBufferPointer, names: RecordFieldNames) throws -> Self {
        var reader = try RecordReader(bytes, names: names)
        let object = try Self(record: &reader)
        try reader.finish()
        return object
    }

    /// Reads an object from the record `bytes` into `object` (see the requirement).
    /// - Throws: ``RecordDecodingError``.
    public static func decodeRecord(
        _ bytes: UnsafeRawBufferPointer, names: RecordFieldNames, into object: UnsafeMutableRawPointer
    ) throws {
        object.assumingMemoryBound(to: Self.self).initialize(to: try decodeRecord(bytes, names: names))
    }

    /// The object's record and its shape.
    /// - Throws: what a nested `Encodable` property throws.
    public func encodeRecord() throws -> (bytes: [UInt8], shape: UInt64) {
        let buffer = RecordBuffer()
        return try withEncodedRecord(in: buffer) { (Array($0), $1) }
    }

    /// Writes the object's record into `buffer` and hands `body` its bytes (valid during `body`) and
    /// shape.
    /// - Throws: what a nested `Encodable` property throws, or what `body` throws.
    public func withEncodedRecord<R>(
        in buffer: RecordBuffer, _ body: (UnsafeRawBufferPointer, UInt64) throws -> R
    ) throws -> R {
        var writer = RecordWriter(names: Self.recordFields, into: buffer)
        try write(record: &writer)
        let (bytes, shape) = writer.finish()
        return try body(bytes, shape)
    }
}
