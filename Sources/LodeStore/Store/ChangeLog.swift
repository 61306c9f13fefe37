import Foundation
import LMDB
import LodeCodec

/// What one commit changed, as stored in `@changes` under the commit's transaction id (8 bytes,
/// big-endian). See `docs/FORMAT.md`.
package struct ChangeLogEntry: Codable, Equatable {
    package enum Operation: String, Codable {
        case insert
        case update
        case delete
        /// Every object of the type was deleted (`deleteAll`).
        case clear
        /// More objects of the type changed than the entry lists one by one (`count` says how many):
        /// a reader evaluates its queries of the type again.
        case bulk
    }

    struct Change: Codable, Equatable {
        /// The type's store name.
        var type: String
        /// The encoded primary key (empty for `clear`).
        var key: Data
        var op: Operation
        /// For updates: the top-level fields whose values changed (absent when unknown).
        var fields: [String]?
        /// For `bulk`: how many objects of the type changed.
        var count: Int?
    }

    /// When the commit happened.
    var time: Date
    var changes: [Change]

    static func key(for version: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(version).bigEndian) { Array($0) }
    }

    package static func version(of key: some Collection<UInt8>) -> Int {
        Int(key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The commit time of an encoded entry, read from its first field without decoding the rest (the
    /// writer puts `time` first); nil when the entry does not start that way.
    static func time(ofEncoded bytes: UnsafeRawBufferPointer) -> Date? {
        var reader = CBORReader(bytes)
        guard let map = try? reader.readHead(), map.major == 5,
            let name = try? reader.readStringBytes(major: 3), name.elementsEqual("time".utf8),
            let tag = try? reader.readHead(), tag.major == 6,
            let value = try? reader.readHead()
        else { return nil }
        let seconds: Double
        switch (value.major, value.info) {
        case (7, 27): seconds = Double(bitPattern: value.argument)
        case (7, 26): seconds = Double(Float(bitPattern: UInt32(value.argument)))
        case (0, _): seconds = Double(value.argument)
        default: return nil
        }
        switch tag.argument {
        case 1: return Date(timeIntervalSince1970: seconds)
        case CBORTags.referenceDate: return Date(timeIntervalSinceReferenceDate: seconds)
        default: return nil
        }
    }
}

/// The net changes of one write transaction, per type and primary key: an insert followed by an
/// update is an insert, an insert followed by a delete is nothing, and so on. Kept in the order the
/// objects were first touched.
package struct PendingChanges {
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

    package mutating func record(
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

    /// Adds what a savepoint recorded (on a fresh `PendingChanges`) after this transaction's own
    /// changes, as if each had been recorded here: the net effect of both, in order.
    mutating func merge(_ later: PendingChanges) {
        for net in later.nets {
            if net.cleared {
                recordClear(type: net.type)
            } else {
                record(
                    type: net.type, key: net.key, existedBefore: net.existedBefore,
                    existsAfter: net.existsAfter, fields: net.fields)
            }
        }
    }

    package mutating func recordClear(type: String) {
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

    /// What the entry lists: each object's net change, except that a type with more than
    /// `bulkThreshold` changed objects is one `bulk` change (with the count) where its first change was.
    private func listed(bulkThreshold: Int) -> [(net: Net, op: ChangeLogEntry.Operation, count: Int?)] {
        var counts: [String: Int] = [:]
        for net in nets where Self.operation(net) != nil && !net.cleared { counts[net.type, default: 0] += 1 }
        var listed: [(net: Net, op: ChangeLogEntry.Operation, count: Int?)] = []
        var bulkWritten = Set<String>()
        for net in nets {
            guard let op = Self.operation(net) else { continue }
            if op != .clear, let count = counts[net.type], count > bulkThreshold {
                if bulkWritten.insert(net.type).inserted {
                    listed.append(
                        (Net(type: net.type, key: [], existedBefore: true, existsAfter: true), .bulk, count))
                }
                continue
            }
            listed.append((net, op, nil))
        }
        return listed
    }

    /// The entry to store.
    func entry(bulkThreshold: Int = .max) -> ChangeLogEntry {
        ChangeLogEntry(
            time: Date(),
            changes: listed(bulkThreshold: bulkThreshold).map { net, op, count in
                let fields = op == .update ? net.fields.map { $0.sorted() } : nil
                return .init(type: net.type, key: Data(net.key), op: op, fields: fields, count: count)
            })
    }

    /// The entry's CBOR, written directly (a bulk write can log a million changes): the same bytes
    /// the `Codable` form of ``ChangeLogEntry`` has, `time` first so pruning reads only that.
    func encodedEntry(bulkThreshold: Int) -> [UInt8]? {
        let changes = listed(bulkThreshold: bulkThreshold)
        guard !changes.isEmpty else { return nil }
        var writer = CBORWriter(capacity: 64 + changes.count * 48)
        writer.head(5, 2)
        writer.text("time")
        writer.date(Date())
        writer.text("changes")
        writer.head(4, UInt64(changes.count))
        for (net, op, count) in changes {
            let fields = op == .update ? net.fields.map { $0.sorted() } : nil
            writer.head(5, fields == nil && count == nil ? 3 : 4)
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
            if let count {
                writer.text("count")
                writer.head(0, UInt64(count))
            }
        }
        return writer.bytes
    }
}

/// The changes to one type between two versions, read from the log.
package struct TypeChanges {
    /// Net operation per primary key across the versions.
    package var keys: [[UInt8]: ChangeLogEntry.Operation] = [:]
    /// For updated keys: the fields that changed, or nil when unknown.
    var fields: [[UInt8]: Set<String>] = [:]
    /// Updated keys whose changed fields are unknown.
    var unknownFields = Set<[UInt8]>()
    /// True when the log could not say what changed (it was pruned, or the type was cleared): the
    /// query must be evaluated again in full.
    package var needsFullEvaluation = false

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
                case .clear, .bulk:
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
    package func modifies(_ key: [UInt8], observing observed: Set<String>?) -> Bool {
        guard let observed else { return true }
        if unknownFields.contains(key) { return true }
        return !(fields[key] ?? []).isDisjoint(with: observed)
    }
}

/// Pruning keeps the log bounded: entries older than the horizon and older than every live result
/// of this process are deleted, and `@meta` records (under `changes.floor`, 8 bytes big-endian) the
/// oldest version whose changes the log no longer holds in full.
///
/// A prune costs what it removes: it walks the log from its start with one cursor, reads each
/// entry's version from its key and its time from the first bytes of its value (borrowed from the
/// map, never copied or decoded in full), and stops at the first entry it keeps.
enum ChangeLogPruning {
    static let floorKey = Array("changes.floor".utf8)
    /// A commit whose version is a multiple of this prunes the log.
    static let interval = 64

    static func floor(in lmdb: LMDB.Transaction, meta: Database) throws -> Int? {
        guard let bytes = try lmdb.get(floorKey, in: meta), bytes.count == 8 else { return nil }
        return ChangeLogEntry.version(of: bytes)
    }

    /// What one prune did.
    struct Outcome: Equatable {
        /// Entries whose version and time were read: the removed ones and the first one kept.
        var examined = 0
        /// Entries removed.
        var removed = 0
        /// Entries decoded in full because their time was not their first field.
        var decoded = 0
    }

    /// Removes the entries before version `limit` written before `cutoff`, and moves the floor.
    static func prune(
        _ txn: LMDB.WriteTransaction, log: Database, meta: Database, before limit: Int,
        writtenBefore cutoff: Date
    ) throws -> Outcome {
        var outcome = Outcome()
        var doomed: [[UInt8]] = []
        var floor: Int?
        try txn.withCursor(in: log) { cursor in
            // Each step says whether the entry goes; nil at the end of the log.
            func judge(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                guard key.count == 8 else { return true }  // not an entry: skip it, keep looking
                outcome.examined += 1
                let version = ChangeLogEntry.version(of: key)
                let time: Date
                if let read = ChangeLogEntry.time(ofEncoded: value) {
                    time = read
                } else {
                    outcome.decoded += 1
                    time = try CBORDecoder().decode(ChangeLogEntry.self, from: Array(value)).time
                }
                guard version < limit, time <= cutoff else { return false }
                doomed.append(Array(key))
                floor = version + 1
                return true
            }
            var going = try cursor.withFirst(judge)
            while going == true { going = try cursor.withNext(judge) }
        }
        for key in doomed { try txn.delete(key, in: log) }
        outcome.removed = doomed.count
        if let floor { try txn.put(ChangeLogEntry.key(for: floor), forKey: floorKey, in: meta) }
        return outcome
    }
}

extension Store {
    /// The changes to a type in versions `(from, next]`, read from the change log in `next`.
    package func changes(of typeName: String, from: Int, to next: ReadSnapshot) throws -> TypeChanges {
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
