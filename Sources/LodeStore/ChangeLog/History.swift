import Foundation
import LMDB
import LodeCodec

/// How much of a store's history (``StoreConfiguration/history``) is kept: the commits after the
/// newest `versions`, younger than `age` and within `bytes` of history are kept; a limit left nil does
/// not apply. The oldest entries are pruned past any limit, as commits are made.
public struct HistoryRetention: Sendable, Equatable, Codable {
    /// At most this many commits back (nil: no limit by count).
    public var versions: Int?
    /// At most this old, in seconds (nil: no limit by age).
    public var seconds: Int?
    /// At most about this many bytes of history, as the history's pages count them (nil: no limit
    /// by size).
    public var bytes: Int?

    /// Keeps what every limit given allows (a limit left nil does not apply).
    public static func keep(versions: Int? = nil, age: Duration? = nil, bytes: Int? = nil) -> HistoryRetention
    {
        HistoryRetention(versions: versions, seconds: age.map { Int($0.components.seconds) }, bytes: bytes)
    }

    /// Keeps every commit's history.
    public static let forever = HistoryRetention(versions: nil, seconds: nil, bytes: nil)

    /// The retention whose limits are the ones given.
    public init(versions: Int?, seconds: Int?, bytes: Int?) {
        self.versions = versions
        self.seconds = seconds
        self.bytes = bytes
    }
}

/// A point in a store's history: the commits after it are the ones `history(since:)` returns. Store
/// it (it is `Codable`) to catch up from where a reader left; tokens compare in commit order.
public struct HistoryToken: Sendable, Hashable, Comparable, Codable {
    /// The version (commit) the token stands after.
    public var version: Int

    /// The token after the commit that made `version`.
    public init(version: Int) { self.version = version }

    /// Whether `lhs` is earlier than `rhs`.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.version < rhs.version }
}

/// One commit as the history records it: its version, time and author, and each object it changed
/// with the values before and after.
public struct HistoryTransaction: Sendable, Equatable {
    /// The version the commit made.
    public var version: Int
    /// When it was made.
    public var time: Date
    /// What the writer set as ``WriteTransaction/author`` (nil when it set nothing).
    public var author: String?
    /// Each object's net change, in the order first touched (a type emptied lists a deletion of each
    /// of its objects).
    public var changes: [HistoryChange]

    /// The token after this commit (to read the history from it on).
    public var token: HistoryToken { HistoryToken(version: version) }
}

/// What one commit did to one object, with the values.
public struct HistoryChange: Sendable, Equatable {
    /// Inserted, updated or deleted.
    public enum Kind: String, Sendable, Equatable {
        /// The object was inserted: ``after`` holds every field.
        case insert
        /// The object was updated: ``before`` and ``after`` hold the fields whose values changed (a
        /// field only in ``before`` was removed, one only in ``after`` added).
        case update
        /// The object was deleted: ``before`` holds every field.
        case delete
    }

    /// The type's store name.
    public var type: String
    /// The object's encoded primary key.
    public var key: [UInt8]
    /// What happened.
    public var kind: Kind
    /// The fields before the commit (every field of a deleted object; the changed ones of an updated
    /// one; none for an insert).
    public var before: [String: CBORValue]
    /// The fields after the commit (every field of an inserted object; the changed ones of an updated
    /// one; none for a deletion).
    public var after: [String: CBORValue]

    /// The primary key as text, for display.
    public var keyDescription: String { KeyDescription.describe(key) }

    /// The object changed.
    public var objectID: ObjectID { ObjectID(typeName: type, primaryKey: key) }

    /// The names of the fields the change set or removed: every field of an inserted or deleted
    /// object, the changed ones of an update.
    public var fields: Set<String> { Set(before.keys).union(after.keys) }

    /// The object as a `T`: an insert's values, or a deletion's last values (nil for an update,
    /// which holds only the fields that changed — read those with ``value(of:as:before:)``).
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` when the change is not of `T`'s type, and
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` when the values do not decode as a
    ///   `T` (written by another version of the app).
    public func object<T: Persistable>(as type: T.Type) throws -> T? {
        guard self.type == T.schema.typeName else {
            throw LodeError.typeNotFound("\(self.type) (asked for as \(T.schema.typeName))")
        }
        let fields: [String: CBORValue]
        switch kind {
        case .insert: fields = after
        case .delete: fields = before
        case .update: return nil
        }
        let record = CBORValue.map(
            fields.sorted { $0.key < $1.key }.map { CBORValue.MapEntry(key: .text($0.key), value: $0.value) }
        ).encoded
        return try record.withUnsafeBytes { record in
            try key.withUnsafeBytes { try ObjectReader<T>().read(record, key: $0) }
        }
    }

