import Foundation
import LodeCodec

/// Which top-level fields of a record changed, compared on the stored CBOR bytes (the change log
/// lists them for updates, and key-path observations filter on them).
package enum RecordDiff {
    /// The top-level fields whose encoded values differ between two records (nil if either is not a map).
    package static func changedFields(_ old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer) -> Set<
        String
    >? {
        if let changed = changedFieldsInStep(old, new) { return changed }
        func byName(_ bytes: UnsafeRawBufferPointer) -> [String: [UInt8]]? {
            guard let fields = fields(bytes) else { return nil }
            var result: [String: [UInt8]] = [:]
            for field in fields { result[String(decoding: field.name, as: UTF8.self)] = Array(field.value) }
            return result
        }
        guard let before = byName(old), let after = byName(new) else { return nil }
        var changed = Set<String>()
        for (name, value) in after where before[name] != value { changed.insert(name) }
        for name in before.keys where after[name] == nil { changed.insert(name) }
        return changed
    }

    /// The top-level fields of a record, in record order: each name's and value's bytes (views into
    /// `record`); nil when it is not a definite-length map of text keys, as records written by the
    /// encoder are.
    package static func fields(_ record: UnsafeRawBufferPointer)
        -> [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)]?
    {
        var reader = CBORReader(record)
        guard let head = try? reader.readHead(), head.major == 5, head.info != 31 else { return nil }
        var fields: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)] = []
        fields.reserveCapacity(Int(head.argument))
        for _ in 0..<head.argument {
            guard let name = try? reader.readStringBytes(major: 3) else { return nil }
            let start = reader.offset
            guard (try? reader.skipItem()) != nil else { return nil }
            fields.append((name, UnsafeRawBufferPointer(rebasing: record[start..<reader.offset])))
        }
        return fields
    }

    /// The common case of ``changedFields(_:_:)`` without a dictionary: both records hold the same
    /// field names in the same order (one encoder wrote both), so entries are compared side by side
    /// and only the names of changed fields become strings. Nil when the names differ.
    static func changedFieldsInStep(_ oldBytes: UnsafeRawBufferPointer, _ newBytes: UnsafeRawBufferPointer)
        -> Set<String>?
    {
        var changed = Set<String>()
        let inStep = forEachChangedFieldInStep(oldBytes, newBytes) { name, _, _ in
            changed.insert(String(decoding: name, as: UTF8.self))
        }
        return inStep ? changed : nil
    }

    /// Walks two records side by side and calls `body` with the name and both encoded values of each
    /// field whose value differs, when both hold the same field names in the same order (the views
    /// are into the records). Returns false when they do not — having called `body` for the fields
    /// before the first that differs in name: a caller then discards what it was given.
    package static func forEachChangedFieldInStep(
        _ oldBytes: UnsafeRawBufferPointer, _ newBytes: UnsafeRawBufferPointer,
        _ body: (_ name: UnsafeRawBufferPointer, _ old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer)
            ->
            Void
    ) -> Bool {
        var before = CBORReader(oldBytes)
        var after = CBORReader(newBytes)
        guard let oldHead = try? before.readHead(), let newHead = try? after.readHead(),
            oldHead.major == 5, newHead.major == 5, oldHead.info != 31, newHead.info != 31,
            oldHead.argument == newHead.argument
        else { return false }
        for _ in 0..<oldHead.argument {
            guard let oldName = try? before.readStringBytes(major: 3),
                let newName = try? after.readStringBytes(major: 3), same(oldName, newName)
            else { return false }
            let oldStart = before.offset
            let newStart = after.offset
            guard (try? before.skipItem()) != nil, (try? after.skipItem()) != nil else { return false }
            let oldValue = UnsafeRawBufferPointer(rebasing: oldBytes[oldStart..<before.offset])
            let newValue = UnsafeRawBufferPointer(rebasing: newBytes[newStart..<after.offset])
            if !same(oldValue, newValue) { body(newName, oldValue, newValue) }
        }
        return true
    }

    /// Whether two byte runs are equal (`memcmp`, not a generic walk).
    package static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }
}
