import Foundation

/// Any CBOR data item, decoded without knowing the Swift type that wrote it: what tools such as
/// `lode-dump` read records as.
///
/// Only a tagged item is boxed (`indirect`): a number, a string or a link's key is held inline,
/// without an allocation per value.
public enum CBORValue: Sendable, Equatable {
    /// An unsigned integer (major type 0).
    case unsigned(UInt64)
    /// A negative integer -1 - n (major type 1), holding n.
    case negative(UInt64)
    /// A byte string.
    case bytes([UInt8])
    /// A text string.
    case text(String)
    /// An array.
    case array([CBORValue])
    /// A map, its entries in stored order.
    case map([MapEntry])
    /// A tagged item.
    indirect case tagged(UInt64, CBORValue)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// `undefined`, or another simple value.
    case simple(UInt8)
    /// A floating-point number (half, single or double precision).
    case float(Double)

    /// One entry of a map.
    public struct MapEntry: Sendable, Equatable {
        /// The entry's key.
        public var key: CBORValue
        /// The entry's value.
        public var value: CBORValue

        /// An entry of `key` and `value`.
        public init(key: CBORValue, value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// Decodes exactly one data item filling `bytes`. Strings, arrays and maps must have definite
    /// lengths, as in every record Lode writes (docs/FORMAT.md, "Encoding").
    /// - Throws: ``CBORError`` naming the byte offset of malformed or truncated input, of an item of
    ///   indefinite length, or of bytes left after the item (callers that know which record it was say
    ///   so in their own error).
    public init(decoding bytes: [UInt8]) throws(CBORError) {
        do throws(CBORReader.Failure) {
            self = try Self.decode(bytes)
        } catch {
            throw CBORError(reason: error.description)
        }
    }

    /// Decodes exactly one data item filling `bytes`, throwing the reader's own failure.
    package static func decode(_ bytes: [UInt8]) throws(CBORReader.Failure) -> CBORValue {
        let result: Result<CBORValue, CBORReader.Failure> = bytes.withUnsafeBytes { buffer in
            var reader = CBORReader(buffer)
            do throws(CBORReader.Failure) {
                let value = try Self.read(&reader, depth: 0)
                guard reader.isAtEnd else {
                    throw CBORReader.Failure.malformed(
                        "\(buffer.count - reader.offset) bytes after the item", at: reader.offset)
                }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    package static func read(_ reader: inout CBORReader, depth: Int) throws(CBORReader.Failure) -> CBORValue {
        guard depth < 512 else { throw .malformed("nesting deeper than 512", at: reader.offset) }
        let start = reader.offset
        let (major, argument, info) = try reader.readHead()
        func count() throws(CBORReader.Failure) -> Int {
            guard argument <= UInt64(reader.bytes.count - reader.offset) else { throw .truncated(at: start) }
            return Int(argument)
        }
        switch major {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2, 3:
            guard info != 31 else { throw .indefinite(major: major, at: start) }
            let length = try count()
            let collected = Array(reader.bytes[reader.offset..<reader.offset + length])
            reader.offset += length
            if major == 2 { return .bytes(collected) }
            guard let text = String(validating: collected, as: UTF8.self) else {
                throw .malformed("text that is not UTF-8", at: start)
            }
            return .text(text)
        case 4:
            guard info != 31 else { throw .indefinite(major: major, at: start) }
            var items: [CBORValue] = []
            for _ in 0..<(try count()) { items.append(try read(&reader, depth: depth + 1)) }
            return .array(items)
        case 5:
            guard info != 31 else { throw .indefinite(major: major, at: start) }
            var entries: [MapEntry] = []
            for _ in 0..<(try count()) {
                let key = try read(&reader, depth: depth + 1)
                entries.append(MapEntry(key: key, value: try read(&reader, depth: depth + 1)))
            }
            return .map(entries)
        case 6:
            return .tagged(argument, try read(&reader, depth: depth + 1))
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 24: return .simple(UInt8(argument))
            case 25: return .float(Double(Float16Bits(UInt16(argument)).value))
            case 26: return .float(Double(Float(bitPattern: UInt32(argument))))
            case 27: return .float(Double(bitPattern: argument))
            case 31: throw .malformed("unexpected break", at: start)
            default: return .simple(info)
            }
        }
    }

    /// Text, numbers, booleans, null and simple values: keys whose JSON can be quoted as it is.
    private var isScalarKey: Bool {
        switch self {
        case .text, .unsigned, .negative, .bool, .null, .simple, .float: return true
        case .bytes, .array, .map, .tagged: return false
        }
    }

    /// The value of the map entry whose key is the text `field`, or nil.
    public subscript(field: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(field) }?.value
    }

    /// The value as JSON text. Lode's tags are rendered as what they stand for: dates (tags 1 and
    /// 40001) as ISO 8601 text, UUIDs (37) and URLs (32) as text, decimals (4) as numbers; byte strings
    /// are base64 text; other tags are `{"tag": N, "value": …}`; non-finite floats are text. A map
    /// whose keys are text or scalars is an object (scalar keys as their JSON, quoted); a map with a
    /// key that is a map, array, tag or byte string is an array of `[key, value]` pairs.
    public var json: String {
        var output = ""
        writeJSON(into: &output)
        return output
    }

    private func writeJSON(into output: inout String) {
        switch self {
        case .unsigned(let value): output += String(value)
        case .negative(let value):
            output += value == UInt64.max ? "-18446744073709551616" : "-" + String(value + 1)
        case .bytes(let bytes): output += Self.quoted(Data(bytes).base64EncodedString())
        case .text(let text): output += Self.quoted(text)
        case .array(let items):
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                item.writeJSON(into: &output)
            }
            output += "]"
        case .map(let entries):
            // A key that is itself a map, array, tag or string of bytes cannot be a JSON key without
            // quoting its JSON, and quoting nested keys doubles their escapes level by level: such a
            // map is written as an array of [key, value] pairs instead.
            guard entries.allSatisfy({ $0.key.isScalarKey }) else {
                output += "["
                for (index, entry) in entries.enumerated() {
                    if index > 0 { output += "," }
                    output += "["
                    entry.key.writeJSON(into: &output)
                    output += ","
                    entry.value.writeJSON(into: &output)
                    output += "]"
                }
                output += "]"
                return
            }
            output += "{"
            for (index, entry) in entries.enumerated() {
                if index > 0 { output += "," }
                if case .text(let key) = entry.key {
                    output += Self.quoted(key)
                } else {
                    output += Self.quoted(entry.key.json)
                }
                output += ":"
                entry.value.writeJSON(into: &output)
            }
            output += "}"
        case .tagged(let tag, let value):
            if let text = Self.renderTag(tag, value) {
                output += text
            } else {
                output += "{\"tag\":\(tag),\"value\":"
                value.writeJSON(into: &output)
                output += "}"
            }
        case .bool(let value): output += value ? "true" : "false"
        case .null: output += "null"
        case .simple(let value): output += value == 23 ? "null" : "{\"simple\":\(value)}"
        case .float(let value):
            output +=
                value.isFinite
                ? (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) + ".0" : "\(value)")
                : Self.quoted("\(value)")
        }
    }

