import Foundation
import LMDB
import LodeCodec

/// One object's net change over the commits an undo reverts, from the history: its state before the
/// first of them and after the last.
struct NetObjectChange {
    /// A side of the change.
    enum Side {
        /// No object.
        case absent
        /// Every field, in record order.
        case whole([CBORValue.MapEntry])
        /// Only some fields are known: each changed field's value (nil: the field was absent); the
        /// others are as they are now.
        case fields([String: CBORValue?])
    }

    var type: String
    var key: [UInt8]
    var start: Side
    var end: Side

    /// One change as the history holds it, its sides' fields in record order.
    struct Recorded {
        var version: Int
        var type: String
        var key: [UInt8]
        var kind: HistoryChange.Kind
        var before: [CBORValue.MapEntry]
        var after: [CBORValue.MapEntry]
    }

    /// The net changes of `changes` (in commit order), each object once, in the order first changed.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history` when the
    ///   changes do not follow each other (an update of an object that was not there).
    static func compose(_ changes: [Recorded]) throws -> [NetObjectChange] {
        var order: [ObjectID] = []
        var nets: [ObjectID: NetObjectChange] = [:]
        for change in changes {
            let id = ObjectID(typeName: change.type, primaryKey: change.key)
            let touched = Set(change.before.compactMap(name)).union(change.after.compactMap(name))
            func values(_ side: [CBORValue.MapEntry]) -> [String: CBORValue?] {
                Dictionary(uniqueKeysWithValues: touched.map { ($0, value($0, in: side)) })
            }
            guard var net = nets[id] else {
                order.append(id)
                var net = NetObjectChange(type: change.type, key: change.key, start: .absent, end: .absent)
                switch change.kind {
                case .insert: net.end = .whole(change.after)
                case .delete: net.start = .whole(change.before)
                case .update:
                    net.start = .fields(values(change.before))
                    net.end = .fields(values(change.after))
                }
                nets[id] = net
                continue
            }
            switch change.kind {
            case .insert:
                net.end = .whole(change.after)
            case .delete:
                if case .fields(let known) = net.start {
                    // The fields changed earlier had their values then; the others the ones deleted.
                    net.start = .whole(patch(change.before, with: known))
                }
                net.end = .absent
            case .update:
                if case .fields(var known) = net.start {
                    for field in touched where known[field] == nil {
                        known[field] = .some(value(field, in: change.before))
                    }
                    net.start = .fields(known)
                }
                switch net.end {
                case .whole(let record): net.end = .whole(patch(record, with: values(change.after)))
                case .fields(var known):
                    for field in touched { known[field] = .some(value(field, in: change.after)) }
                    net.end = .fields(known)
                case .absent:
                    throw LodeError.recordDoesNotDecode(
                        type: StoreLayout.history, key: "\(change.version)", field: change.type,
                        reason: "an update of \(KeyDescription.describe(change.key)), which was deleted")
                }
            }
            nets[id] = net
        }
        return order.map { nets[$0]! }
    }

    /// `record` with each of `fields` set to its value (nil: removed); fields it lacks come last.
    static func patch(_ record: [CBORValue.MapEntry], with fields: [String: CBORValue?]) -> [CBORValue
        .MapEntry]
    {
        var patched: [CBORValue.MapEntry] = []
        var placed = Set<String>()
        for entry in record {
            guard case .text(let name) = entry.key, let replacement = fields[name] else {
                patched.append(entry)
                continue
            }
            placed.insert(name)
            if let replacement { patched.append(CBORValue.MapEntry(key: entry.key, value: replacement)) }
        }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) where !placed.contains(name) {
            if let value { patched.append(CBORValue.MapEntry(key: .text(name), value: value)) }
        }
        return patched
    }

    /// The name of a record's field (nil for a key that is not text).
    static func name(_ entry: CBORValue.MapEntry) -> String? {
        if case .text(let name) = entry.key { return name }
        return nil
    }

    /// The value of field `name` in `record`.
    static func value(_ name: String, in record: [CBORValue.MapEntry]) -> CBORValue? {
        record.first { $0.key == .text(name) }?.value
    }
}

