import LMDB

/// Savepoints: part of a write that commits into it or rolls back alone.
extension WriteTransaction {
    /// Runs `body` in a savepoint of this transaction (an LMDB child transaction): when `body`
    /// returns, its changes join this transaction; when it throws, they are undone — records,
    /// indexes, catalog entries, registered types and the changes observers will be told about — and
    /// this transaction carries on as it was, usable as before. Savepoints nest to any depth.
    ///
    /// ```swift
    /// try store.write { tx in
    ///     try tx.insert(order)
    ///     do {
    ///         try tx.savepoint { tx in try reserveStock(for: order, in: tx) }  // all or nothing
    ///     } catch StockError.soldOut {
    ///         try tx.insert(Backorder(order))                                  // the order stays
    ///     }
    /// }
    /// ```
    ///
    /// Inside `body` use the transaction it is given: the outer one refuses every operation until
    /// `body` returns (the LMDB layer's `transactionNotActive`). Reads inside see the savepoint's own
    /// writes; after a rolled-back savepoint, reads of the outer transaction see none of them.
    ///
    /// - Throws: whatever `body` throws, after rolling back. With the write-map durability modes LMDB
    ///   has no child transactions: ``LodeError/storage(_:)`` with the LMDB layer's
    ///   `nestedTransactionsUnavailable`, before `body` runs.
    @discardableResult
    public func savepoint<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        var child: WriteTransaction?
        do {
            // Attached indexes' changes gathered so far are written before the savepoint; its own are
            // written into it when it commits, and gone with it when it rolls back.
            try flushDeferredIndexWrites()
            // Begun again after it: the savepoint changes what they read to begin (a full-text
            // index's statistics), or rolls it back.
            deferredIndexWrites = [:]
            let result = try mapStorageErrors {
                try lmdbWrite.nested { lmdbChild in
                    let savepoint = WriteTransaction(store: store, lmdb: lmdbChild)
                    savepoint.registeredTypes = registeredTypes
                    savepoint.stateCache = stateCache
                    savepoint.shapesNoted = shapesNoted
                    // Its changes are merged without their records (the history reads those).
                    savepoint.historyCaptureChecked = true
                    child = savepoint
                    let result = try body(savepoint)
                    try savepoint.flushDeferredIndexWrites()
                    return result
                }
            }
            if let child { adopt(child) }
            return result
        } catch {
            if let child { child.undoPendingEntries() }
            throw error
        }
    }

    /// Takes over what a savepoint that committed into this transaction did.
    private func adopt(_ savepoint: WriteTransaction) {
        registeredTypes = savepoint.registeredTypes
        stateCache = savepoint.stateCache
        shapesNoted = savepoint.shapesNoted
        pendingChanges.merge(savepoint.pendingChanges)
        for (id, before) in savepoint.pendingEntriesBefore where pendingEntriesBefore[id] == nil {
            pendingEntriesBefore[id] = before
        }
    }

    /// Puts back the pending catalog entries this (rolled-back) savepoint changed.
    private func undoPendingEntries() {
        for (_, before) in pendingEntriesBefore { before.state.pendingEntry = before.entry }
    }
}
