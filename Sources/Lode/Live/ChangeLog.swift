import Foundation
import LMDB

/// What one commit changed, as stored in `@changes` under the commit's transaction id (8 bytes,
/// big-endian). See `docs/FORMAT.md`.
struct ChangeLogEntry: Codable, Equatable {
    enum Operation: String, Codable {
        case insert
        case update
        case delete
        /// Every object of the type was deleted (`deleteAll`).
        case clear
    }

    struct Change: Codable, Equatable {
        /// The type's store name.
        var type: String
        /// The encoded primary key (empty for `clear`).
        var key: Data
        var op: Operation
        /// For updates: the top-level fields whose values changed (absent when unknown).
        var fields: [String]?
    }

    /// When the commit happened.
    var time: Date
    var changes: [Change]

    static func key(for version: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(version).bigEndian) { Array($0) }
    }

    static func version(of key: [UInt8]) -> Int { Int(key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
}

/// The net changes of one write transaction, per type and primary key: an insert followed by an
/// update is an insert, an insert followed by a delete is nothing, and so on.
struct PendingChanges {
    private struct Net {
        var existedBefore: Bool
        var existsAfter: Bool
        var order: Int
        var fields: Set<String>?
    }

    private var byType: [String: [[UInt8]: Net]] = [:]
    private var cleared: [String: Int] = [:]
    private var counter = 0

    var isEmpty: Bool { byType.isEmpty && cleared.isEmpty }

    mutating func record(
        type: String, key: [UInt8], existedBefore: Bool, existsAfter: Bool, fields: Set<String>? = nil
    ) {
        counter += 1
        if var net = byType[type]?[key] {
            net.existsAfter = existsAfter
            if let known = net.fields, let fields {
                net.fields = known.union(fields)
            } else {
                net.fields = nil
            }
            byType[type]![key] = net
        } else {
            byType[type, default: [:]][key] = Net(
                existedBefore: existedBefore, existsAfter: existsAfter, order: counter, fields: fields)
        }
    }

    mutating func recordClear(type: String) {
        counter += 1
        byType[type] = nil
        cleared[type] = counter
    }

    /// The entry to store, in the order the changes were first made.
    func entry() -> ChangeLogEntry {
        var changes: [(Int, ChangeLogEntry.Change)] = []
        for (type, order) in cleared {
            changes.append((order, .init(type: type, key: Data(), op: .clear, fields: nil)))
        }
        for (type, keys) in byType {
            for (key, net) in keys {
                let op: ChangeLogEntry.Operation
                switch (net.existedBefore, net.existsAfter) {
                case (false, true): op = .insert
                case (true, true): op = .update
                case (true, false): op = .delete
                case (false, false): continue
                }
                let fields = op == .update ? net.fields.map { $0.sorted() } : nil
                changes.append((net.order, .init(type: type, key: Data(key), op: op, fields: fields)))
            }
        }
        return ChangeLogEntry(time: Date(), changes: changes.sorted { $0.0 < $1.0 }.map(\.1))
    }
}

/// The changes to one type between two versions, read from the log.
struct TypeChanges {
    /// Net operation per primary key across the versions.
    var keys: [[UInt8]: ChangeLogEntry.Operation] = [:]
    /// For updated keys: the fields that changed, or nil when unknown.
    var fields: [[UInt8]: Set<String>] = [:]
    /// Updated keys whose changed fields are unknown.
    var unknownFields = Set<[UInt8]>()
    /// True when the log could not say what changed (it was pruned, or the type was cleared): the
    /// query must be evaluated again in full.
    var needsFullEvaluation = false

    /// Reads the changes to `typeName` in versions `(from, to]`.
    static func read(
        _ typeName: String, from: Int, to: Int, in lmdb: LMDB.Transaction, log: Database, meta: Database
    ) throws -> TypeChanges {
        var result = TypeChanges()
        guard to > from else { return result }
        if let floor = try ChangeLogPruning.floor(in: lmdb, meta: meta), floor > from + 1 {
            result.needsFullEvaluation = true
            return result
        }
        let decoder = CBORDecoder()
        for entry in try lmdb.entries(in: log, from: ChangeLogEntry.key(for: from + 1))
        where entry.key.count == 8 {
            let version = ChangeLogEntry.version(of: entry.key)
            if version > to { break }
            let logged = try decoder.decode(ChangeLogEntry.self, from: entry.value)
            for change in logged.changes where change.type == typeName {
                switch change.op {
                case .clear:
                    result.needsFullEvaluation = true
                case .insert, .update, .delete:
                    let key = [UInt8](change.key)
                    if change.op == .update {
                        if let changed = change.fields {
                            result.fields[key, default: []].formUnion(changed)
                        } else {
                            result.unknownFields.insert(key)
                        }
                    }
                    if let previous = result.keys[key] {
                        // Combine: insert+delete = gone (but it may have been in the result before
                        // only if it existed: an insert means it did not), delete+insert = update.
                        switch (previous, change.op) {
                        case (.insert, .delete): result.keys[key] = .delete
                        case (.delete, .insert): result.keys[key] = .update
                        case (.insert, _): result.keys[key] = .insert
                        default: result.keys[key] = change.op
                        }
                    } else {
                        result.keys[key] = change.op
                    }
                }
            }
        }
        return result
    }

    /// True when the update of `key` may have changed one of `observed` (nil: any field counts).
    func modifies(_ key: [UInt8], observing observed: Set<String>?) -> Bool {
        guard let observed else { return true }
        if unknownFields.contains(key) { return true }
        return !(fields[key] ?? []).isDisjoint(with: observed)
    }
}

/// Pruning keeps the log bounded: entries older than the horizon and older than every live observer
/// of this process are deleted, and `@meta` records (under `changes.floor`, 8 bytes big-endian) the
/// oldest version whose changes the log no longer holds in full.
enum ChangeLogPruning {
    static let floorKey = Array("changes.floor".utf8)

    static func floor(in lmdb: LMDB.Transaction, meta: Database) throws -> Int? {
        guard let bytes = try lmdb.get(floorKey, in: meta), bytes.count == 8 else { return nil }
        return ChangeLogEntry.version(of: bytes)
    }
}
