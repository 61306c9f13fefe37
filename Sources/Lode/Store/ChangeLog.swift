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
/// update is an insert, an insert followed by a delete is nothing, and so on. Kept in the order the
/// objects were first touched.
struct PendingChanges {
    private struct Net {
        var type: String
        var key: [UInt8]
        var existedBefore: Bool
        var existsAfter: Bool
        var fields: Set<String>?
        var cleared = false
    }

    /// A primary key hashed as one run of bytes (an array hashes element by element).
    private struct Slot: Hashable {
        var key: [UInt8]
        func hash(into hasher: inout Hasher) { key.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    private var nets: [Net] = []
    /// Per type touched (a transaction touches few), the position in `nets` of each key.
    private var types: [String] = []
    private var index: [[Slot: Int]] = []

    private mutating func typeIndex(_ type: String) -> Int {
        if let found = types.firstIndex(of: type) { return found }
        types.append(type)
        index.append([:])
        return types.count - 1
    }

    var isEmpty: Bool { nets.isEmpty }

    mutating func record(
        type: String, key: [UInt8], existedBefore: Bool, existsAfter: Bool, fields: Set<String>? = nil
    ) {
        let slot = Slot(key: key)
        let typeIndex = typeIndex(type)
        if let position = index[typeIndex][slot] {
            nets[position].existsAfter = existsAfter
            if let known = nets[position].fields, let fields {
                nets[position].fields = known.union(fields)
            } else {
                nets[position].fields = nil
            }
        } else {
            index[typeIndex][slot] = nets.count
            nets.append(
                Net(
                    type: type, key: key, existedBefore: existedBefore, existsAfter: existsAfter,
                    fields: fields))
        }
    }

    mutating func recordClear(type: String) {
        // Earlier changes to the type are covered by the clear; later ones follow it.
        for position in nets.indices where nets[position].type == type && !nets[position].cleared {
            nets[position].existedBefore = false
            nets[position].existsAfter = false
        }
        index[typeIndex(type)] = [:]
        nets.append(
            Net(type: type, key: [], existedBefore: true, existsAfter: false, fields: nil, cleared: true))
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

    /// The entry to store.
    func entry() -> ChangeLogEntry {
        ChangeLogEntry(
            time: Date(),
            changes: nets.compactMap { net in
                guard let op = Self.operation(net) else { return nil }
                let fields = op == .update ? net.fields.map { $0.sorted() } : nil
                return .init(type: net.type, key: Data(net.key), op: op, fields: fields)
            })
    }

    /// The entry's CBOR, written directly (a bulk write can log a million changes): the same bytes
    /// the `Codable` form of ``ChangeLogEntry`` has.
    func encodedEntry() -> [UInt8]? {
        var writer = CBORWriter(capacity: 64 + nets.count * 48)
        let changes = nets.filter { Self.operation($0) != nil }
        guard !changes.isEmpty else { return nil }
        writer.head(5, 2)
        writer.text("time")
        writer.date(Date())
        writer.text("changes")
        writer.head(4, UInt64(changes.count))
        for net in changes {
            let op = Self.operation(net)!
            let fields = op == .update ? net.fields.map { $0.sorted() } : nil
            writer.head(5, fields == nil ? 3 : 4)
            writer.text("type")
            writer.text(net.type)
            writer.text("key")
            net.key.withUnsafeBytes { writer.byteString($0) }
            writer.text("op")
            writer.text(op.rawValue)
            if let fields {
                writer.text("fields")
                writer.head(4, UInt64(fields.count))
                for field in fields { writer.text(field) }
            }
        }
        return writer.bytes
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
    /// A commit whose version is a multiple of this prunes the log.
    static let interval = 64

    static func floor(in lmdb: LMDB.Transaction, meta: Database) throws -> Int? {
        guard let bytes = try lmdb.get(floorKey, in: meta), bytes.count == 8 else { return nil }
        return ChangeLogEntry.version(of: bytes)
    }
}

extension Store {
    /// The changes to a type in versions `(from, next]`, read from the change log in `next`.
    func changes(of typeName: String, from: Int, to next: ReadSnapshot) throws -> TypeChanges {
        try mapStorageErrors {
            try next.read { txn in
                guard let log = changeLog else {
                    var unknown = TypeChanges()
                    unknown.needsFullEvaluation = true
                    return unknown
                }
                return try TypeChanges.read(
                    typeName, from: from, to: next.transactionID, in: txn, log: log, meta: meta)
            }
        }
    }
}
