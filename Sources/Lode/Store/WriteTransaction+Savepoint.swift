import LMDB

/// Savepoints: part of a write that commits into it or rolls back alone.
extension WriteTransaction {
    /// Runs `body` in a savepoint of this transaction (an LMDB child transaction): when `body`
    /// returns, its changes join this transaction; when it throws, they are undone — records,
    /// indexes, catalog entries, registered types and the changes observers will be told about —
    /// and this transaction carries on as it was. Inside `body`, use the transaction it is given.
    ///
    /// Unavailable with the write-map durability modes (LMDB has no child transactions there): the
    /// LMDB layer's `nestedTransactionsUnavailable` error. Throws whatever `body` throws, after
    /// rolling back.
    func savepoint<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        var child: WriteTransaction?
        do {
            let result = try lmdbWrite.nested { lmdbChild in
                let savepoint = WriteTransaction(store: store, lmdb: lmdbChild)
                savepoint.registeredTypes = registeredTypes
                savepoint.stateCache = stateCache
                savepoint.shapesNoted = shapesNoted
                child = savepoint
                return try body(savepoint)
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
