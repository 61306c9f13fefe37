import Foundation

/// The stored field names of a type whose records generated code writes and reads (see
/// ``RecordCodable``), in declared order, each kept as the CBOR text item a record holds: a field
/// is written with one copy and recognised with one comparison.
public final class RecordFieldNames: @unchecked Sendable {
    // @unchecked: immutable after init; the pointers below are its own copies of `items` and `starts`.
    /// The names, in declared order.
    public let names: [String]
    /// Each name's CBOR text item (head and UTF-8 bytes), one after another.
    @usableFromInline let items: [UInt8]
    /// Where each name's item starts in ``items``, and one past the last.
    @usableFromInline let starts: [Int]
    /// ``items`` and ``starts`` where a reader finds them without retaining an array.
    @usableFromInline let itemBytes: UnsafeMutableRawPointer
    @usableFromInline let startOffsets: UnsafeMutablePointer<Int>
    /// Per field, a hash of its name, which a writer folds into a record's shape.
    @usableFromInline let nameHashes: UnsafeMutablePointer<UInt64>
    /// Per field, its name's item as one eight-byte word, for names of at most eight bytes with
    /// their head: a reader recognises the expected field with one load and one comparison.
    @usableFromInline let matches: UnsafeMutablePointer<FieldMatch>

    /// A name's item as a little-endian word (zeros after it), the mask of its bytes, and its length;
    /// the mask is zero for an item longer than eight bytes (compared byte by byte).
    @frozen @usableFromInline
    struct FieldMatch {
        @usableFromInline let word: UInt64
        @usableFromInline let mask: UInt64
        @usableFromInline let length: Int
    }

    /// The form bits of a small ASCII string, read once (``SmallASCII/form``), or 0: readers of
    /// these names copy it rather than read the lazily made global per string.
    @usableFromInline let smallTextForm: UInt64 = SmallASCII.form ?? 0

    /// Names `names` (each at most once).
    public init(_ names: [String]) {
        precondition(Set(names).count == names.count, "a record field name is given twice: \(names)")
        self.names = names
        self.count = names.count
        var writer = CBORWriter(capacity: names.reduce(0) { $0 + $1.utf8.count + 2 })
        var starts: [Int] = []
        for name in names {
            starts.append(writer.bytes.count)
            writer.text(name)
        }
        starts.append(writer.bytes.count)
        self.items = writer.bytes
        self.starts = starts
        // Eight bytes of room after the last name: a reader compares a short name eight bytes at once.
        let itemBytes = UnsafeMutableRawPointer.allocate(byteCount: writer.bytes.count + 8, alignment: 8)
        itemBytes.initializeMemory(as: UInt8.self, repeating: 0, count: writer.bytes.count + 8)
        writer.bytes.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { itemBytes.copyMemory(from: base, byteCount: bytes.count) }
        }
        self.itemBytes = itemBytes
        startOffsets = .allocate(capacity: starts.count)
        startOffsets.initialize(from: starts, count: starts.count)
        matches = .allocate(capacity: max(names.count, 1))
        for field in 0..<names.count {
            let length = starts[field + 1] - starts[field]
            var word: UInt64 = 0
            if length <= 8 {
                for position in 0..<length {
                    word |= UInt64(writer.bytes[starts[field] + position]) << UInt64(position * 8)
                }
            }
            let mask: UInt64 = length > 8 ? 0 : length == 8 ? ~0 : (1 << UInt64(length * 8)) - 1
            (matches + field).initialize(to: FieldMatch(word: word, mask: mask, length: length))
        }
        nameHashes = .allocate(capacity: max(names.count, 1))
        for (field, name) in names.enumerated() {
            (nameHashes + field).initialize(to: FieldShape.adding(name, to: FieldShape.basis))
        }
    }

    deinit {
        itemBytes.deallocate()
        startOffsets.deallocate()
        nameHashes.deallocate()
        matches.deallocate()
    }

    /// No fields (for a writer of a lone value).
    static let none = RecordFieldNames([])

    /// How many fields there are.
    public let count: Int

    /// The index of the field whose name's UTF-8 bytes are `name`, or nil.
    func index(ofUTF8 name: UnsafeRawBufferPointer) -> Int? {
        items.withUnsafeBytes { items in
            for field in 0..<names.count {
                // Skip the head: the text is the item's last `name.count` bytes.
                let end = starts[field + 1]
                let textStart = end - name.count
                guard textStart > starts[field], end - starts[field] <= name.count + 9 else { continue }
                let headLength = textStart - starts[field]
                guard headLength == Self.headLength(name.count),
                    memcmp(items.baseAddress! + textStart, name.baseAddress!, name.count) == 0
                else { continue }
                return field
            }
            return nil
        }
    }

    /// The length of a text head for a string of `count` bytes, in the shortest form.
    @usableFromInline static func headLength(_ count: Int) -> Int {
        switch count {
        case 0..<24: 1
        case 24...0xff: 2
        case 0x100...0xffff: 3
        case 0x10000...0xffff_ffff: 5
        default: 9
        }
    }
}
