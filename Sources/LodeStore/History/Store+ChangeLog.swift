import Foundation
import LMDB

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
