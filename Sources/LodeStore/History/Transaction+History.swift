import Foundation
import LMDB
import LodeCodec

extension Transaction {
    /// The token after this transaction's version: the history read from it on holds the commits
    /// made after this transaction's snapshot.
    public var historyToken: HistoryToken { HistoryToken(version: version) }

    /// The commits after `token` up to this transaction's version, oldest first, each with every
    /// object it changed and the values before and after — commits of every process that wrote the
    /// store. From `nil`: every commit the history still holds.
    ///
    /// ```swift
    /// let changes = try store.read { try $0.history(since: savedToken) }
    /// for commit in changes { print(commit.version, commit.author ?? "", commit.changes.count) }
    /// ```
    ///
    /// - Complexity: O(*c*) for the *c* changes read.
    /// - Throws: ``LodeError/historyUnavailable(reason:)`` when the store keeps no history, or no
    ///   longer holds all of it after `token` (pruned by the retention, or begun again after a
    ///   migration): never a history with a gap. ``LodeError/recordDoesNotDecode(type:key:field:reason:)``
    ///   naming `@history` for an entry that does not read.
    public func history(since token: HistoryToken? = nil) throws -> [HistoryTransaction] {
        try history(since: token, limit: nil)
    }

    /// The first `limit` commits (all, when nil) of ``history(since:)``.
    package func history(since token: HistoryToken?, limit: Int?) throws -> [HistoryTransaction] {
        var found: [HistoryTransaction] = []
        try forEachHistoryEntry(since: token) { version, bytes in
            if let limit, found.count >= limit { return false }
            // Entries with no change are never written: every entry decodes to a commit.
            if let commit = try HistoryLayout.decode(bytes, version: version, keeping: { _ in true }) {
                found.append(commit)
            }
            return true
        }
        try readInsertedValues(&found)
        return found
    }

    /// The commits after `token` that changed objects of `T`, with only those changes; see
    /// ``history(since:)`` and ``HistoryChange/object(as:)``.
    public func history<T: Persistable>(of type: T.Type, since token: HistoryToken? = nil) throws
        -> [HistoryTransaction]
    {
        try history(of: T.schema.typeName, since: token)
    }

    /// The commits after `token` that changed objects of `type` (the type's store name), with only
    /// those changes; see ``history(since:)``.
    public func history(of type: String, since token: HistoryToken? = nil) throws -> [HistoryTransaction] {
        let name = Array(type.utf8)
        return try name.withUnsafeBytes { name in
            try history(since: token) { RecordDiff.same($0.type, name) }
        }
    }

    /// The commits after `token` with only the changes `keep` accepts (the others are skipped, not
    /// decoded), those with none left out.
    func history(since token: HistoryToken?, keeping keep: (StoredHistoryChange) -> Bool) throws
        -> [HistoryTransaction]
    {
        var found: [HistoryTransaction] = []
        try forEachHistoryEntry(since: token) { version, bytes in
            if let commit = try HistoryLayout.decode(bytes, version: version, keeping: keep) {
                found.append(commit)
            }
            return true
        }
        try readInsertedValues(&found)
        return found
    }

    /// Gives each insert of `found` recorded by reference (a commit that inserted many objects) its
    /// values: the object's record as of its commit.
    func readInsertedValues(_ found: inout [HistoryTransaction]) throws {
        var unread: [(commit: Int, change: Int)] = []
        for (position, commit) in found.enumerated() {
            for (index, change) in commit.changes.enumerated() where change.after.isUnread {
                unread.append((position, index))
            }
        }
        guard !unread.isEmpty else { return }
        let records = try insertedRecords(
            unread.map { (found[$0.commit].changes[$0.change].objectID, found[$0.commit].version) })
        for (place, record) in zip(unread, records) {
            guard let values = record.withUnsafeBytes({ HistoryFields.checking($0) }) else {
                throw LodeError.recordDoesNotDecode(
                    type: StoreLayout.history, key: "\(found[place.commit].version)",
                    field: found[place.commit].changes[place.change].type,
                    reason: "a record is not a map of fields")
            }
            found[place.commit].changes[place.change].after = values
        }
    }

