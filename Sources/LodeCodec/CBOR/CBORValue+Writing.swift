extension CBORValue {
    /// The value as CBOR bytes, in the shortest heads, as it reads back: maps keep their entry order,
    /// tags stay, floats are written in eight bytes.
    public var encoded: [UInt8] {
        var writer = CBORWriter()
        write(into: &writer)
        return writer.bytes
    }

    func write(into writer: inout CBORWriter) {
        switch self {
        case .unsigned(let value): writer.head(0, value)
        case .negative(let value): writer.head(1, value)
        case .bytes(let bytes): bytes.withUnsafeBytes { writer.byteString($0) }
        case .text(let text): writer.text(text)
        case .array(let items):
            writer.head(4, UInt64(items.count))
            for item in items { item.write(into: &writer) }
        case .map(let entries):
            writer.head(5, UInt64(entries.count))
            for entry in entries {
                entry.key.write(into: &writer)
                entry.value.write(into: &writer)
            }
        case .tagged(let tag, let value):
            writer.tag(tag)
            value.write(into: &writer)
        case .bool(let value): writer.bool(value)
        case .null: writer.null()
        case .simple(let value):
            if value < 24 {
                writer.head(7, UInt64(value))
            } else {
                writer.bytes.append(0xf8)
                writer.bytes.append(value)
            }
        case .float(let value): writer.double(value)
        }
    }
}
