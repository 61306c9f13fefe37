/// Reads a link's key — the target's primary key as stored — straight from a record: its value and
/// its key encoding, the bytes `KeyEncoder().encode(value)` gives, read in place for the usual key
/// kinds (integers, text, UUIDs) without going through `Encodable`.
package enum LinkKeyDecoding {
    /// The key at the decoder's position, or nil when `decoder` is not Lode's CBOR decoder.
    /// - Throws: `DecodingError.dataCorrupted` for a malformed item or one that cannot be a key.
    package static func read(from decoder: any Decoder) throws -> (value: CBORValue, key: [UInt8])? {
        guard let state = decoder as? CBORDecodingState else { return nil }
        return try state.linkKey()
    }
}

extension CBORDecodingState {
    /// The item at `offset` as a link key (see ``LinkKeyDecoding``).
    func linkKey() throws -> (value: CBORValue, key: [UInt8]) {
        var reader = CBORReader(bytes, offset: offset)
        let head: (major: UInt8, argument: UInt64, info: UInt8)
        do { head = try reader.readHead() } catch { throw corrupted(error, path: codingPath) }
        let encoder = KeyEncodingState()
        switch head.major {
        case 0 where head.info < 28:
            encoder.unsigned(head.argument)
            return (.unsigned(head.argument), encoder.bytes)
        case 1 where head.info < 28 && head.argument <= UInt64(Int64.max):
            encoder.integer(-1 - Int64(head.argument))
            return (.negative(head.argument), encoder.bytes)
        case 3 where head.info != 31:
            let text = try decodeString(at: offset, path: codingPath)
            encoder.string(text)
            return (.text(text), encoder.bytes)
        case 6 where head.argument == 37:
            var content = CBORReader(bytes, offset: reader.offset)
            if let raw = try? content.readStringBytes(major: 2), raw.count == 16 {
                let uuid = Array(raw)
                return (.tagged(37, .bytes(uuid)), [KeyTag.uuid] + uuid)
            }
        default:
            break
        }
        let value = try currentItem()
        do {
            return (value, try KeyEncoder().encode(value))
        } catch {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription: "a link's key (\(value.json)) cannot be a key: \(error)"))
        }
    }
}
