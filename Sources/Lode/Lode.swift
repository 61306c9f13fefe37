// The module apps import: Lode's layers, re-exported as one API (see the Architecture article).
// Each layer is a target of its own so that the compiler refuses an upward import. Of the codec
// layer, apps see `CBORValue` (a record read without its Swift type, as migrations do) and its
// `CBORError`, and the record types the model macro's generated code calls (`RecordCodable`,
// `RecordBuffer`,
// `RecordReader`, `RecordWriter`, `RecordFieldNames`, `RecordValue`, `RecordDecodingError`); tools that read the format itself import `LodeInspection`, which exports the codec
// and the inspection API.

@_exported import LodeLive
@_exported import LodeQuery
@_exported import LodeStorage
@_exported import LodeStore
@_exported import LodeText

@_exported import struct LodeCodec.CBORError
@_exported import enum LodeCodec.CBORValue
@_exported import class LodeCodec.RecordBuffer
@_exported import protocol LodeCodec.RecordCodable
@_exported import struct LodeCodec.RecordDecodingError
@_exported import class LodeCodec.RecordFieldNames
@_exported import struct LodeCodec.RecordReader
@_exported import protocol LodeCodec.RecordValue
@_exported import struct LodeCodec.RecordWriter