    /// The records of objects inserted by reference, each as of the commit (`version`) that
    /// inserted it, in the order given (see ``pastRecords(_:)``).
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` naming `@history` when an
    ///   object did not exist as of its insert (the history does not follow the records), and as
    ///   ``pastRecords(_:)``.
    func insertedRecords(_ inserts: [(id: ObjectID, version: Int)]) throws -> [[UInt8]] {
        var wanted: [ObjectID: Set<Int>] = [:]
        for insert in inserts { wanted[insert.id, default: []].insert(insert.version) }
        let past = try pastRecords(wanted)
        return try inserts.map { insert in
            guard case .some(.some(let record)) = past[insert.id]?[insert.version] else {
                throw LodeError.recordDoesNotDecode(
                    type: StoreLayout.history, key: "\(insert.version)", field: insert.id.typeName,
                    reason:
                        "the object \(KeyDescription.describe(insert.id.primaryKey)) it inserted is not in the records as of then"
                )
            }
            return record
        }
    }

    /// The changes of the object of `type` under `key` (its encoded primary key) after `token`,
    /// oldest first, each with its commit's version, time and author; see ``history(since:)``.
    public func history(of type: String, key: [UInt8], since token: HistoryToken? = nil) throws
        -> [HistoryTransaction]
    {
        let name = Array(type.utf8)
        return try name.withUnsafeBytes { name in
            try key.withUnsafeBytes { key in
                try history(since: token) { RecordDiff.same($0.type, name) && RecordDiff.same($0.key, key) }
            }
        }
    }

    /// The changes of the `T` whose primary key is `key` after `token`, oldest first; see
    /// ``history(since:)``.
    ///
    /// - Throws: as ``history(since:)``, and `EncodingError` when `key` does not encode.
    public func history<T: Persistable, Key: Encodable>(
        of type: T.Type, key: Key, since token: HistoryToken? = nil
    ) throws -> [HistoryTransaction] {
        try history(of: T.schema.typeName, key: try KeyEncoder().encode(key), since: token)
    }

    /// Calls `body` with each history entry after `token` up to this transaction's version, in order.
    func forEachHistoryEntry(
        since token: HistoryToken?, _ body: (Int, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard try lmdb.get(HistoryLayout.retentionKey, in: store.meta) != nil else {
            throw LodeError.historyUnavailable(
                reason: "the store keeps no history (open it with StoreConfiguration.history set)")
        }
        let floor =
            try lmdb.get(HistoryLayout.floorKey, in: store.meta).map { HistoryLayout.version(of: $0) } ?? 0
        if let token, token.version + 1 < floor {
            let broken = try lmdb.get(HistoryLayout.breakKey, in: store.meta).map {
                String(decoding: $0, as: UTF8.self)
            }
            throw LodeError.historyUnavailable(
                reason:
                    "the history is complete from version \(floor) on, and the token is at version \(token.version)"
                    + (broken.map { ": \($0) rewrote records at version \(floor - 1)" }
                        ?? ": older commits were pruned (see StoreConfiguration.history)"))
        }
        guard let database = store.changeLog,
            try !lmdb.contains(Array(HistoryLayout.formerDatabase.utf8), in: lmdb.environment.mainDatabase)
        else {
            throw LodeError.historyUnavailable(
                reason:
                    "the store keeps its history as format 6 did (in @history): open it once for writing, which moves it"
            )
        }
        // From nil: where the history is complete (entries before a migration's break stay until
        // pruned, but they do not lead to the store as it is).
        let start = HistoryLayout.key(for: max((token?.version ?? 0) + 1, floor))
        try lmdb.withCursor(in: database) { cursor in
            func visit(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                // The change log's entries lie between.
                guard HistoryLayout.isEntryKey(key) else { return true }
                let version = HistoryLayout.version(of: key)
                guard version <= self.version else { return false }
                return try body(version, value)
            }
            guard try cursor.seek(atLeast: start) != nil else { return }
            var going = try cursor.withCurrent(visit)
            while going == true { going = try cursor.withNext(visit) }
        }
    }
}
