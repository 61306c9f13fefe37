/// A decoder that reads CBOR and can hand the item being decoded over whole, as a ``CBORValue``
/// (for values kept in their stored form, such as a link's target key, without knowing the Swift
/// type that wrote it).
package protocol CBORItemDecoding {
    /// The item the decoder is at, read whole.
    /// - Throws: `DecodingError.dataCorrupted` when it is malformed or truncated.
    func currentItem() throws -> CBORValue
}

extension CBORDecodingState: CBORItemDecoding {
    func currentItem() throws -> CBORValue {
        var reader = CBORReader(bytes, offset: offset)
        do throws(CBORReader.Failure) {
            return try CBORValue.read(&reader, depth: 0)
        } catch {
            throw corrupted(error, path: codingPath)
        }
    }
}
