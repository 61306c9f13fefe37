import Foundation
import LMDB
import LodeCodec

/// Time travel: the store read as it was after an earlier commit, rebuilt from the records now and
/// the history of what changed since (each change undone, newest first).
extension Transaction {
    /// The objects of `type` (its store name) that commits after `version` changed, each with its
    /// record as it was at `version` — nil for an object that did not exist then — by encoded
    /// primary key; with `keys`, only those objects. Objects absent from the answer are as they are
    /// now.
    ///
    /// - Complexity: O(*c*) for the *c* changes of every type after `version` (each entry is walked,
    ///   only this type's changes are kept), and one lookup and *k* field rewrites per object changed
    ///   *k* times.
    /// - Throws: ``LodeError/historyUnavailable(reason:)`` when the history does not reach back to
    ///   `version` or `version` is after this transaction's;
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for an entry or record that does not
    ///   read.
    package func changedRecords(of type: String, asOf version: Int, keys: Set<[UInt8]>? = nil) throws
        -> [[UInt8]: [UInt8]?]
    {
        guard version <= self.version else {
            throw LodeError.historyUnavailable(
                reason: "version \(version) is after the version read (\(self.version))")
        }
        guard version >= 0 else {
            throw LodeError.historyUnavailable(reason: "version \(version) is not a version")
        }
        typealias Step = (kind: HistoryChange.Kind, before: [UInt8]?, after: [UInt8]?)
        var steps: [[UInt8]: [Step]] = [:]
        let typeBytes = Array(type.utf8)
        let only = keys?.count == 1 ? keys!.first! : nil
        try typeBytes.withUnsafeBytes { typeName in
            try forEachHistoryEntry(since: HistoryToken(version: version)) { committed, entry in
                try HistoryLayout.walkChanges(entry, version: committed) { change in
                    guard RecordDiff.same(change.type, typeName) else { return }
                    if let only {
                        guard only.withUnsafeBytes({ RecordDiff.same($0, change.key) }) else { return }
                    }
                    let key = Array(change.key)
                    if only == nil, let keys, !keys.contains(key) { return }
                    steps[key, default: []].append(
                        (change.kind, change.before.map(Array.init), change.after.map(Array.init)))
                }
                return true
            }
        }
        guard !steps.isEmpty else { return [:] }
        let records = try recordsDatabase(of: type)
        var past: [[UInt8]: [UInt8]?] = [:]
        past.reserveCapacity(steps.count)
        for (key, changes) in steps {
            var record = try lmdb.get(key, in: records)
            for change in changes.reversed() {
                record = try HistoryLayout.undoing(
                    change.kind, before: change.before, after: change.after, on: record, type: type, key: key)
            }
            past[key] = record
        }
        return past
    }

    /// The record of each object of `wanted` as it was after each commit asked for it (nil where the
    /// object did not exist then): its record now with every change the history holds after that
    /// commit undone, newest first. How the history reads an insert recorded by reference.
    ///
    /// - Complexity: one walk of the history after the earliest version asked for, and one lookup per
    ///   object.
    /// - Throws: as ``changedRecords(of:asOf:keys:)``.
    package func pastRecords(_ wanted: [ObjectID: Set<Int>]) throws -> [ObjectID: [Int: [UInt8]?]] {
        guard let earliest = wanted.values.lazy.compactMap({ $0.min() }).min() else { return [:] }
        guard earliest <= version else {
            throw LodeError.historyUnavailable(
                reason: "version \(earliest) is after the version read (\(version))")
        }
        var keysByType: [String: Set<[UInt8]>] = [:]
        for id in wanted.keys { keysByType[id.typeName, default: []].insert(id.primaryKey) }
        let types = keysByType.map { (name: Array($0.key.utf8), type: $0.key, keys: $0.value) }
        typealias Step = (version: Int, kind: HistoryChange.Kind, before: [UInt8]?, after: [UInt8]?)
        var steps: [ObjectID: [Step]] = [:]
        try forEachHistoryEntry(since: HistoryToken(version: earliest)) { committed, entry in
            try HistoryLayout.walkChanges(entry, version: committed) { change in
                guard
                    let type = types.first(where: { type in
                        type.name.withUnsafeBytes { RecordDiff.same($0, change.type) }
                    })
                else { return }
                let key = Array(change.key)
                guard type.keys.contains(key) else { return }
                steps[ObjectID(typeName: type.type, primaryKey: key), default: []].append(
                    (committed, change.kind, change.before.map(Array.init), change.after.map(Array.init)))
            }
            return true
        }
        var past: [ObjectID: [Int: [UInt8]?]] = [:]
        past.reserveCapacity(wanted.count)
        for (id, versions) in wanted {
            var record: [UInt8]?
            if try catalogEntry(named: id.typeName) != nil {
                record = try lmdb.get(id.primaryKey, in: try recordsDatabase(of: id.typeName))
            }
            // Newest first: each version asked for takes the record once every later change is undone.
            let asked = versions.sorted(by: >)
            var next = 0
            var found: [Int: [UInt8]?] = [:]
            for step in (steps[id] ?? []).reversed() {
                while next < asked.count, asked[next] >= step.version {
                    found.updateValue(record, forKey: asked[next])
                    next += 1
                }
                guard next < asked.count else { break }
                record = try HistoryLayout.undoing(
                    step.kind, before: step.before, after: step.after, on: record, type: id.typeName,
                    key: id.primaryKey)
            }
            for version in asked[next...] { found.updateValue(record, forKey: version) }
            past[id] = found
        }
        return past
    }

    /// The record of the type stored as `type` under `key` (its encoded primary key) as it was after
    /// the commit that made `version`, or nil when the object did not exist then; see
    /// ``object(_:key:asOf:)``.
    ///
    /// - Throws: as ``object(_:key:asOf:)``, and ``LodeError/typeNotFound(_:)`` for a type the store
    ///   does not hold.
    public func storedRecord(of type: String, key: [UInt8], asOf version: Int) throws -> StoredRecord? {
        if let past = try changedRecords(of: type, asOf: version, keys: [key])[key] {
            return past.map { StoredRecord(key: key, bytes: $0) }
        }
        return try storedRecord(of: type, key: key)
    }

    /// The `T` whose primary key is `key` as it was after the commit that made `version` (nil when
    /// there was none then): the object read now, with every change the history holds since undone.
    ///
    /// ```swift
    /// let yesterday = try store.read { try $0.object(Note.self, key: 1, asOf: version) }
    /// ```
    ///
    /// - Complexity: O(*c*) for the *c* changes after `version`.
    /// - Throws: ``LodeError/historyUnavailable(reason:)`` when the store keeps no history, the
    ///   history no longer reaches back to `version` (pruned, or begun again after a migration), or
    ///   `version` is after this transaction's; ``LodeError/recordDoesNotDecode(type:key:field:reason:)``
    ///   when the record as it was does not decode as a `T`.
    public func object<T: Persistable, Key: Encodable>(_ type: T.Type, key: Key, asOf version: Int) throws
        -> T?
    {
        let bytes = try KeyEncoder().encode(key)
        guard bytes.count <= IndexKeyLimit.maximum else { return nil }
        let state = try typeState(T.self)
        guard let past = try changedRecords(of: state.typeName, asOf: version, keys: [bytes])[bytes] else {
            return try object(T.self, keyBytes: bytes, state: state)
        }
        guard let record = past else { return nil }
        return try record.withUnsafeBytes { try decode(T.self, from: $0, key: bytes) }
    }
}
