import Foundation

/// Renders order-preserving key bytes (see ``KeyEncoder``) as readable text: `42`, `"title"`,
/// `8C1F…-…` for UUIDs, `(a, b)` for compound keys. Unknown bytes are shown in hex.
public enum KeyDescription {
    /// The readable form of `bytes`.
    public static func describe(_ bytes: [UInt8]) -> String {
        var offset = 0
        var parts: [String] = []
        while offset < bytes.count {
            guard let part = component(bytes, &offset) else {
                parts.append("0x" + bytes[offset...].map { String(format: "%02x", $0) }.joined())
                break
            }
            parts.append(part)
        }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: ", ") + ")"
    }

    private static func fixed(_ bytes: [UInt8], _ offset: inout Int, _ count: Int) -> [UInt8]? {
        guard offset + count <= bytes.count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private static func escaped(_ bytes: [UInt8], _ offset: inout Int) -> [UInt8]? {
        var result: [UInt8] = []
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            if byte == 0 {
                if offset < bytes.count && bytes[offset] == 0xff {
                    result.append(0)
                    offset += 1
                } else {
                    return result
                }
            } else {
                result.append(byte)
            }
        }
        return nil
    }

    private static func component(_ bytes: [UInt8], _ offset: inout Int) -> String? {
        let tag = bytes[offset]
        offset += 1
        switch tag {
        case KeyTag.null: return "nil"
        case KeyTag.false: return "false"
        case KeyTag.true: return "true"
        case KeyTag.integer:
            guard let raw = fixed(bytes, &offset, 8) else { return nil }
            let value = raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } ^ (1 << 63)
            return String(Int64(bitPattern: value))
        case KeyTag.largeUnsigned:
            guard let raw = fixed(bytes, &offset, 8) else { return nil }
            return String(raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        case KeyTag.double, KeyTag.date:
            guard let raw = fixed(bytes, &offset, 8) else { return nil }
            let ordered = raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let bits = ordered & (1 << 63) != 0 ? ordered & ~(1 << 63) : ~ordered
            let value = Double(bitPattern: bits)
            if tag == KeyTag.date { return Date(timeIntervalSinceReferenceDate: value).formatted(.iso8601) }
            return String(value)
        case KeyTag.string:
            guard let raw = escaped(bytes, &offset) else { return nil }
            return "\"" + String(decoding: raw, as: UTF8.self) + "\""
        case KeyTag.data:
            guard let raw = escaped(bytes, &offset) else { return nil }
            return "0x" + raw.map { String(format: "%02x", $0) }.joined()
        case KeyTag.uuid:
            guard let raw = fixed(bytes, &offset, 16) else { return nil }
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: raw) }
            return UUID(uuid: uuid).uuidString
        case KeyTag.array, KeyTag.map:
            var parts: [String] = []
            while offset < bytes.count && bytes[offset] != KeyTag.end {
                guard let part = component(bytes, &offset) else { return nil }
                parts.append(part)
            }
            guard offset < bytes.count else { return nil }
            offset += 1
            if tag == KeyTag.array { return "[" + parts.joined(separator: ", ") + "]" }
            var pairs: [String] = []
            var index = 0
            while index + 1 < parts.count {
                pairs.append(
                    parts[index].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) + ": "
                        + parts[index + 1])
                index += 2
            }
            return "{" + pairs.joined(separator: ", ") + "}"
        default:
            offset -= 1
            return nil
        }
    }
}
