import Foundation
import LodeCodec

/// Turns a server row's JSON into a CBOR item without the app's type, in one pass over its bytes:
/// objects become maps (keys in the JSON's order), arrays arrays, strings text, integers that fit 64
/// bits integers, other numbers float64, `true`/`false`/`null` themselves. The type then reads the
/// item with `JSONForms` accepted (a `Date` from its number of seconds, `Data` from Base64).
struct JSONRecordReader {
    /// Why the JSON could not be read, and where (a byte offset).
    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "its data is not JSON: \(reason) at byte \(offset)" }
    }

    /// How deep arrays and objects may nest (a row nested deeper is refused, not a stack overflow).
    static let maximumDepth = 256

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Appends the CBOR item of the JSON text `json` (one value, white space around it allowed) to
    /// `writer`.
    static func convert(_ json: UnsafeRawBufferPointer, into writer: inout CBORWriter) throws(Failure) {
        var reader = JSONRecordReader(json)
        reader.skipSpace()
        try reader.value(into: &writer, depth: 0)
        reader.skipSpace()
        guard reader.offset == json.count else { throw reader.failure("text after the value") }
    }

    private func failure(_ reason: String) -> Failure { Failure(offset: offset, reason: reason) }

    private mutating func skipSpace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0a, 0x0d, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func value(into writer: inout CBORWriter, depth: Int) throws(Failure) {
        guard offset < bytes.count else { throw failure("the text ends where a value should be") }
        switch bytes[offset] {
        case UInt8(ascii: "{"):
            guard depth < Self.maximumDepth else { throw failure("objects and arrays nest too deep") }
            offset += 1
            let head = writer.bytes.count
            writer.head(5, 0)
            var count = 0
            skipSpace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return
            }
            while true {
                skipSpace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                    throw failure("an object's key is not a string")
                }
                try string(into: &writer)
                skipSpace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else {
                    throw failure("a key is not followed by ':'")
                }
                offset += 1
                skipSpace()
                try value(into: &writer, depth: depth + 1)
                count += 1
                skipSpace()
                guard offset < bytes.count else { throw failure("an object is not closed") }
                if bytes[offset] == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                guard bytes[offset] == UInt8(ascii: "}") else { throw failure("expected ',' or '}'") }
                offset += 1
                break
            }
            writer.patchCount(at: head, major: 5, count: count)
        case UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { throw failure("objects and arrays nest too deep") }
            offset += 1
            let head = writer.bytes.count
            writer.head(4, 0)
            var count = 0
            skipSpace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return
            }
            while true {
                skipSpace()
                try value(into: &writer, depth: depth + 1)
                count += 1
                skipSpace()
                guard offset < bytes.count else { throw failure("an array is not closed") }
                if bytes[offset] == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                guard bytes[offset] == UInt8(ascii: "]") else { throw failure("expected ',' or ']'") }
                offset += 1
                break
            }
            writer.patchCount(at: head, major: 4, count: count)
        case UInt8(ascii: "\""):
            try string(into: &writer)
        case UInt8(ascii: "t"):
            try literal("true")
            writer.bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            writer.bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            writer.null()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number(into: &writer)
        default:
            throw failure("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count,
            memcmp(bytes.baseAddress! + offset, word.utf8Start, count) == 0
        else { throw failure("not a JSON value") }
        offset += count
    }

    /// A number: an integer when it has no fraction or exponent and fits 64 bits, else a float64.
    private mutating func number(into writer: inout CBORWriter) throws(Failure) {
        let start = offset
        let negative = bytes[offset] == UInt8(ascii: "-")
        if negative { offset += 1 }
        var magnitude: UInt64 = 0
        var overflow = false
        let digitsStart = offset
        while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9") {
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[offset] - UInt8(ascii: "0")))
            overflow = overflow || o1 || o2
            magnitude = plus
            offset += 1
        }
        guard offset > digitsStart else { throw failure("a number has no digits") }
        if offset - digitsStart > 1, bytes[digitsStart] == UInt8(ascii: "0") {
            throw failure("a number starts with 0")
        }
        var integral = true
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            integral = false
            offset += 1
            let fraction = offset
            while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9")
            {
                offset += 1
            }
            guard offset > fraction else { throw failure("a number's fraction has no digits") }
        }
        if offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
            integral = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-")
            {
                offset += 1
            }
            let exponent = offset
            while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9")
            {
                offset += 1
            }
            guard offset > exponent else { throw failure("a number's exponent has no digits") }
        }
        if integral, !overflow {
            if !negative {
                writer.unsigned(magnitude)
                return
            }
            if magnitude <= UInt64(Int64.max) + 1 {
                // -1 - n is CBOR's negative integer: the argument is magnitude - 1.
                writer.head(1, magnitude - 1)
                return
            }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        guard let double = Double(text) else { throw failure("a number does not read as a Double") }
        writer.double(double)
    }

    /// A string (the reader on its opening quote) as CBOR text, escapes resolved.
    private mutating func string(into writer: inout CBORWriter) throws(Failure) {
        offset += 1
        let start = offset
        // The common case: no escapes, the bytes as they are.
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                writer.head(3, UInt64(offset - start))
                writer.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
                offset += 1
                return
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character in a string") }
            offset += 1
        }
        var text: [UInt8] = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<min(offset, bytes.count)]))
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                writer.head(3, UInt64(text.count))
                writer.bytes += text
                return
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { break }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escape)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0c)
                case UInt8(ascii: "n"): text.append(0x0a)
                case UInt8(ascii: "r"): text.append(0x0d)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xd800..<0xdc00).contains(scalar), offset + 1 < bytes.count,
                        bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
                    {
                        let saved = offset
                        offset += 2
                        let low = try hex4()
                        if (0xdc00..<0xe000).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                        } else {
                            offset = saved
                        }
                    }
                    // A lone surrogate is not a scalar: U+FFFD, as Swift's strings read it.
                    let character = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                    text += Array(String(Character(character)).utf8)
                default:
                    offset -= 1
                    throw failure("an unknown escape in a string")
                }
            default:
                if byte < 0x20 { throw failure("a control character in a string") }
                text.append(byte)
                offset += 1
            }
        }
        throw failure("a string is not closed")
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw failure("a \\u escape is cut short") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a \\u escape has a character that is not hexadecimal")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }
}
