import Foundation
import LMDB
import LodeCodec

/// The migrations a store has run, as recorded in its `@meta` database.
public struct SchemaHistory: Sendable, Equatable {
    /// The schema version: how many migrations have run.
    public var version: Int { migrations.count }
    /// The names of the migrations that ran, in order.
    public var migrations: [String]

    /// A history of `migrations`.
    public init(migrations: [String]) { self.migrations = migrations }
}

extension Transaction {
    /// The migrations this store has run (see ``Migration``).
    ///
    /// - Throws: ``LodeError/storeClosed(path:)`` after the store closed and ``LodeError/storage(_:)`` when
    ///   LMDB fails, and ``LodeError/notAStore(path:reason:)`` when the list of migrations does not decode.
    public func schemaHistory() throws -> SchemaHistory {
        guard let bytes = try lmdb.get(Array(StoreLayout.migrationsKey.utf8), in: store.meta) else {
            return SchemaHistory(migrations: [])
        }
        do {
            return SchemaHistory(migrations: try CBORDecoder().decode([String].self, from: bytes))
        } catch {
            throw LodeError.notAStore(
                path: store.path, reason: "its list of migrations does not decode: \(error)")
        }
    }
}