extension WriteTransaction {
    /// The fields of a side of a change (none when absent), in record order.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history` when the
    ///   side is not a map.
    private static func fields(_ side: [UInt8]?, version: Int) throws -> [CBORValue.MapEntry] {
        guard let side else { return [] }
        guard case .map(let entries) = try? CBORValue(decoding: side) else {
            throw LodeError.recordDoesNotDecode(
                type: StoreLayout.history, key: "\(version)", field: "",
                reason: "a side of a change is not a map")
        }
        return entries
    }

    /// Writes the inverse of the commits that made `versions`: every object they changed is put back
    /// as it was before the first of them — records, index, link and full-text entries — and
    /// returns what was skipped. Deletions the reverted commits made are undone by writing the
    /// objects again; objects they made are removed, and the delete rules of links into those from
    /// objects the undo does not touch apply as to any deletion.
    ///
    /// - Throws: ``LodeError/undoConflict(action:conflicts:)`` under ``UndoConflictPolicy/refuse`` when
    ///   an object changed since (nothing written); ``LodeError/historyUnavailable(reason:)`` when the
    ///   history no longer holds those commits; ``LodeError/deleteDenied(type:key:linkedFrom:)`` when
    ///   another object still links to one the undo removes through a link whose rule is deny.
    func revert(versions: [Int], action: String, policy: UndoConflictPolicy) throws -> [UndoConflict] {
        guard let history = try historyDatabase() else {
            throw LodeError.historyUnavailable(
                reason: "the store keeps no history (open it with StoreConfiguration.history set)")
        }
        let floor =
            try lmdb.get(HistoryLayout.floorKey, in: store.meta).map { HistoryLayout.version(of: $0) } ?? 0
        var recorded: [NetObjectChange.Recorded] = []
        // Inserts recorded by reference: their values are read from the records after.
        var unread: [Int] = []
        for version in versions.sorted() {
            guard version >= floor else {
                throw LodeError.historyUnavailable(
                    reason:
                        "\(action) reverts version \(version), and the history is complete from version \(floor) on"
                )
            }
            guard let bytes = try lmdb.get(HistoryLayout.entryKey(for: version), in: history) else {
                continue
            }
            try bytes.withUnsafeBytes { entry in
                try HistoryLayout.walkChanges(entry, version: version) { change in
                    if change.kind == .insert && change.after == nil { unread.append(recorded.count) }
                    recorded.append(
                        NetObjectChange.Recorded(
                            version: version, type: String(decoding: change.type, as: UTF8.self),
                            key: Array(change.key), kind: change.kind,
                            before: try Self.fields(change.before.map(Array.init), version: version),
                            after: try Self.fields(change.after.map(Array.init), version: version)))
                }
            }
        }
        let inserted = try insertedRecords(
            unread.map {
                (ObjectID(typeName: recorded[$0].type, primaryKey: recorded[$0].key), recorded[$0].version)
            })
        for (position, record) in zip(unread, inserted) {
            recorded[position].after = try Self.fields(record, version: recorded[position].version)
        }
        var conflicts: [UndoConflict] = []
        // What each object becomes: a record, or nil to remove it.
        var writes: [(type: String, key: [UInt8], record: [CBORValue.MapEntry]?)] = []
        var records: [String: Database] = [:]
        for net in try NetObjectChange.compose(recorded) {
            if records[net.type] == nil {
                records[net.type] = try lmdbWrite.database(named: net.type, create: false)
            }
            let current: [CBORValue.MapEntry]?
            if let bytes = try lmdb.get(net.key, in: records[net.type]!) {
                guard case .map(let entries) = try CBORValue(decoding: bytes) else {
                    throw LodeError.recordDoesNotDecode(
                        type: net.type, key: KeyDescription.describe(net.key), field: "", reason: "not a map")
                }
                current = entries
            } else {
                current = nil
            }
            let id = ObjectID(typeName: net.type, primaryKey: net.key)
            // Is the object as the reverted commits left it?
            var changed: [String] = []
            var conflict: String?
            switch (net.end, current) {
            case (.absent, nil):
                break
            case (.absent, .some):
                conflict = "made again since"
            case (_, nil):
                conflict = "deleted since"
            case (.whole(let expected), .some(let now)):
                let names = Set(expected.compactMap(NetObjectChange.name)).union(
                    now.compactMap(NetObjectChange.name))
                changed = names.filter {
                    NetObjectChange.value($0, in: expected) != NetObjectChange.value($0, in: now)
                }.sorted()
            case (.fields(let expected), .some(let now)):
                changed = expected.filter { NetObjectChange.value($0.key, in: now) != $0.value }.map(\.key)
                    .sorted()
            }
            if conflict == nil, !changed.isEmpty {
                conflict = "\(changed.joined(separator: ", ")) changed since"
            }
            if let conflict {
                conflicts.append(UndoConflict(object: id, fields: changed, change: conflict))
            }
            switch net.start {
            case .absent:
                guard conflict == nil else { continue }
                if current != nil { writes.append((net.type, net.key, nil)) }
            case .whole(let record):
                guard conflict == nil else { continue }
                writes.append((net.type, net.key, record))
            case .fields(var fields):
                // Of an update, the fields nobody changed since are put back.
                guard let current else { continue }
                for name in changed { fields[name] = nil }
                guard !fields.isEmpty else { continue }
                writes.append((net.type, net.key, NetObjectChange.patch(current, with: fields)))
            }
        }
        if policy == .refuse, !conflicts.isEmpty {
            throw LodeError.undoConflict(action: action, conflicts: conflicts)
        }
        // Removals first (a record put back may take a unique value one of them holds), then the
        // records put back, then the delete rules of links into the removed objects from the objects
        // that stay.
        var removed: [ObjectRef] = []
        for write in writes where write.record == nil {
            try writeReverted(type: write.type, key: write.key, record: nil)
            removed.append(ObjectRef(type: write.type, key: write.key))
        }
        for write in writes where write.record != nil {
            try writeReverted(type: write.type, key: write.key, record: CBORValue.map(write.record!).encoded)
        }
        if !removed.isEmpty {
            let graph = try inboundLinks()
            let plan = try planDeletion(of: removed, graph: graph)
            let roots = Set(removed)
            try apply(plan, skipping: { roots.contains($0) })
        }
        return conflicts
    }

    /// Writes `record` as the object of `type` under `key` (nil: removes it, without delete rules),
    /// with its index, link and full-text entries: through its Swift type when this process used it,
    /// otherwise from the catalog's description of the type.
    private func writeReverted(type: String, key: [UInt8], record: [UInt8]?) throws {
        if let swiftType = store.swiftType(named: type) {
            func write<T: Persistable>(_: T.Type) throws {
                let state = try typeState(T.self)
                guard let records = state.records else { throw LodeError.typeNotFound(type) }
                guard let record else {
                    if let stored = try lmdb.get(key, in: records) {
                        try removeObject(T.self, key: key, record: stored, state: state)
                    }
                    return
                }
                // Written by the type's encoder, as the app wrote it (a record put back field by field
                // would have its fields in another order).
                let object = try record.withUnsafeBytes { try decode(T.self, from: $0, key: key) }
                try withStoredVersion(T.self, keyBytes: key, state: state) { old in
                    try store(object, key: key, replacing: old, state: state)
                }
            }
            try write(swiftType)
            return
        }
        try writeUntyped(ObjectRef(type: type, key: key), record: record)
    }
}