    /// The value of `field` after the change (or, with `before`, before it) as a `V`; nil when that
    /// side does not hold the field (it was absent, or did not change).
    ///
    /// - Throws: `DecodingError` when the value is not a `V`.
    public func value<V: Decodable>(of field: String, as type: V.Type, before: Bool = false) throws -> V? {
        guard let value = (before ? self.before : after)[field] else { return nil }
        return try CBORDecoder().decode(V.self, from: value.encoded)
    }
}

/// The history's layout: `@history` entries by version and the `@meta` values that govern it (see
/// `docs/FORMAT.md`, "History").
package enum HistoryLayout {
    /// The database of the history's entries.
    static let database = StoreLayout.history
    /// `@meta` key: the retention (a CBOR map), present while the store keeps history.
    static let retentionKey = Array("history".utf8)
    /// `@meta` key: the first version whose history is complete (8 bytes, big-endian).
    static let floorKey = Array("history.floor".utf8)
    /// `@meta` key: what made the history start again at its floor (UTF-8 text: a migration), when
    /// that and not the retention did.
    static let breakKey = Array("history.break".utf8)
    /// Commits between prunes.
    static let pruneInterval = 64

    /// The key of `version`'s entry.
    static func key(for version: Int) -> [UInt8] { ChangeLogEntry.key(for: version) }

    /// The version a key names.
    static func version(of key: some Collection<UInt8>) -> Int { ChangeLogEntry.version(of: key) }

    /// The top-level fields of a record whose encoded values differ between `before` and `after`
    /// (either may be absent), each with its encoded value on each side, in the order of `after` then
    /// the removed ones; nil when a record is not a definite-length map of text keys.
    static func changedFields(before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer)
        -> [(name: UnsafeRawBufferPointer, before: UnsafeRawBufferPointer?, after: UnsafeRawBufferPointer?)]?
    {
        guard let old = RecordDiff.fields(before), let new = RecordDiff.fields(after) else { return nil }
        let same = RecordDiff.same
        var changed:
            [(name: UnsafeRawBufferPointer, before: UnsafeRawBufferPointer?, after: UnsafeRawBufferPointer?)] =
                []
        for field in new {
            let previous = old.first { same($0.name, field.name) }
            if let previous, same(previous.value, field.value) { continue }
            changed.append((field.name, previous?.value, field.value))
        }
        for field in old where !new.contains(where: { same($0.name, field.name) }) {
            changed.append((field.name, field.value, nil))
        }
        return changed
    }

    /// Decodes an entry stored under `version`.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history`.
    static func decode(_ bytes: [UInt8], version: Int) throws -> HistoryTransaction {
        func damaged(_ reason: String) -> LodeError {
            .recordDoesNotDecode(type: database, key: "\(version)", field: "", reason: reason)
        }
        let value: CBORValue
        do {
            value = try CBORValue(decoding: bytes)
        } catch {
            throw damaged("\(error)")
        }
        guard case .map(let entries) = value else { throw damaged("not a map") }
        func field(_ name: String, in entries: [CBORValue.MapEntry]) -> CBORValue? {
            entries.first { $0.key == .text(name) }?.value
        }
        let time: Date
        switch field("time", in: entries) {
        case .tagged(1, .float(let seconds))?: time = Date(timeIntervalSince1970: seconds)
        case .tagged(CBORTags.referenceDate, .float(let seconds))?:
            time = Date(timeIntervalSinceReferenceDate: seconds)
        default: throw damaged("no time")
        }
        var author: String?
        if case .text(let text)? = field("author", in: entries) { author = text }
        guard case .array(let list)? = field("changes", in: entries) else { throw damaged("no changes") }
        var changes: [HistoryChange] = []
        changes.reserveCapacity(list.count)
        for item in list {
            guard case .map(let change) = item, case .text(let type)? = field("type", in: change),
                case .bytes(let key)? = field("key", in: change),
                case .text(let op)? = field("op", in: change),
                let kind = HistoryChange.Kind(rawValue: op)
            else { throw damaged("a change is not a type, a key and an operation") }
            func values(_ name: String) throws -> [String: CBORValue] {
                guard let value = field(name, in: change) else { return [:] }
                guard case .map(let fields) = value else { throw damaged("\(name) of a change is not a map") }
                var result: [String: CBORValue] = [:]
                for field in fields {
                    guard case .text(let name) = field.key else { throw damaged("a field name is not text") }
                    result[name] = field.value
                }
                return result
            }
            changes.append(
                HistoryChange(
                    type: type, key: key, kind: kind, before: try values("before"), after: try values("after")
                ))
        }
        return HistoryTransaction(
            version: version, time: time, author: author, changes: changes)
    }
}
