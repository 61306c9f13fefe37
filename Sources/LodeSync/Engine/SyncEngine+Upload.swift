import Foundation
import LMDB
import LodeStore

/// Uploading: the change log after the upload cursor names the objects that may have changed; those
/// whose record differs from their shadow are dirty and go to the server in one batch, read at one
/// version, applied in one PostgreSQL transaction and recorded as done in one local write.
extension SyncEngine {
    /// What the server said about a batch.
    enum Outcome {
        /// Applied (now or before) at this server version: the one every row of the batch's
        /// transaction got.
        case applied(Int64)
        /// An object of a type with a merge function changed on the server since the batch was read:
        /// nothing was applied.
        case conflict
        /// A new batch whose number the server has seen already: the store's sync state is older
        /// than the server's record of this client (the store was restored from a backup). Nothing was
        /// applied; the batch is numbered after `last` and sent again.
        case renumber(last: Int64)
    }

    /// Sends the batch a crash or a lost answer left in flight, if any, and records the answer.
    func resendInflight(on connection: PostgresConnection) throws {
        guard let batch = try store.read({ try state.inflight(in: $0.lmdb) }) else { return }
        try finish(batch, outcome: try send(batch, resending: true, on: connection), on: connection)
    }

    /// Uploads one batch of dirty objects; false when there was nothing to upload.
    func upload(on connection: PostgresConnection) throws -> Bool {
        guard let batch = try makeBatch() else { return false }
        try finish(batch, outcome: try send(batch, resending: false, on: connection), on: connection)
        return true
    }

    /// The dirty objects at one version: the first `limit` as batch entries, and how many objects wait
    /// in all — what ``SyncStatus/pendingUploads`` says.
    struct Outbox {
        var entries: [UploadBatch.Entry]
        /// False when dirty objects were left out of `entries`.
        var complete: Bool
        /// True when the change log after the upload cursor held commits to look at.
        var looked: Bool
        var version: Int
        var dirty: Int
    }

    /// Reads the dirty objects at one version into a batch and keeps it in `@sync` as the batch in
    /// flight; nil when nothing is dirty (the upload cursor then moves past the changes looked at).
    private func makeBatch() throws -> UploadBatch? {
        let found = try store.read { try outbox(in: $0, limit: options.uploadBatchSize) }
        board.update { $0.pendingUploads = found.dirty }
        guard !found.entries.isEmpty else {
            if found.looked {
                try store.write { tx in try state.setUploadCursor(found.version, in: tx) }
            }
            return nil
        }
        return try store.write { tx in
            let number = (try state.integer(SyncState.nextBatchKey, in: tx.lmdb) ?? 0) + 1
            try state.setInteger(number, SyncState.nextBatchKey, in: tx)
            let batch = UploadBatch(
                number: number, snapshot: found.version, complete: found.complete, entries: found.entries,
                fields: types.map { $0.operations.uploadedFieldNames })
            try state.setInflight(batch, in: tx)
            return batch
        }
    }

    /// Counts the objects waiting to go up from the store alone, for the status while the server
    /// cannot be reached (a count taken in the last round would stay what it was).
    func countPendingUploads() {
        do {
            let names = types.map(\.name)
            let dirty = try store.read { try PendingUploads.count(in: $0, state: state, types: names) }
            board.update { $0.pendingUploads = dirty }
        } catch {
            board.update { $0.lastError = .store("counting the objects to upload: \(error)") }
        }
    }

    /// Where a batch that could not hold every dirty object ended: at local version `snapshot`, every
    /// candidate up to the object `key` of the type at `type` was uploaded or clean. The next batch
    /// passes over those that have not changed since (so the batches of a large backlog do not each
    /// read again the objects the ones before uploaded).
    struct UploadProgress {
        var snapshot: Int
        var type: Int
        var key: [UInt8]

        /// Whether the object `key` of the type at `type` comes at or before this position.
        func covers(type: Int, key: [UInt8]) -> Bool {
            type < self.type || (type == self.type && !self.key.lexicographicallyPrecedes(key))
        }
    }

