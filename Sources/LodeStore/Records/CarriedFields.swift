import Foundation
import LodeCodec

/// The top-level fields of a stored record that a rewrite of its object must keep: those the new
/// record lacks and the type does not know — written by another version of the app (a newer one,
/// which added them, or a sync client of it). A field the type knows and left out (an optional
/// set to nil) is gone; a field the type never reads is carried over as its stored bytes.
enum CarriedFields {
    /// One entry of the old record: its name and where the entry (name and value) lies.
    struct Entry {
        var name: String
        var bytes: Range<Int>
        /// Where its value starts.
        var value: Int
    }

    /// The entries of `old` whose names `new` does not hold, in record order; empty when `new`
    /// holds every name of `old` (the common case: one version of the type wrote both), or when
    /// either is not a definite-length map of text keys (no Lode writes another).
    static func missing(from new: UnsafeRawBufferPointer, in old: UnsafeRawBufferPointer) -> [Entry] {
        var before = CBORReader(old)
        var after = CBORReader(new)
        guard let oldHead = try? before.readHead(), let newHead = try? after.readHead(),
            oldHead.major == 5, newHead.major == 5, oldHead.info != 31, newHead.info != 31,
            oldHead.argument <= UInt64(old.count), newHead.argument <= UInt64(new.count)
        else { return [] }
        // The names of the new record, as ranges of its bytes.
        var names: [Range<Int>] = []
        names.reserveCapacity(Int(newHead.argument))
        for _ in 0..<Int(newHead.argument) {
            let start = after.offset
            guard (try? after.readStringBytes(major: 3)) != nil else { return [] }
            names.append(start..<after.offset)
            guard (try? after.skipItem()) != nil else { return [] }
        }
        var missing: [Entry] = []
        var position = 0
        for _ in 0..<Int(oldHead.argument) {
            let start = before.offset
            guard let name = try? before.readStringBytes(major: 3) else { return [] }
            let nameBytes = UnsafeRawBufferPointer(rebasing: old[start..<before.offset])
            let value = before.offset
            guard (try? before.skipItem()) != nil else { return [] }
            // Records of one version list their names in one order: look where the last match was
            // first.
            if position < names.count, same(nameBytes, new, names[position]) {
                position += 1
                continue
            }
            if let found = names.firstIndex(where: { same(nameBytes, new, $0) }) {
                position = found + 1
                continue
            }
            missing.append(
                Entry(name: String(decoding: name, as: UTF8.self), bytes: start..<before.offset, value: value)
            )
        }
        return missing
    }

    /// `new` with `entries` of `old` appended to its map.
    static func record(
        _ new: UnsafeRawBufferPointer, keeping entries: [Entry], of old: UnsafeRawBufferPointer
    )
        -> [UInt8]
    {
        var reader = CBORReader(new)
        // `missing(from:in:)` read this head already.
        let count = (try? reader.readHead())?.argument ?? 0
        var writer = CBORWriter()
        writer.head(5, count + UInt64(entries.count))
        var bytes = writer.bytes
        bytes.reserveCapacity(new.count + entries.reduce(0) { $0 + $1.bytes.count } + 8)
        bytes += new[reader.offset...]
        for entry in entries { bytes += old[entry.bytes] }
        return bytes
    }

    /// The shape memo of a record made of one the encoder wrote (of shape `shape`) and `entries` of
    /// `old`: a hash of the encoder's shape and each entry's name and kind of value, so records of one
    /// sequence of names and kinds share it — what the type's memo of noted shapes needs.
    static func shape(_ shape: UInt64, keeping entries: [Entry], of old: UnsafeRawBufferPointer) -> UInt64 {
        var hash = shape ^ 0x9e37_79b9_7f4a_7c15
        for entry in entries {
            hash = FieldShape.adding(entry.name, to: hash)
            hash = FieldShape.adding(kind: FieldKind.of(initialByte: old[entry.value]), to: hash)
        }
        return hash
    }

    private static func same(
        _ name: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, _ range: Range<Int>
    )
        -> Bool
    {
        name.count == range.count
            && memcmp(name.baseAddress!, record.baseAddress! + range.lowerBound, name.count) == 0
    }
}
