import Foundation
import LodeCodec

/// Names of the store's own databases, and the values in `@meta`.
package enum StoreLayout {
    static let meta = "@meta"
    static let catalog = "@catalog"
    static let changes = "@changes"
    /// Where a store of format 6 kept its history (see `HistoryLayout`): the entries are in
    /// `@changes` from format 7 on.
    static let history = "@history"
    /// The newest format this code reads and writes.
    static let formatVersion = 7
    /// The format of a store without links: what a new store gets, and what an older store is
    /// upgraded to when opened for writing.
    static let baseFormatVersion = 2
    /// The format a store gets when a type with links is first written to its catalog: a Lode that
    /// does not know links must not write to it (it would leave their inverse indexes behind).
    static let linksFormatVersion = 3
    /// The format a store gets when a type with full-text indexes is first written to its catalog: a
    /// Lode that does not know them must not write to it (it would leave their postings behind).
    static let textIndexesFormatVersion = 4
    /// The format of an encrypted store, from its creation: a Lode that does not know encryption
    /// must not open it (it would read sealed bytes and write plain ones).
    static let encryptedFormatVersion = 5
    /// The format a store gets when it starts keeping history: a Lode that does not know history must
    /// not write to it (its commits would leave gaps in the history no reader could see). Format 6
    /// kept the entries in `@history`; 7 keeps them in `@changes`, and a writer that opens a store of
    /// format 6 moves them there.
    static let historyFormatVersion = 7
    /// The format that kept the history in a database of its own (`@history`).
    static let separateHistoryFormatVersion = 6
    static let formatVersionKey = "format"
    static let createdKey = "created"
    /// The names of the migrations the store ran, in order (a CBOR array of text).
    package static let migrationsKey = "migrations"
    /// How many migrations ran (an integer, beside their names).
    package static let schemaVersionKey = "schemaVersion"
    static let schemaVersionKeyBytes = Array(schemaVersionKey.utf8)
    /// The databases of the sync layer: `@sync` (its state) and `@sync.<Type>` (what the server is
    /// known to hold of each synced type). The store keeps them as they are.
    package static let syncDatabase = "@sync"

    /// True for a database of the sync layer.
    static func isSyncDatabase(_ name: String) -> Bool {
        name == syncDatabase || name.hasPrefix(syncDatabase + ".")
    }
}
