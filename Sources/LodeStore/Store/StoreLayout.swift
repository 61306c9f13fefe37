import Foundation
import LodeCodec

/// Names of the store's own databases, and the values in `@meta`.
package enum StoreLayout {
    static let meta = "@meta"
    static let catalog = "@catalog"
    static let changes = "@changes"
    /// The format this code writes and reads.
    static let formatVersion = 2
    static let formatVersionKey = "format"
    static let createdKey = "created"
    /// The names of the migrations the store ran, in order (a CBOR array of text).
    package static let migrationsKey = "migrations"
    /// How many migrations ran (an integer, beside their names).
    package static let schemaVersionKey = "schemaVersion"
    static let schemaVersionKeyBytes = Array(schemaVersionKey.utf8)
}
