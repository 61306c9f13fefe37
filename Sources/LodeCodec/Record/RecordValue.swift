import Foundation

/// A value generated record code reads and writes itself, without `Codable`'s containers: the
/// standard scalars, `String`, `Date`, `UUID`, `Data`, `URL`, and arrays, sets, optionals and
/// dictionaries of them. Its bytes are exactly what `CBOREncoder` writes for it, and it reads
/// whatever `CBORDecoder` accepts, so the two codecs read each other's records.
///
/// Other `Codable` values in a generated model (nested structs, enums with associated values) go
/// through `CBOREncoder` and `CBORDecoder`; enums with raw values are read as their raw value.
public protocol RecordValue: Codable {
    /// Reads a value at the reader's position.
    /// - Throws: ``RecordDecodingError`` when the item there is not one.
    init(recordValue reader: inout RecordReader) throws
    /// Appends the value.
    /// - Throws: what a nested `Encodable` throws.
    func writeRecordValue(to writer: inout RecordWriter) throws
}

extension Int: RecordValue {
    /// Reads an integer (or a float with an integral value).
    @inlinable public init(recordValue reader: inout RecordReader) throws {
        self = try reader.readInteger(Int.self)
    }
    /// Writes the integer in its shortest head.
    @inlinable public func writeRecordValue(to writer: inout RecordWriter) {
        writer.writeInteger(Int64(self))
    }
}
extension Int8: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(Int8.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeInteger(Int64(self)) }
}
extension Int16: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(Int16.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeInteger(Int64(self)) }
}
extension Int32: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(Int32.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeInteger(Int64(self)) }
}
extension Int64: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(Int64.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeInteger(self) }
}
extension UInt: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(UInt.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUnsigned(UInt64(self)) }
}
extension UInt8: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(UInt8.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUnsigned(UInt64(self)) }
}
extension UInt16: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(UInt16.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUnsigned(UInt64(self)) }
}
extension UInt32: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(UInt32.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUnsigned(UInt64(self)) }
}
extension UInt64: RecordValue {
    /// Reads an integer that fits.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readInteger(UInt64.self) }
    /// Writes the integer.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUnsigned(self) }
}
extension Double: RecordValue {
    /// Reads a number (a float of any width, or an integer).
    @inlinable public init(recordValue reader: inout RecordReader) throws { self = try reader.readDouble() }
    /// Writes a float64.
    @inlinable public func writeRecordValue(to writer: inout RecordWriter) { writer.writeDouble(self) }
}
extension Float: RecordValue {
    /// Reads a number, as `Float`.
    public init(recordValue reader: inout RecordReader) throws { self = Float(try reader.readDouble()) }
    /// Writes a float32.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeFloat(self) }
}
extension Bool: RecordValue {
    /// Reads `true` or `false`.
    @inlinable public init(recordValue reader: inout RecordReader) throws { self = try reader.readBool() }
    /// Writes `f5` or `f4`.
    @inlinable public func writeRecordValue(to writer: inout RecordWriter) { writer.writeBool(self) }
}
extension String: RecordValue {
    /// Reads text (validated UTF-8).
    @inlinable public init(recordValue reader: inout RecordReader) throws { self = try reader.readString() }
    /// Writes text.
    @inlinable public func writeRecordValue(to writer: inout RecordWriter) { writer.writeString(self) }
}
extension Date: RecordValue {
    /// Reads tag 1 (seconds since 1970), tag 40001 (since 2001) or tag 0 (RFC 3339 text).
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readDate() }
    /// Writes tag 1, or tag 40001 when tag 1 would round the date.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeDate(self) }
}
extension UUID: RecordValue {
    /// Reads tag 37 over 16 bytes (or the bytes alone, or text).
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readUUID() }
    /// Writes tag 37 over 16 bytes.
    public func writeRecordValue(to writer: inout RecordWriter) { writer.writeUUID(self) }
}
extension Data: RecordValue {
    /// Reads a byte string.
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readData() }
    /// Writes a byte string.
    public func writeRecordValue(to writer: inout RecordWriter) {
        withUnsafeBytes { writer.writeByteString($0) }
    }
}
extension URL: RecordValue {
    /// Reads tag 32 over text (or the text alone).
    public init(recordValue reader: inout RecordReader) throws { self = try reader.readURL() }
    /// Writes tag 32 over the URL's text.
    public func writeRecordValue(to writer: inout RecordWriter) {
        writer.writeTag(32)
        writer.writeString(absoluteString)
    }
}
extension Optional: RecordValue where Wrapped: RecordValue {
    /// Reads null as nil, or the value.
    public init(recordValue reader: inout RecordReader) throws {
        self = try reader.readNull() ? nil : Wrapped(recordValue: &reader)
    }
    /// Writes null or the value.
    public func writeRecordValue(to writer: inout RecordWriter) throws {
        if let self { try self.writeRecordValue(to: &writer) } else { writer.writeNull() }
    }
}
extension Array: RecordValue where Element: RecordValue {
    /// Reads an array.
    public init(recordValue reader: inout RecordReader) throws {
        let count = try reader.readArrayHead()
        self = []
        reserveCapacity(count)
        for position in 0..<count {
            do { append(try Element(recordValue: &reader)) } catch {
                throw RecordDecodingError.from(error).inside("[\(position)]")
            }
        }
    }
    /// Writes an array.
    public func writeRecordValue(to writer: inout RecordWriter) throws {
        writer.writeHead(4, UInt64(count))
        for element in self { try element.writeRecordValue(to: &writer) }
    }
}
extension Set: RecordValue where Element: RecordValue {
    /// Reads an array of distinct values.
    public init(recordValue reader: inout RecordReader) throws {
        self = Set(try [Element](recordValue: &reader))
    }
    /// Writes the elements as an array, in the set's order (as `Codable` does).
    public func writeRecordValue(to writer: inout RecordWriter) throws {
        writer.writeHead(4, UInt64(count))
        for element in self { try element.writeRecordValue(to: &writer) }
    }
}
extension Dictionary: RecordValue where Key == String, Value: RecordValue {
    /// Reads a map keyed by text.
    public init(recordValue reader: inout RecordReader) throws {
        let count = try reader.readMapHead()
        self = [:]
        reserveCapacity(count)
        for _ in 0..<count {
            let key = try reader.readString()
            do { self[key] = try Value(recordValue: &reader) } catch {
                throw RecordDecodingError.from(error).inside(key)
            }
        }
    }
    /// Writes a map keyed by text, in the dictionary's order (as `Codable` does).
    public func writeRecordValue(to writer: inout RecordWriter) throws {
        writer.writeHead(5, UInt64(count))
        for (key, value) in self {
            writer.writeString(key)
            try value.writeRecordValue(to: &writer)
        }
    }
}
