import Foundation
import LodeCodec

/// Turns a stored record into the JSON of its server row without the app's type, in one pass over its
/// bytes — what the app's `Encodable` conformance through ``SyncJSON``'s encoder would give: maps as
/// objects, a `Date` (tags 1, 40001, 0) as seconds since 1970, a `UUID` (tag 37) as its upper-case
/// text, `Data` as Base64, a `URL` (tag 32) as its text, a `Decimal` (tag 4) as a number, non-finite
/// floats as `"NaN"`, `"Infinity"` and `"-Infinity"`. Every field of the record is written, those of
/// other app versions included.
enum RecordJSONWriter {
    /// Why a record has no JSON (it is not one Lode writes).
    struct Failure: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// The JSON of the CBOR item `record`.
    static func json(_ record: UnsafeRawBufferPointer) throws(Failure) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(record.count + record.count / 2 + 16)
        var reader = CBORReader(record)
        try item(&reader, into: &out, depth: 0)
        guard reader.offset == record.count else { throw Failure(reason: "bytes follow the record") }
        return String(decoding: out, as: UTF8.self)
    }

    /// The JSON of the CBOR item at the reader (a record's field value, a primary key).
    static func json(item reader: inout CBORReader) throws(Failure) -> String {
        var out: [UInt8] = []
        try item(&reader, into: &out, depth: 0)
        return String(decoding: out, as: UTF8.self)
    }

    private static func item(_ reader: inout CBORReader, into out: inout [UInt8], depth: Int) throws(Failure)
    {
        guard depth < JSONRecordReader.maximumDepth else {
            throw Failure(reason: "the record nests too deep")
        }
        let start = reader.offset
        let head: (major: UInt8, info: UInt8, argument: UInt64)
        do throws(CBORReader.Failure) {
            let read = try reader.readHead()
            head = (read.major, read.info, read.argument)
        } catch {
            throw Failure(reason: "the record is not CBOR: \(error)")
        }
        switch head.major {
        case 0:
            appendDecimal(head.argument, to: &out)
        case 1:
            out.append(UInt8(ascii: "-"))
            if head.argument == UInt64.max {
                out += Array("18446744073709551616".utf8)
            } else {
                appendDecimal(head.argument + 1, to: &out)
            }
        case 2, 3:
            reader = CBORReader(reader.bytes, offset: start)
            let read: UnsafeRawBufferPointer?
            do throws(CBORReader.Failure) {
                read = try reader.readStringBytes(major: head.major)
            } catch .indefiniteLength(let what, let offset) {
                throw Failure(reason: CBORReader.Failure.indefiniteLength(what, at: offset).description)
            } catch {
                throw Failure(reason: "the record is not CBOR: \(error)")
            }
            guard let bytes = read else { throw Failure(reason: "the record is not CBOR") }
            if head.major == 2 {
                out.append(UInt8(ascii: "\""))
                out += Array(Data(bytes).base64EncodedString().utf8)
                out.append(UInt8(ascii: "\""))
            } else {
                appendQuoted(bytes, to: &out)
            }
        case 4:
            guard head.info != 31 else {
                throw Failure(reason: CBORReader.Failure.indefinite(major: 4, at: start).description)
            }
            out.append(UInt8(ascii: "["))
            for index in 0..<head.argument {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try item(&reader, into: &out, depth: depth + 1)
            }
            out.append(UInt8(ascii: "]"))
        case 5:
            guard head.info != 31 else {
                throw Failure(reason: CBORReader.Failure.indefinite(major: 5, at: start).description)
            }
            out.append(UInt8(ascii: "{"))
            for index in 0..<head.argument {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                let keyStart = reader.offset
                if let key = try? reader.readStringBytes(major: 3) {
                    appendQuoted(key, to: &out)
                } else {
                    // A key that is not text (no Lode record has one): its JSON, quoted.
                    reader = CBORReader(reader.bytes, offset: keyStart)
                    var keyJSON: [UInt8] = []
                    try item(&reader, into: &keyJSON, depth: depth + 1)
                    keyJSON.withUnsafeBytes { appendQuoted($0, to: &out) }
                }
                out.append(UInt8(ascii: ":"))
                try item(&reader, into: &out, depth: depth + 1)
            }
            out.append(UInt8(ascii: "}"))
        case 6:
            try tagged(head.argument, &reader, start: start, into: &out, depth: depth)
        default:
            switch head.info {
            case 20: out += Array("false".utf8)
            case 21: out += Array("true".utf8)
            case 25: appendDouble(Double(Float16(bitPattern: UInt16(head.argument))), to: &out)
            case 26: appendFloat(Float(bitPattern: UInt32(head.argument)), to: &out)
            case 27: appendDouble(Double(bitPattern: head.argument), to: &out)
            default: out += Array("null".utf8)
            }
        }
    }

    private static func tagged(
        _ tag: UInt64, _ reader: inout CBORReader, start: Int, into out: inout [UInt8], depth: Int
    ) throws(Failure) {
        let content = reader.offset
        func decoded<T: Decodable>(_ type: T.Type) throws(Failure) -> T {
            // The tagged item alone, decoded as Lode's decoder reads it.
            var end = CBORReader(reader.bytes, offset: start)
            do throws(CBORReader.Failure) { try end.skipItem() } catch {
                throw Failure(reason: "the record is not CBOR: \(error)")
            }
            reader = end
            do {
                return try CBORDecoder().decode(
                    T.self, from: UnsafeRawBufferPointer(rebasing: reader.bytes[start..<end.offset]))
            } catch {
                throw Failure(reason: "a tag \(tag) item does not read as \(T.self): \(error)")
            }
        }
        switch tag {
        case 1, 0, CBORTags.referenceDate:
            appendDouble(try decoded(Date.self).timeIntervalSince1970, to: &out)
        case 37:
            let uuid = try decoded(UUID.self)
            appendQuoted(uuid.uuidString, to: &out)
        case 32:
            reader = CBORReader(reader.bytes, offset: content)
            try item(&reader, into: &out, depth: depth + 1)
        case 4, 2, 3:
            out += Array("\(try decoded(Decimal.self))".utf8)
        default:
            // A tag Lode does not write: its content.
            try item(&reader, into: &out, depth: depth + 1)
        }
    }

    private static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        if value < 10 {
            out.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var position = buffer.count
            var rest = value
            while rest > 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            out.append(contentsOf: buffer[position...])
        }
    }

    private static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        guard value.isFinite else {
            out += Array((value.isNaN ? "\"NaN\"" : value > 0 ? "\"Infinity\"" : "\"-Infinity\"").utf8)
            return
        }
        if value == value.rounded(), abs(value) < 1e15 {
            // Integral values as integers with ".0" would read back the same; JSONEncoder writes them
            // without a fraction.
            appendSigned(Int64(value), to: &out)
            return
        }
        out += Array("\(value)".utf8)
    }

    private static func appendFloat(_ value: Float, to out: inout [UInt8]) {
        guard value.isFinite else {
            appendDouble(Double(value), to: &out)
            return
        }
        if value == value.rounded(), abs(value) < 1e7 {
            appendSigned(Int64(value), to: &out)
            return
        }
        out += Array("\(value)".utf8)
    }

    private static func appendSigned(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &out)
    }

    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendQuoted(UnsafeRawBufferPointer($0), to: &out) }
    }

    /// `utf8` as a JSON string: quotes, backslashes and control characters escaped.
    static func appendQuoted(_ utf8: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let hex = Array("0123456789abcdef".utf8)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0a: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0d: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
                out += [hex[Int(byte >> 4)], hex[Int(byte & 0xf)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
