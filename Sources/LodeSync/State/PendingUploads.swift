import LMDB
import LodeStore

/// How many objects wait to go up, counted from the store alone — no type's code, no decoding, no
/// server: an object is pending when its record's digest differs from its shadow's (or it has a
/// record and no shadow, or a shadow of a record and no record). The candidates are the objects the
/// change log names after the upload cursor, or every object when there is no cursor or the log no
/// longer reaches it. What `lode-sync status` prints and a disconnected client reports.
enum PendingUploads {
    /// The count for the synced types `types` (by store name), with `state` opened for them in order.
    static func count(in tx: LodeStore.Transaction, state: SyncState, types: [String]) throws -> Int {
        let lmdb = tx.lmdb
        let environment = lmdb.environment
        var candidates = [Set<[UInt8]>](repeating: [], count: types.count)
        var scanAll = Set<Int>()
        if let cursor = try state.uploadCursor(in: lmdb) {
            let history = try tx.commits(after: cursor)
            if !history.isComplete { scanAll = Set(types.indices) }
            let index = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($1, $0) })
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
            scanAll = Set(types.indices)
        }
        var records: [Database?] = []
        for name in types {
            do {
                records.append(try environment.database(named: name, kind: .plain, create: false))
            } catch let error as LMDBError where error.code == .notFound {
                records.append(nil)
            }
        }
        for type in scanAll {
            if let database = records[type] {
                try lmdb.forEachEntry(in: database) { candidates[type].insert($0.key).inserted || true }
            }
            try lmdb.forEachEntry(in: state.shadows[type]) {
                candidates[type].insert($0.key).inserted || true
            }
        }
        var pending = 0
        for type in types.indices {
            for key in candidates[type] {
                let known = try state.shadow(type: type, key: key, in: lmdb)?.digest
                let current = try records[type].flatMap { database in
                    try lmdb.withValue(forKey: key, in: database) { RecordDigest($0) }
                }
                if current != known { pending += 1 }
            }
        }
        return pending
    }
}
