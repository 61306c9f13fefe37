/// The top-level field names of a record and the hash of their sequence (the shape the encoder
/// computes while it writes a record, and the catalog lists).
enum RecordNames {
    /// The shape and the names, or nil when the record is not a definite-length map of text keys.
    static func read(_ bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) -> (UInt64, [String])? {
        var reader = CBORReader(bytes)
        let head = try reader.readHead()
        guard head.major == 5, head.info != 31, head.argument <= UInt64(bytes.count - reader.offset) else {
            return nil
        }
        var hash = FieldShape.basis
        var names: [String] = []
        names.reserveCapacity(Int(min(head.argument, 256)))
        for _ in 0..<Int(head.argument) {
            guard let raw = try reader.readStringBytes(major: 3) else { return nil }
            hash = FieldShape.adding(raw, to: hash)
            names.append(String(decoding: raw, as: UTF8.self))
            try reader.skipItem()
        }
        return (hash, names)
    }

    /// The shape alone.
    static func shape(of bytes: UnsafeRawBufferPointer) -> UInt64? {
        (try? read(bytes))??.0
    }
}