    /// The outbox at `tx`'s version: the objects the change log after the upload cursor names (every
    /// object when there is no cursor or the log was pruned past it) whose record differs from what
    /// the server was last given.
    func outbox(in tx: LodeStore.Transaction, limit: Int) throws -> Outbox {
        let cursor = try state.uploadCursor(in: tx.lmdb)
        var candidates = [Set<[UInt8]>](repeating: [], count: types.count)
        var scanAll = Set<Int>()
        var looked = false
        if let cursor {
            let history = try tx.commits(after: cursor)
            looked = !history.commits.isEmpty || !history.isComplete
            if !history.isComplete { scanAll = Set(types.indices) }
            let index = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($1.name, $0) })
            for commit in history.commits {
                for change in commit.changes {
                    guard let type = index[change.type] else { continue }
                    switch change.kind {
                    case .insert, .update, .delete: candidates[type].insert(change.key)
                    case .clear, .bulk: scanAll.insert(type)
                    }
                }
            }
        } else {
            looked = true
            scanAll = Set(types.indices)
        }
        for type in scanAll {
            candidates[type] = []
            if let records = try types[type].operations.records(in: tx) {
                try tx.lmdb.forEachEntry(in: records) { candidates[type].insert($0.key).inserted || true }
            }
            try tx.lmdb.forEachEntry(in: state.shadows[type]) {
                candidates[type].insert($0.key).inserted || true
            }
        }
        // The objects changed since the last incomplete batch, when the log has all of them: the
        // others up to where it ended need no second look.
        var changedSince: [Set<[UInt8]>]?
        if let progress = uploadProgress, progress.snapshot <= tx.version {
            let recent = try tx.commits(after: progress.snapshot)
            if recent.isComplete {
                var changed = [Set<[UInt8]>](repeating: [], count: types.count)
                let index = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($1.name, $0) })
                var whole = false
                for commit in recent.commits {
                    for change in commit.changes {
                        guard let type = index[change.type] else { continue }
                        switch change.kind {
                        case .insert, .update, .delete: changed[type].insert(change.key)
                        case .clear, .bulk: whole = true
                        }
                    }
                }
                if !whole { changedSince = changed }
            }
        }
        var entries: [UploadBatch.Entry] = []
        var complete = true
        var dirty = 0
        for type in types.indices {
            let operations = types[type].operations
            var keys = candidates[type]
            if let changedSince, let progress = uploadProgress {
                keys = keys.filter {
                    !progress.covers(type: type, key: $0) || changedSince[type].contains($0)
                }
            }
            for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                // Past the batch's size the candidates are counted, not read: each is uploaded in a
                // later batch, and reading them all for every batch would make a large upload
                // quadratic. (A candidate whose record is what the server has is counted until then.)
                guard entries.count < limit else {
                    complete = false
                    dirty += 1
                    continue
                }
                let shadow = try state.shadow(type: type, key: key, in: tx.lmdb)
                let entry: UploadBatch.Entry
                switch try operations.localRecord(key: key, known: shadow?.digest, in: tx) {
                case .unchanged: continue
                case .changed(let keyText, let json, let digest):
                    entry = UploadBatch.Entry(
                        type: type, key: key, keyText: keyText, json: json, base: shadow?.version ?? 0,
                        digestHigh: digest.high, digestLow: digest.low)
                case .absent:
                    guard let shadow, shadow.digest != nil else { continue }
                    entry = UploadBatch.Entry(
                        type: type, key: key, keyText: shadow.keyText, json: nil, base: shadow.version,
                        digestHigh: nil, digestLow: nil)
                }
                dirty += 1
                entries.append(entry)
            }
        }
        return Outbox(entries: entries, complete: complete, looked: looked, version: tx.version, dirty: dirty)
    }

    /// Applies `batch` on the server in one transaction, once: a batch the server already applied
    /// (its number is not above the client's last) is answered with the version it got then.
    func send(_ batch: UploadBatch, resending: Bool, on connection: PostgresConnection) throws -> Outcome {
        let schema = PostgresConnection.quoted(server.schema)
        try connection.execute("BEGIN")
        do {
            try connection.execute(
                "INSERT INTO \(schema).lode_clients (client_id, batch, version) VALUES ($1, 0, 0) "
                    + "ON CONFLICT DO NOTHING", [clientID])
            let client = try connection.execute(
                "SELECT batch, version FROM \(schema).lode_clients WHERE client_id = $1 FOR UPDATE",
                [clientID])
            if let applied = client.integer(0, 0), applied >= batch.number {
                try connection.execute("COMMIT")
                // A batch sent again that the server applied: its answer was lost. A new batch the
                // server counts as applied: this store is behind the server's record of it.
                return resending && applied == batch.number
                    ? .applied(client.integer(0, 1) ?? 0) : .renumber(last: applied)
            }
            // The version the transaction's rows got (one for all: twice its id plus the base).
            var version: Int64?
            if batch.entries.allSatisfy({ $0.base == 0 && $0.json != nil }),
                let version = try copyNewRows(batch, on: connection)
            {
                return try applied(batch, version: version, on: connection)
            }
            // The batch goes to the connection's staging table in one COPY (each JSON parsed once),
            // and from there into each type's table.
            try connection.copyIn(
                "COPY pg_temp.lode_upload (type, key, data, deleted, base) FROM STDIN",
                rows: [Self.copyRows(batch.entries, staged: true)])
            for type in types.indices {
                let count = batch.entries.reduce(0) { $0 + ($1.type == type ? 1 : 0) }
                guard count > 0 else { continue }
                let table = "\(schema).\(PostgresConnection.quoted(types[type].name))"
                // The row's fields this version does not know stay the server's (another version wrote
                // them last): what is sent replaces the rest.
                // (A batch kept from before the app's list of synced types changed may list fewer.)
                let known = batch.fields.flatMap { type < $0.count ? $0[type] : nil }.map {
                    SyncValue.arrayLiteral($0)
                }
                let merged =
                    "CASE WHEN x.data IS NULL THEN t.data WHEN t.deleted OR jsonb_typeof(t.data) IS DISTINCT FROM 'object' "
                    + "OR $2::text[] IS NULL THEN x.data ELSE x.data || (t.data - $2::text[]) END"
                if types[type].operations.checksConflicts {
                    let changed = try connection.execute(
                        """
                        WITH x AS (SELECT * FROM pg_temp.lode_upload WHERE type = $1::int4),
                             inserted AS (INSERT INTO \(table) AS t (key, data, deleted)
                                          SELECT key, data, deleted FROM x WHERE base = 0
                                          ON CONFLICT (key) DO NOTHING RETURNING key, version),
                             updated AS (UPDATE \(table) AS t
                                         SET data = \(merged), deleted = x.deleted
                                         FROM x WHERE x.base > 0 AND t.key = x.key AND t.version = x.base
                                         RETURNING t.key, t.version)
                        SELECT key, version FROM inserted UNION ALL SELECT key, version FROM updated
                        """, ["\(type)", known])
                    guard changed.rowCount == count else {
                        try connection.execute("ROLLBACK")
                        return .conflict
                    }
                    version = version ?? changed.integer(0, 1)
                } else {
                    let written = try connection.execute(
                        """
                        INSERT INTO \(table) AS t (key, data, deleted)
                        SELECT key, data, deleted FROM pg_temp.lode_upload WHERE type = $1::int4
                        ON CONFLICT (key) DO UPDATE
                            SET data = \(merged.replacingOccurrences(of: "x.data", with: "excluded.data")),
                                deleted = excluded.deleted
                        RETURNING version
                        """, ["\(type)", known])
                    version = version ?? written.integer(0, 0)
                }
            }
            return try applied(batch, version: version ?? 0, on: connection)
        } catch {
            if connection.isOpen { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Records the batch as the client's last, with the version its rows got, and commits.
    private func applied(_ batch: UploadBatch, version: Int64, on connection: PostgresConnection) throws
        -> Outcome
    {
        try connection.execute(
            "UPDATE \(PostgresConnection.quoted(server.schema)).lode_clients SET batch = $2, version = $3, "
                + "seen = now() WHERE client_id = $1",
            [clientID, "\(batch.number)", "\(version)"])
        try connection.execute("COMMIT")
        try hooks.serverCommitted(batch.number)
        return .applied(version)
    }

    /// Objects the server never had from this client (no version known: new objects, the common
    /// case of work done offline) go straight into their tables with `COPY`; returns the version the
    /// transaction gave them (read back from one of them), or nil when a key is on
    /// the server already (another client made the same key, or deleted it): nothing of the copy
    /// stays, and the batch takes the general path, which merges.
    private func copyNewRows(_ batch: UploadBatch, on connection: PostgresConnection) throws -> Int64? {
        let schema = PostgresConnection.quoted(server.schema)
        try connection.execute("SAVEPOINT lode_new_rows")
        do {
            for type in types.indices {
                let entries = batch.entries.filter { $0.type == type }
                guard !entries.isEmpty else { continue }
                try connection.copyIn(
                    "COPY \(schema).\(PostgresConnection.quoted(types[type].name)) (key, data) FROM STDIN",
                    rows: [Self.copyRows(entries, staged: false)])
            }
            let first = batch.entries[0]
            let found = try connection.execute(
                "SELECT version FROM \(schema).\(PostgresConnection.quoted(types[first.type].name)) WHERE key = $1",
                [first.keyText])
            try connection.execute("RELEASE SAVEPOINT lode_new_rows")
            return found.integer(0, 0)
        } catch SyncError.server(let state, _) where state == "23505" {
            try connection.execute("ROLLBACK TO SAVEPOINT lode_new_rows")
            return nil
        }
    }

    /// The statement that makes a connection's staging table for uploads (its rows go at the end of
    /// each transaction).
    static let stagingTable = """
        CREATE TEMPORARY TABLE lode_upload (
            type int4 NOT NULL, key text NOT NULL, data jsonb, deleted boolean NOT NULL, base bigint NOT NULL)
        ON COMMIT DELETE ROWS
        """

    /// The batch's entries as rows of `COPY`'s text format: for the staging table (`staged`) type,
    /// key, data (`\N` for a deletion), deleted and base; for a type's table key and data.
    static func copyRows(_ entries: [UploadBatch.Entry], staged: Bool) -> [UInt8] {
        var rows: [UInt8] = []
        rows.reserveCapacity(
            entries.reduce(0) { $0 + ($1.json?.utf8.count ?? 0) + $1.keyText.utf8.count + 32 })
        func field(_ text: String) {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): rows += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\n"): rows += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): rows += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case UInt8(ascii: "\t"): rows += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                default: rows.append(byte)
                }
            }
        }
        for entry in entries {
            if staged { rows += Array("\(entry.type)\t".utf8) }
            field(entry.keyText)
            rows.append(UInt8(ascii: "\t"))
            if let json = entry.json { field(json) } else { rows += Array("\\N".utf8) }
            rows += Array((staged ? "\t\(entry.json == nil ? "t" : "f")\t\(entry.base)\n" : "\n").utf8)
        }
        return rows
    }

    /// Records the server's answer: on success each object's shadow becomes what was uploaded (so it
    /// is clean unless it changed again since), the batch is no longer in flight and, when the batch
    /// held every change up to its version, the upload cursor moves there. A conflict drops the batch:
    /// the next download merges, and the next batch uploads the result.
    private func finish(_ batch: UploadBatch, outcome: Outcome, on connection: PostgresConnection) throws {
        if case .renumber(let last) = outcome {
            var renumbered = batch
            renumbered.number = last + 1
            try store.write { tx in
                try state.setInteger(renumbered.number, SyncState.nextBatchKey, in: tx)
                try state.setInflight(renumbered, in: tx)
            }
            let outcome = try send(renumbered, resending: false, on: connection)
            try finish(renumbered, outcome: outcome, on: connection)
            return
        }
        try store.write { tx in
            try state.setInflight(nil, in: tx)
            guard case .applied(let version) = outcome else { return }
            for entry in batch.entries {
                let keeps = entry.json != nil || types[entry.type].operations.checksConflicts
                try state.setShadow(
                    keeps ? Shadow(version: version, digest: entry.digest, keyText: entry.keyText) : nil,
                    type: entry.type, key: entry.key, in: tx)
            }
            if batch.complete { try state.setUploadCursor(batch.snapshot, in: tx) }
        }
        if case .applied = outcome, let last = batch.entries.last {
            uploadProgress =
                batch.complete
                ? nil : UploadProgress(snapshot: batch.snapshot, type: last.type, key: last.key)
        }
        if case .applied = outcome {
            board.update { $0.pendingUploads = max(0, $0.pendingUploads - batch.entries.count) }
        }
    }
}
