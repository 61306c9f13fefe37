import LodeCodec

/// A record's shape for the check at open: a hash of its field names and the kind of each value
/// (major type, tag number), into nested maps and the first element of arrays. Records of one
/// shape decode alike unless a value is out of range for its field, so one decode per shape finds
/// a change of fields or of their types.
enum RecordShape {
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var reader = CBORReader(bytes)
        return (try? hash(&reader, depth: 0)) ?? 0
    }

    private static func hash(_ reader: inout CBORReader, depth: Int) throws(CBORReader.Failure) -> UInt64 {
        let start = reader.offset
        let head = try reader.readHead()
        var hash = FieldShape.adding(CollectionOfOne(head.major), to: FieldShape.basis)
        // A count larger than the bytes left is a damaged record: its shape is its head alone.
        let fits = head.argument <= UInt64(reader.bytes.count - reader.offset)
        switch head.major {
        case 5 where head.info != 31 && depth < 8 && fits:
            for _ in 0..<Int(head.argument) {
                guard let name = try reader.readStringBytes(major: 3) else { return hash }
                hash = FieldShape.adding(name, to: hash)
                hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
            }
        case 4 where head.info != 31 && depth < 8 && fits:
            for index in 0..<Int(head.argument) {
                if index == 0 {
                    hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
                } else {
                    try reader.skipItem()
                }
            }
        case 6 where depth < 8:
            hash = hash &* 31 &+ head.argument
            hash = hash &* 31 &+ (try Self.hash(&reader, depth: depth + 1))
        case 7:
            // true/false and null are different kinds for a decoder (a Bool field cannot be null).
            hash = hash &* 31 &+ UInt64(head.info == 22 ? 1 : head.info == 20 || head.info == 21 ? 2 : 3)
        default:
            reader = CBORReader(reader.bytes, offset: start)
            try reader.skipItem()
        }
        return hash
    }
}
