import Foundation
import LMDB
import LodeCodec

/// The net changes of one write transaction, per type and primary key: an insert followed by an
/// update is an insert, an insert followed by a delete is nothing, and so on. Kept in the order the
/// objects were first touched.
package struct PendingChanges {
    private struct Net {
        var type: String
        /// The position of `type` in `types`.
        var typeIndex: Int
        var key: [UInt8]
        var existedBefore: Bool
        var existsAfter: Bool
        var fields: Set<String>?
        var cleared = false
    }

    /// The records of a net change, kept for the history: the record before the transaction
    /// (captured at the first change) and after the last change, as ranges of `capturedBytes`
    /// (start -1: not captured). Plain integers: no allocation, nothing to release per object.
    private struct Captured {
        var before = -1
        var beforeCount = 0
        var after = -1
        var afterCount = 0
    }

    /// The captured records, one after another (a record replaced later in the transaction leaves
    /// its bytes behind, unused).
    private var capturedBytes: [UInt8] = []

    /// Copies `bytes` to the end of `capturedBytes`; returns where they start (-1 for none).
    private mutating func keep(_ bytes: UnsafeRawBufferPointer?) -> (start: Int, count: Int) {
        guard let bytes else { return (-1, 0) }
        let start = capturedBytes.count
        if let base = bytes.baseAddress, !bytes.isEmpty {
            capturedBytes.append(
                contentsOf: UnsafeBufferPointer(
                    start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count))
        }
        return (start, bytes.count)
    }

    private mutating func capture(before: UnsafeRawBufferPointer?, after: UnsafeRawBufferPointer?) -> Captured
    {
        let kept = (before: keep(before), after: keep(after))
        return Captured(
            before: kept.before.start, beforeCount: kept.before.count, after: kept.after.start,
            afterCount: kept.after.count)
    }

    /// Whether changes keep the records before and after them (the store keeps history): the
    /// history then reads them here instead of from the records (see ``startCapturingValues()``).
    package private(set) var capturesValues = false
    /// With ``capturesValues``, one per net change, at the same position (kept apart from `nets`,
    /// whose size every store pays).
    private var captured: [Captured] = []

    /// A primary key hashed as one run of bytes (an array hashes element by element).
    private struct Slot: Hashable {
        var key: [UInt8]
        func hash(into hasher: inout Hasher) { key.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    private var nets: [Net] = []
    /// Per type touched (a transaction touches few), the position in `nets` of each key.
    private var types: [String] = []
    private var index: [[Slot: Int]] = []
    /// Whether every change so far inserted a key that did not exist before: then no key can come
    /// twice, and `index` is left empty (a bulk load pays no hashing per object). The first other
    /// change builds it.
    private var onlyNewKeys = true

    private mutating func typeIndex(_ type: String) -> Int {
        // Writes come in runs of one type: the last one first.
        if let last = types.last, last == type { return types.count - 1 }
        if let found = types.firstIndex(of: type) { return found }
        types.append(type)
        index.append([:])
        return types.count - 1
    }

    /// Indexes every change recorded while only new keys were inserted.
    private mutating func buildIndex() {
        guard onlyNewKeys else { return }
        onlyNewKeys = false
        for position in nets.indices where !nets[position].cleared {
            index[nets[position].typeIndex][Slot(key: nets[position].key)] = position
        }
    }

    var isEmpty: Bool { nets.isEmpty }

    /// How many more inserted records are kept: a commit that inserts more objects than the
    /// history keeps values for (`StoreConfiguration.historyInsertValuesLimit`) records its inserts
    /// by reference, so a bulk load copies nothing.
    private var insertsToKeep = 0

    /// Keeps the records of the changes recorded from now on (those recorded before keep none: the
    /// history reads theirs from the records), and the records of the first `insertLimit` inserts.
    package mutating func startCapturingValues(insertLimit: Int) {
        guard !capturesValues else { return }
        capturesValues = true
        insertsToKeep = insertLimit
        captured = Array(repeating: Captured(), count: nets.count)
    }

    /// `after`, when it is an inserted record still to keep (counted), else nil.
    private mutating func insertedRecord(_ after: UnsafeRawBufferPointer?) -> UnsafeRawBufferPointer? {
        guard insertsToKeep > 0 else { return nil }
        insertsToKeep -= 1
        return after
    }

    /// Each object's net change in the order first touched — its type, key, and whether it existed
    /// before the transaction and exists after it — or, with `cleared`, a type emptied at that point
    /// (the changes before it of that type then neither existed before nor exist after).
    /// With ``capturesValues``, `before` and `after` are the records kept (views valid during
    /// `body`), nil where none was.
    package func visitNetChanges(
        _ body: (
            _ type: String, _ key: [UInt8], _ existedBefore: Bool, _ existsAfter: Bool, _ cleared: Bool,
            _ before: UnsafeRawBufferPointer?, _ after: UnsafeRawBufferPointer?
        ) throws -> Void
    ) rethrows {
        try capturedBytes.withUnsafeBytes { all in
            func view(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer? {
                start < 0 ? nil : UnsafeRawBufferPointer(rebasing: all[start..<start + count])
            }
            for position in nets.indices {
                let net = nets[position]
                let kept = capturesValues ? captured[position] : Captured()
                try body(
                    net.type, net.key, net.existedBefore, net.existsAfter, net.cleared,
                    view(kept.before, kept.beforeCount), view(kept.after, kept.afterCount))
            }
        }
    }

    /// Records a change of the object of `type` under `key`; with ``capturesValues``, `before` (the
    /// stored record this change replaced or deleted) and `after` (the record it stored) are kept
    /// for the history — a change that does not give them makes the history read them from the
    /// records instead.
    package mutating func record(
        type: String, key: [UInt8], existedBefore: Bool, existsAfter: Bool, fields: Set<String>? = nil,
        before: [UInt8]? = nil, after: UnsafeRawBufferPointer? = nil
    ) {
        let typeIndex = typeIndex(type)
        if onlyNewKeys, !existedBefore, existsAfter {
            // A key that did not exist before this change was not changed earlier in the transaction
            // either (it would exist, or a deletion would have ended the new-keys-only run).
            nets.append(
                Net(
                    type: type, typeIndex: typeIndex, key: key, existedBefore: false, existsAfter: true,
                    fields: fields))
            if capturesValues { captured.append(capture(before: nil, after: insertedRecord(after))) }
            return
        }
        buildIndex()
        // One hash: the key's position, or (claimed for it now) the next one.
        let position = Self.claim(&index[typeIndex][Slot(key: key), default: -1], nets.count)
        if position >= 0 {
            nets[position].existsAfter = existsAfter
            if capturesValues {
                // An insert's record is kept only while the commit inserts few enough objects (one
                // already kept is replaced without counting again).
                let replaces = nets[position].existedBefore || captured[position].after >= 0
                let kept = keep(!existsAfter ? nil : replaces ? after : insertedRecord(after))
                captured[position].after = kept.start
                captured[position].afterCount = kept.count
            }
            if let known = nets[position].fields, let fields {
                nets[position].fields = known.union(fields)
            } else {
                nets[position].fields = nil
            }
        } else {
            nets.append(
                Net(
                    type: type, typeIndex: typeIndex, key: key, existedBefore: existedBefore,
                    existsAfter: existsAfter, fields: fields))
            if capturesValues {
                let kept =
                    existedBefore
                    ? before.map { before in
                        before.withUnsafeBytes { capture(before: $0, after: existsAfter ? after : nil) }
                    } ?? capture(before: nil, after: existsAfter ? after : nil)
                    : capture(before: nil, after: existsAfter ? insertedRecord(after) : nil)
                captured.append(kept)
            }
        }
    }

    /// `slot`'s position when it holds one (≥ 0); otherwise stores `next` there and returns -1.
    private static func claim(_ slot: inout Int, _ next: Int) -> Int {
        guard slot < 0 else { return slot }
        slot = next
        return -1
    }

    /// The one-field set of the last update that changed one field (updates in a row mostly change
    /// the same field: its set is made once).
    private var lastField: Set<String> = []

    /// ``record(type:key:existedBefore:existsAfter:fields:before:after:)`` for an update of the one
    /// field `field` (none when nil: the update changed no bytes).
    package mutating func recordUpdate(
        type: String, key: [UInt8], field: String?, before: [UInt8]?, after: UnsafeRawBufferPointer
    ) {
        var fields: Set<String> = []
        if let field {
            if lastField.count != 1 || lastField.first != field { lastField = [field] }
            fields = lastField
        }
        record(
            type: type, key: key, existedBefore: true, existsAfter: true, fields: fields, before: before,
            after: after)
    }

    /// Adds what a savepoint recorded (on a fresh `PendingChanges`) after this transaction's own
    /// changes, as if each had been recorded here: the net effect of both, in order.
    mutating func merge(_ later: PendingChanges) {
        for net in later.nets {
            if net.cleared {
                recordClear(type: net.type)
            } else {
                // A savepoint's changes keep no records (it is a transaction of its own): the history
                // reads the records of those objects.
                record(
                    type: net.type, key: net.key, existedBefore: net.existedBefore,
                    existsAfter: net.existsAfter, fields: net.fields)
            }
        }
    }

    package mutating func recordClear(type: String) {
        buildIndex()
        // Earlier changes to the type are covered by the clear; later ones follow it.
        for position in nets.indices where nets[position].type == type && !nets[position].cleared {
            nets[position].existedBefore = false
            nets[position].existsAfter = false
        }
        let typeIndex = typeIndex(type)
        index[typeIndex] = [:]
        if capturesValues { captured.append(Captured()) }
        nets.append(
            Net(
                type: type, typeIndex: typeIndex, key: [], existedBefore: true, existsAfter: false,
                fields: nil,
                cleared: true))
    }

    private static func operation(_ net: Net) -> ChangeLogEntry.Operation? {
        if net.cleared { return .clear }
        switch (net.existedBefore, net.existsAfter) {
        case (false, true): return .insert
        case (true, true): return .update
        case (true, false): return .delete
        case (false, false): return nil
        }
    }

    /// What the entry lists: each object's net change, except that a type with more than
    /// `bulkThreshold` changed objects is one `bulk` change (with the count) where its first change was.
    /// Returns how many there are; `body` gets each in order: the position of its change in `nets`
    /// (for a `bulk` change, the type's first), the operation, and the count of a `bulk` change. The
    /// changes are read in place, not copied (a bulk load lists a million).
    @discardableResult
    private func visitListed(
        bulkThreshold: Int, _ body: (_ position: Int, _ op: ChangeLogEntry.Operation, _ count: Int?) -> Void
    ) -> Int {
        var counts = Array(repeating: 0, count: types.count)
        for position in nets.indices where !nets[position].cleared && Self.operation(nets[position]) != nil {
            counts[nets[position].typeIndex] += 1
        }
        var listed = 0
        var bulkWritten = Array(repeating: false, count: types.count)
        for position in nets.indices {
            guard let op = Self.operation(nets[position]) else { continue }
            let type = nets[position].typeIndex
            if op != .clear, counts[type] > bulkThreshold {
                if !bulkWritten[type] {
                    bulkWritten[type] = true
                    listed += 1
                    body(position, .bulk, counts[type])
                }
                continue
            }
            listed += 1
            body(position, op, nil)
        }
        return listed
    }

    /// The entry to store.
    func entry(bulkThreshold: Int = .max) -> ChangeLogEntry {
        var changes: [ChangeLogEntry.Change] = []
        visitListed(bulkThreshold: bulkThreshold) { position, op, count in
            let net = nets[position]
            let fields = op == .update ? net.fields.map { $0.sorted() } : nil
            changes.append(
                .init(
                    type: net.type, key: Data(op == .bulk ? [] : net.key), op: op, fields: fields,
                    count: count))
        }
        return ChangeLogEntry(time: Date(), changes: changes)
    }

    /// The names an entry's changes repeat, encoded once: `type`, `key`, and `op` with each operation.
    private final class EncodedNames: Sendable {
        static let shared = EncodedNames()
        let type: [UInt8]
        let key: [UInt8]
        let operations: [ChangeLogEntry.Operation: [UInt8]]

        private init() {
            func text(_ values: String...) -> [UInt8] {
                var writer = CBORWriter(capacity: 24)
                for value in values { writer.text(value) }
                return writer.bytes
            }
            type = text("type")
            key = text("key")
            operations = Dictionary(
                uniqueKeysWithValues: ChangeLogEntry.Operation.allCases.map { ($0, text("op", $0.rawValue)) })
        }
    }

    /// The entry's CBOR, written directly (a bulk write can log a million changes): the same bytes
    /// the `Codable` form of ``ChangeLogEntry`` has, `time` first so pruning reads only that.
    func encodedEntry(bulkThreshold: Int) -> [UInt8]? {
        let listed = visitListed(bulkThreshold: bulkThreshold) { _, _, _ in }
        guard listed > 0 else { return nil }
        var writer = CBORWriter(capacity: 64 + listed * 48)
        writer.head(5, 2)
        writer.text("time")
        writer.date(Date())
        writer.text("changes")
        writer.head(4, UInt64(listed))
        // What repeats from change to change is encoded once: the names, each type's name, and the
        // list of changed fields of the last update (updates in a row mostly change the same ones).
        let names = EncodedNames.shared
        var typeNames: [[UInt8]?] = Array(repeating: nil, count: types.count)
        var lastFields: (fields: Set<String>, encoded: [UInt8])?
        visitListed(bulkThreshold: bulkThreshold) { position, op, count in
            let typeIndex = nets[position].typeIndex
            let fields = op == .update ? nets[position].fields : nil
            writer.head(5, fields == nil && count == nil ? 3 : 4)
            names.type.withUnsafeBytes { writer.raw($0) }
            if typeNames[typeIndex] == nil {
                var name = CBORWriter(capacity: types[typeIndex].utf8.count + 2)
                name.text(types[typeIndex])
                typeNames[typeIndex] = name.bytes
            }
            typeNames[typeIndex]!.withUnsafeBytes { writer.raw($0) }
            names.key.withUnsafeBytes { writer.raw($0) }
            if op == .bulk {
                writer.head(2, 0)
            } else {
                nets[position].key.withUnsafeBytes { writer.byteString($0) }
            }
            names.operations[op]!.withUnsafeBytes { writer.raw($0) }
            if let fields {
                if lastFields?.fields != fields {
                    var list = CBORWriter(capacity: 16 + fields.count * 12)
                    list.text("fields")
                    list.head(4, UInt64(fields.count))
                    for field in fields.sorted() { list.text(field) }
                    lastFields = (fields, list.bytes)
                }
                lastFields!.encoded.withUnsafeBytes { writer.raw($0) }
            }
            if let count {
                writer.text("count")
                writer.head(0, UInt64(count))
            }
        }
        return writer.bytes
    }
}
