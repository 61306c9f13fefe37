import Foundation
import LMDB
import LodeCodec

extension Transaction {
    /// The commits after `version` up to this transaction's version, read from the change log.
    ///
    /// - Complexity: O(*k* + *e*) for the *k* commits after `version` and their *e* object changes, read in
    ///   one pass of the log.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for an entry that is not a
    ///   change-log entry (`@changes`, the entry's version).
    public func commits(after version: Int) throws -> CommitHistory {
        guard let log = store.changeLog else { return CommitHistory(commits: [], isComplete: false) }
        return try mapStorageErrors {
            let floor = try ChangeLogPruning.floor(in: lmdb, meta: store.meta)
            var commits: [Commit] = []
            let decoder = CBORDecoder()
            for entry in try lmdb.logEntries(in: log, after: max(version, -1), through: self.version)
            where entry.key.count == 8 {
                let committed = ChangeLogEntry.version(of: entry.key)
                if committed > self.version { break }
                let logged: ChangeLogEntry
                do {
                    logged = try decoder.decode(ChangeLogEntry.self, from: entry.value)
                } catch {
                    throw LodeError.recordDoesNotDecode(
                        type: StoreLayout.changes, key: "\(committed)",
                        field: (error as? DecodingError)?.fieldPath ?? "", reason: "\(error)")
                }
                commits.append(
                    Commit(
                        version: committed, time: logged.time, changes: logged.changes.map(ObjectChange.init))
                )
            }
            return CommitHistory(
                commits: commits, isComplete: floor.map { $0 <= version + 1 } ?? true, firstAvailable: floor)
        }
    }
}
