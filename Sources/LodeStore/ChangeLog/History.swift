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
    public var before: HistoryFields
    /// The fields after the commit (every field of an inserted object; the changed ones of an updated
    /// one; none for a deletion).
    public var after: HistoryFields

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
        let fields: HistoryFields
        switch kind {
        case .insert: fields = after
        case .delete: fields = before
        case .update: return nil
        }
        return try fields.encoded.withUnsafeBytes { record in
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

/// The fields of one side of a ``HistoryChange``: each name with its value. Kept as the history
/// stores them (one encoded map) and read when asked, so a reader that looks at a few fields of many
/// changes pays for those only; compares, hashes and prints as the dictionary of its fields.
public struct HistoryFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    /// The fields as a CBOR map of text names (a record, for an insert's or a deletion's side).
    public let encoded: [UInt8]

    /// The fields of an encoded map whose keys were checked to be text.
    init(checked encoded: [UInt8]) { self.encoded = encoded }

    /// An insert's side not read yet (recorded by reference): no bytes, which no map has.
    static let unread = HistoryFields(checked: [])
    /// Whether this is ``unread``.
    var isUnread: Bool { encoded.isEmpty }

    /// The fields of `fields`, in name order.
    public init(_ fields: [String: CBORValue]) {
        encoded =
            CBORValue.map(
                fields.sorted { $0.key < $1.key }.map {
                    CBORValue.MapEntry(key: .text($0.key), value: $0.value)
                }
            ).encoded
    }

    /// The fields written as a dictionary literal.
    public init(dictionaryLiteral elements: (String, CBORValue)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { $1 }))
    }

    /// The value of field `name`, or nil when this side does not hold it.
    public subscript(name: String) -> CBORValue? {
        var found: CBORValue?
        let wanted = Array(name.utf8)
        visit { field, reader in
            guard wanted.withUnsafeBytes({ RecordDiff.same($0, field) }) else { return false }
            found = try? CBORValue.read(&reader, depth: 1)
            return true
        }
        return found
    }

    /// The names of the fields, in the order stored.
    public var keys: [String] { map(\.key) }
    /// How many fields there are.
    public var count: Int {
        encoded.withUnsafeBytes { bytes in
            var reader = CBORReader(bytes)
            return (try? reader.readHead()).map { Int($0.argument) } ?? 0
        }
    }
    /// Whether there is none.
    public var isEmpty: Bool { count == 0 }
    /// The fields as a dictionary.
    public var dictionary: [String: CBORValue] {
        Dictionary(map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }

    /// Each field's name and value, in the order stored.
    public func makeIterator() -> IndexingIterator<[(key: String, value: CBORValue)]> {
        var fields: [(key: String, value: CBORValue)] = []
        visit { name, reader in
            if let value = try? CBORValue.read(&reader, depth: 1) {
                fields.append((String(decoding: name, as: UTF8.self), value))
            }
            return false
        }
        return fields.makeIterator()
    }

    /// Whether both hold the same fields with the same values, in any order.
    public static func == (lhs: HistoryFields, rhs: HistoryFields) -> Bool {
        lhs.encoded == rhs.encoded || lhs.dictionary == rhs.dictionary
    }

    /// Hashes the fields in name order.
    public func hash(into hasher: inout Hasher) {
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            hasher.combine(name)
            hasher.combine(value.encoded)
        }
    }

    /// The fields as `[name: value]`.
    public var description: String { "\(dictionary)" }

    /// Calls `body` with each field's name and a reader at its value, until it returns true (a
    /// field it does not read is skipped).
    private func visit(_ body: (UnsafeRawBufferPointer, inout CBORReader) throws -> Bool) rethrows {
        try encoded.withUnsafeBytes { bytes in
            var reader = CBORReader(bytes)
            guard let head = try? reader.readHead(), head.major == 5 else { return }
            for _ in 0..<head.argument {
                guard let name = try? reader.readStringBytes(major: 3) else { return }
                let start = reader.offset
                if try body(name, &reader) { return }
                reader.offset = start
                guard (try? reader.skipItem()) != nil else { return }
            }
        }
    }

    /// Checks that `bytes` is a map of text names (each value a whole item) and keeps a copy.
    static func checking(_ bytes: UnsafeRawBufferPointer) -> HistoryFields? {
        var reader = CBORReader(bytes)
        guard let head = try? reader.readHead(), head.major == 5, head.info != 31 else { return nil }
        for _ in 0..<head.argument {
            guard (try? reader.readStringBytes(major: 3)) != nil, (try? reader.skipItem()) != nil else {
                return nil
            }
        }
        guard reader.offset == bytes.count else { return nil }
        return HistoryFields(checked: [UInt8](copying: bytes))
    }
}

/// The history's layout: its entries, in `@changes` beside the change log's (each version's history
/// entry right after its change-log entry, so a commit writes both to one page), and the `@meta`
/// values that govern it (see `docs/FORMAT.md`, "History entries").
package enum HistoryLayout {
    /// The database of the history's entries (the change log's).
    static let database = StoreLayout.changes
    /// The database stores of format 6 kept their history in before it moved to `@changes`.
    static let formerDatabase = StoreLayout.history
    /// The byte after the version that makes a key a history entry's (`h`).
    static let entryMark: UInt8 = 0x68
    /// `@meta` key: the retention (a CBOR map), present while the store keeps history.
    static let retentionKey = Array("history".utf8)
    /// `@meta` key: the first version whose history is complete (8 bytes, big-endian).
    static let floorKey = Array("history.floor".utf8)
    /// `@meta` key: what made the history start again at its floor (UTF-8 text: a migration), when
    /// that and not the retention did.
    static let breakKey = Array("history.break".utf8)
    /// Commits between prunes.
    static let pruneInterval = 64

    /// Moves the history of a store of format 6 (`@history`) into `@changes`, each entry under its
    /// version's history key, drops `@history` and sets the format to 7 — in one transaction, at a
    /// writer's open, so the history is never in two places for a writer.
    static func moveFormerEntries(in environment: LMDB.Environment, to changes: Database, meta: Database)
        throws
    {
        try environment.write { txn in
            let former = try txn.database(named: formerDatabase, kind: .plain, create: false)
            // Entries below the floor (before a migration) are never read: they stay behind.
            let floor = try txn.get(floorKey, in: meta).map { version(of: $0) } ?? 0
            for entry in try txn.allEntries(in: former)
            where entry.key.count == 8 && version(of: entry.key) >= floor {
                try txn.put(entry.value, forKey: entryKey(for: version(of: entry.key)), in: changes)
            }
            try txn.drop(former)
            try txn.put(
                try CBOREncoder().encode(StoreLayout.historyFormatVersion),
                forKey: Array(StoreLayout.formatVersionKey.utf8), in: meta)
        }
    }

    /// A version as `@meta` holds it (8 bytes, big-endian).
    static func key(for version: Int) -> [UInt8] { ChangeLogEntry.key(for: version) }

    /// The key of `version`'s entry: the version (8 bytes, big-endian) and ``entryMark``.
    package static func entryKey(for version: Int) -> [UInt8] {
        ChangeLogEntry.key(for: version) + [entryMark]
    }

    /// Whether `key` is a history entry's (the change log's are 8 bytes).
    static func isEntryKey(_ key: UnsafeRawBufferPointer) -> Bool { key.count == 9 && key[8] == entryMark }

    /// The version a key (an entry's, or a version in `@meta`) names: its first 8 bytes.
    static func version(of key: some Collection<UInt8>) -> Int { ChangeLogEntry.version(of: key.prefix(8)) }

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
}
