import Foundation
import LMDB

extension Store {
    /// The store's link graph as `transaction` sees the catalog: the one read last when the catalog
    /// is unchanged, read again otherwise.
    func linkGraph(in transaction: LMDB.Transaction) throws -> LinkGraph {
        if let cached = cachedLinkGraph.withLock({ $0 }), try cached.matches(catalog, in: transaction) {
            return cached
        }
        let graph = try LinkGraph(catalog: catalog, in: transaction)
        cachedLinkGraph.withLock { $0 = graph }
        return graph
    }
}
