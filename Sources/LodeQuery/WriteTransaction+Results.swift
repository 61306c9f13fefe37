import Foundation
import LodeStore

extension WriteTransaction {
    /// Deletes every object of `results` (evaluated in this transaction); returns how many.
    ///
    /// - Complexity: the results' evaluation, then O(*n* (1 + *i*) log *N*) for *n* objects with *i* indexes
    ///   among *N*, with one decode each.
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes; a deletion that fails throws as ``WriteTransaction/delete(_:key:)`` does.
    @discardableResult
    public func delete<T: Persistable>(_ results: Results<T>) throws -> Int {
        let keys = try results.bound(to: self).evaluation().keys
        var deleted = 0
        for index in 0..<keys.count where try delete(T.self, keyBytes: Array(keys[index])) { deleted += 1 }
        return deleted
    }
}
