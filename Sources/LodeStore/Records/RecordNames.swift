import LodeCodec

/// The top-level field names of a record, the hash of their sequence (the shape the catalog lists)
/// and the kind of each field's value.
enum RecordNames {
    /// What a record's top level holds.
    struct Fields {
        /// The FNV-1a hash of the names in record order (see `docs/FORMAT.md`).
        var shape: UInt64
        var names: [String]
        /// The kind of each field's value, in the same order.
        var kinds: [FieldKind]
    }

    /// The record's top-level fields, or nil when the record is not a definite-length map of text
    /// keys (no version of Lode writes another).
    static func fields(_ bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) -> Fields? {
        var reader = CBORReader(bytes)
        let head = try reader.readHead()
        guard head.major == 5, head.info != 31, head.argument <= UInt64(bytes.count - reader.offset) else {
            return nil
        }
        var fields = Fields(shape: FieldShape.basis, names: [], kinds: [])
        fields.names.reserveCapacity(Int(min(head.argument, 256)))
        for _ in 0..<Int(head.argument) {
            guard let raw = try reader.readStringBytes(major: 3) else { return nil }
            fields.shape = FieldShape.adding(raw, to: fields.shape)
            fields.names.append(String(decoding: raw, as: UTF8.self))
            guard reader.offset < bytes.count else { throw CBORReader.Failure.truncated(at: reader.offset) }
            fields.kinds.append(FieldKind.of(initialByte: bytes[reader.offset]))
            try reader.skipItem()
        }
        return fields
    }

    /// The shape and the names, or nil when the record is not a definite-length map of text keys.
    static func read(_ bytes: UnsafeRawBufferPointer) throws(CBORReader.Failure) -> (UInt64, [String])? {
        try fields(bytes).map { ($0.shape, $0.names) }
    }

    /// The shape alone.
    static func shape(of bytes: UnsafeRawBufferPointer) -> UInt64? {
        (try? read(bytes))??.0
    }
}
