import Foundation

extension CBORValue: Encodable {
    /// Encodes the value as the Swift value that wrote it would encode: so ``KeyEncoder`` gives a
    /// record's fields the key bytes the library gave them (dates, UUIDs, URLs and decimals included).
    ///
    /// - Throws: what `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .unsigned(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .negative(let value):
            var container = encoder.singleValueContainer()
            guard value <= UInt64(Int64.max) else {
                throw EncodingError.invalidValue(
                    self, .init(codingPath: encoder.codingPath, debugDescription: "below Int64.min"))
            }
            try container.encode(-1 - Int64(value))
        case .bytes(let bytes):
            var container = encoder.singleValueContainer()
            try container.encode(Data(bytes))
        case .text(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .map(let entries):
            var container = encoder.container(keyedBy: FieldKey.self)
            for entry in entries {
                let name: String
                if case .text(let text) = entry.key { name = text } else { name = entry.key.json }
                try container.encode(entry.value, forKey: FieldKey(stringValue: name))
            }
        case .tagged(let tag, let value):
            var container = encoder.singleValueContainer()
            switch (tag, value) {
            case (1, _) where value.number != nil:
                try container.encode(Date(timeIntervalSince1970: value.number!))
            case (40001, _) where value.number != nil:
                try container.encode(Date(timeIntervalSinceReferenceDate: value.number!))
            case (37, .bytes(let bytes)) where bytes.count == 16:
                try container.encode(
                    UUID(
                        uuid: (
                            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                            bytes[15]
                        )))
            case (32, .text(let text)):
                try container.encode(text)
            case (4, _):
                guard let decimal = Decimal(string: json) else {
                    throw EncodingError.invalidValue(
                        self, .init(codingPath: encoder.codingPath, debugDescription: "a malformed decimal"))
                }
                try container.encode(decimal)
            default:
                try container.encode(value)
            }
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .null, .simple:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .float(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    /// The value at a dotted field path (`address.city`), or nil.
    public func value(atPath path: String) -> CBORValue? {
        var current: CBORValue? = self
        for part in path.split(separator: ".") { current = current?[String(part)] }
        return current
    }
}

private struct FieldKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
