import Foundation
import LodeCodec

/// One change of a history entry as it is stored: views into the entry's bytes, valid while they are.
package struct StoredHistoryChange {
    /// The type's store name (UTF-8).
    package var type: UnsafeRawBufferPointer
    /// The object's encoded primary key.
    package var key: UnsafeRawBufferPointer
    /// Inserted, updated or deleted.
    package var kind: HistoryChange.Kind
    /// The encoded record (a deletion) or map of changed fields (an update) before, when present.
    package var before: UnsafeRawBufferPointer?
    /// The encoded record (an insert) or map of changed fields (an update) after, when present (an
    /// insert recorded by reference has none: see ``Transaction/pastRecords(_:)``).
    package var after: UnsafeRawBufferPointer?
}

extension HistoryLayout {
    /// Calls `body` with each change of the entry `entry` (stored under `version`) in order, without
    /// decoding any value: a reader that wants one type's or one object's changes skips the rest.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history` when the
    ///   entry is not a history entry.
    package static func walkChanges(
        _ entry: UnsafeRawBufferPointer, version: Int, _ body: (StoredHistoryChange) throws -> Void
    ) throws {
        try walk(entry, version: version, header: nil, body)
    }

    /// The entry stored under `version` with only the changes `keep` accepts, each decoded; nil when
    /// it accepts none (the others are skipped undecoded).
    /// - Throws: as ``decode(_:version:)``.
    package static func decode(
        _ entry: UnsafeRawBufferPointer, version: Int, keeping keep: (StoredHistoryChange) -> Bool
    ) throws -> HistoryTransaction? {
        func damaged(_ reason: String) -> LodeError {
            .recordDoesNotDecode(type: database, key: "\(version)", field: "", reason: reason)
        }
        var time: Date?
        var author: String?
        var changes: [HistoryChange] = []
        // Kept as stored: checked, copied, read when asked.
        func fields(_ side: UnsafeRawBufferPointer?, of kind: HistoryChange.Kind? = nil) throws
            -> HistoryFields
        {
            // An insert recorded by reference: its values are read from the records after.
            guard let side else { return kind == .insert ? .unread : [:] }
            guard let fields = HistoryFields.checking(side) else {
                throw damaged("a side of a change is not a map of named fields")
            }
            return fields
        }
        // Changes of one type follow each other: its name is made once per run of them.
        var lastType: (bytes: UnsafeRawBufferPointer, name: String)?
        func header(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            var reader = CBORReader(value)
            if matches(name, timeName) {
                // A tag (1: since 1970, or Foundation's reference date) over a float.
                guard let tag = try? reader.readHead(), tag.major == 6,
                    let seconds = try? CBORValue.read(&reader, depth: 1), case .float(let value) = seconds
                else { return }
                if tag.argument == 1 {
                    time = Date(timeIntervalSince1970: value)
                } else if tag.argument == CBORTags.referenceDate {
                    time = Date(timeIntervalSinceReferenceDate: value)
                }
            } else if matches(name, authorName), let text = try? reader.readStringBytes(major: 3) {
                author = String(decoding: text, as: UTF8.self)
            }
        }
        func change(_ change: StoredHistoryChange) throws {
            guard keep(change) else { return }
            let type: String
            if let last = lastType, RecordDiff.same(last.bytes, change.type) {
                type = last.name
            } else {
                type = String(decoding: change.type, as: UTF8.self)
                lastType = (change.type, type)
            }
            changes.append(
                HistoryChange(
                    type: type, key: [UInt8](copying: change.key), kind: change.kind,
                    before: try fields(change.before),
                    after: try fields(change.after, of: change.kind)))
        }
        try walk(entry, version: version, header: header, change)
        guard !changes.isEmpty else { return nil }
        guard let time else { throw damaged("no time") }
        return HistoryTransaction(version: version, time: time, author: author, changes: changes)
    }