    /// The number an integer or float value holds, or nil for other values.
    public var number: Double? {
        switch self {
        case .unsigned(let value): Double(value)
        case .negative(let value): -1 - Double(value)
        case .float(let value): value
        default: nil
        }
    }

    private static func renderTag(_ tag: UInt64, _ value: CBORValue) -> String? {
        switch (tag, value) {
        case (1, _):
            guard let seconds = value.number else { return nil }
            return quoted(isoDate(Date(timeIntervalSince1970: seconds)))
        case (40001, _):
            guard let seconds = value.number else { return nil }
            return quoted(isoDate(Date(timeIntervalSinceReferenceDate: seconds)))
        case (0, .text(let text)), (32, .text(let text)): return quoted(text)
        case (37, .bytes(let bytes)) where bytes.count == 16:
            let uuid = UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                    bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
            return quoted(uuid.uuidString)
        case (4, .array(let parts)) where parts.count == 2:
            // The exponent is read exactly: any 64-bit value, not through a Double.
            guard let mantissa = parts[1].decimalDigits else { return nil }
            switch parts[0] {
            case .unsigned(let exponent):
                return exponent <= 64
                    ? Self.decimalText(mantissa: mantissa, exponent: Int(exponent))
                    : "\(mantissa)e\(exponent)"
            case .negative(let magnitude):
                return magnitude < 64
                    ? Self.decimalText(mantissa: mantissa, exponent: -1 - Int(magnitude))
                    : "\(mantissa)e-\(magnitude == .max ? "18446744073709551616" : String(magnitude + 1))"
            default: return nil
            }
        default: return nil
        }
    }

    /// An integer's decimal digits with sign, including bignums (tags 2 and 3).
    private var decimalDigits: String? {
        switch self {
        case .unsigned(let value): return String(value)
        case .negative(let value):
            return value == UInt64.max ? "-18446744073709551616" : "-" + String(value + 1)
        case .tagged(let tag, .bytes(let bytes)) where tag == 2 || tag == 3:
            var digits = [UInt8](repeating: 0, count: 1)  // little-endian base-10 digits
            for byte in bytes {
                var carry = Int(byte)
                for index in digits.indices {
                    let value = Int(digits[index]) * 256 + carry
                    digits[index] = UInt8(value % 10)
                    carry = value / 10
                }
                while carry > 0 {
                    digits.append(UInt8(carry % 10))
                    carry /= 10
                }
            }
            if tag == 3 {  // -1 - n: add one
                var index = 0
                while index < digits.count, digits[index] == 9 {
                    digits[index] = 0
                    index += 1
                }
                if index == digits.count { digits.append(1) } else { digits[index] += 1 }
            }
            let text = String(digits.reversed().map { Character(String($0)) }).drop { $0 == "0" }
            return (tag == 3 ? "-" : "") + (text.isEmpty ? "0" : String(text))
        default: return nil
        }
    }

    private static func decimalText(mantissa: String, exponent: Int) -> String {
        // Far from the decimal point, write JSON's exponent form: a hostile exponent must not spell
        // out billions of zeros.
        if exponent > 64 || exponent < -64 { return "\(mantissa)e\(exponent)" }
        let negative = mantissa.hasPrefix("-")
        var digits = negative ? String(mantissa.dropFirst()) : mantissa
        if exponent >= 0 {
            digits += String(repeating: "0", count: exponent)
        } else {
            let shift = -exponent
            if digits.count <= shift {
                digits = String(repeating: "0", count: shift - digits.count + 1) + digits
            }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -shift))
        }
        return (negative ? "-" : "") + digits
    }

    private static func isoDate(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `text` as a JSON string literal.
    package static func quoted(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                output += String(format: "\\u%04x", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }
}