    /// Walks an entry: `header` (when given) sees each top-level field but the changes, `body` each
    /// change.
    private static func walk(
        _ entry: UnsafeRawBufferPointer, version: Int,
        header: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void)?,
        _ body: (StoredHistoryChange) throws -> Void
    ) throws {
        func damaged(_ reason: String) -> LodeError {
            .recordDoesNotDecode(type: database, key: "\(version)", field: "", reason: reason)
        }
        var reader = CBORReader(entry)
        func string(_ major: UInt8, _ what: String) throws -> UnsafeRawBufferPointer {
            guard let bytes = try reader.readStringBytes(major: major) else {
                throw damaged("\(what) is not a \(major == 2 ? "byte" : "text") string")
            }
            return bytes
        }
        do {
            let head = try reader.readHead()
            guard head.major == 5, head.info != 31 else { throw damaged("not a map") }
            for _ in 0..<head.argument {
                let name = try string(3, "a name")
                guard matches(name, changesName) else {
                    let start = reader.offset
                    try reader.skipItem()
                    try header?(name, UnsafeRawBufferPointer(rebasing: entry[start..<reader.offset]))
                    continue
                }
                let list = try reader.readHead()
                guard list.major == 4, list.info != 31 else { throw damaged("its changes are not an array") }
                for _ in 0..<list.argument {
                    let item = try reader.readHead()
                    guard item.major == 5, item.info != 31 else { throw damaged("a change is not a map") }
                    var type: UnsafeRawBufferPointer?
                    var key: UnsafeRawBufferPointer?
                    var kind: HistoryChange.Kind?
                    var before: UnsafeRawBufferPointer?
                    var after: UnsafeRawBufferPointer?
                    // Inserts by reference of one type: where their keys start, and how many.
                    var keys: (start: Int, count: UInt64)?
                    for _ in 0..<item.argument {
                        let field = try string(3, "a field name")
                        switch field.count {
                        case 4 where matches(field, typeName):
                            type = try string(3, "a type")
                        case 4 where matches(field, keysName):
                            let list = try reader.readHead()
                            guard list.major == 4, list.info != 31 else {
                                throw damaged("its keys are not an array")
                            }
                            keys = (reader.offset, list.argument)
                            for _ in 0..<list.argument { try reader.skipItem() }
                        case 3 where matches(field, keyName):
                            key = try string(2, "a key")
                        case 2 where matches(field, opName):
                            let op = try string(3, "an operation")
                            kind =
                                matches(op, insertName)
                                ? .insert
                                : matches(op, updateName) ? .update : matches(op, deleteName) ? .delete : nil
                        case 6, 5:
                            let start = reader.offset
                            try reader.skipItem()
                            let value = UnsafeRawBufferPointer(rebasing: entry[start..<reader.offset])
                            if matches(field, beforeName) {
                                before = value
                            } else if matches(field, afterName) {
                                after = value
                            }
                        default:
                            try reader.skipItem()
                        }
                    }
                    if let keys {
                        guard let type, kind == .insert, key == nil, before == nil, after == nil else {
                            throw damaged("a list of keys is not of inserts of one type")
                        }
                        // Each key read where it was skipped, the reader then back at the item's end.
                        let end = reader.offset
                        reader.offset = keys.start
                        for _ in 0..<keys.count {
                            try body(
                                StoredHistoryChange(
                                    type: type, key: try string(2, "a key"), kind: .insert, before: nil,
                                    after: nil))
                        }
                        reader.offset = end
                        continue
                    }
                    guard let type, let key, let kind else {
                        throw damaged("a change is not a type, a key and an operation")
                    }
                    try body(
                        StoredHistoryChange(type: type, key: key, kind: kind, before: before, after: after))
                }
            }
        } catch let error as LodeError {
            throw error
        } catch {
            throw damaged("\(error)")
        }
    }

    /// Whether `view` holds `bytes`.
    private static func matches(_ view: UnsafeRawBufferPointer, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { RecordDiff.same(view, $0) }
    }

    private static let changesName = Array("changes".utf8)
    private static let typeName = Array("type".utf8)
    private static let keyName = Array("key".utf8)
    private static let keysName = Array("keys".utf8)
    private static let opName = Array("op".utf8)
    private static let beforeName = Array("before".utf8)
    private static let afterName = Array("after".utf8)
    private static let timeName = Array("time".utf8)
    private static let authorName = Array("author".utf8)
    private static let insertName = Array("insert".utf8)
    private static let updateName = Array("update".utf8)
    private static let deleteName = Array("delete".utf8)

    /// `record` (nil: absent) as it was before a change of the object of `type` under `key`: absent
    /// before an insert, the last values before a deletion, the changed fields put back before an
    /// update.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history` when the
    ///   change does not undo onto the record (the history does not follow the records).
    package static func undoing(
        _ kind: HistoryChange.Kind, before: [UInt8]?, after: [UInt8]?, on record: [UInt8]?, type: String,
        key: [UInt8]
    ) throws -> [UInt8]? {
        func damaged(_ reason: String) -> LodeError {
            .recordDoesNotDecode(
                type: StoreLayout.history, key: KeyDescription.describe(key), field: type, reason: reason)
        }
        switch kind {
        case .insert:
            return nil
        case .delete:
            guard let before else { throw damaged("a deletion of the object holds no values") }
            return before
        case .update:
            guard let current = record, let before, let after,
                let undone = current.withUnsafeBytes({ current in
                    before.withUnsafeBytes { before in
                        after.withUnsafeBytes { undoingUpdate(of: current, before: before, after: $0) }
                    }
                })
            else { throw damaged("an update of the object does not undo onto its record") }
            return undone
        }
    }

    /// The record `record` as it was before an update whose changed fields were `before` and `after`
    /// (maps of the fields' encoded values): each field in `before` takes its value there, one only
    /// in `after` (added by the update) goes; the others stay as they are, in their order. Nil when a
    /// side is not a map of fields.
    package static func undoingUpdate(
        of record: UnsafeRawBufferPointer, before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer
    ) -> [UInt8]? {
        replacingFields(of: record, with: before, removing: after)
    }

    /// `record` with each field of `values` (a map of encoded values) set to its value there, and each
    /// field of `removed` that `values` lacks taken out; the fields of `values` the record lacks come
    /// last. Nil when any of them is not a map of fields.
    package static func replacingFields(
        of record: UnsafeRawBufferPointer, with values: UnsafeRawBufferPointer,
        removing removed: UnsafeRawBufferPointer?
    ) -> [UInt8]? {
        guard let fields = RecordDiff.fields(record), let set = RecordDiff.fields(values) else { return nil }
        let gone = removed.map { RecordDiff.fields($0) } ?? []
        guard let gone else { return nil }
        let same = RecordDiff.same
        var kept: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)] = []
        kept.reserveCapacity(fields.count + set.count)
        for field in fields {
            if let replacement = set.first(where: { same($0.name, field.name) }) {
                kept.append((field.name, replacement.value))
            } else if !gone.contains(where: { same($0.name, field.name) }) {
                kept.append(field)
            }
        }
        for field in set where !fields.contains(where: { same($0.name, field.name) }) {
            kept.append(field)
        }
        var writer = CBORWriter(capacity: record.count + values.count)
        writer.head(5, UInt64(kept.count))
        for field in kept {
            writer.head(3, UInt64(field.name.count))
            writer.raw(field.name)
            writer.raw(field.value)
        }
        return writer.bytes
    }
}
