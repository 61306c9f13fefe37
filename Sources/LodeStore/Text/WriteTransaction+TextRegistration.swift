import Foundation
import LMDB
import LodeCodec

/// Full-text indexes as a type is registered: opened, built again when redefined, dropped when no
/// longer declared.
extension WriteTransaction {
    /// Opens the full-text indexes `schema` declares: the ones stored with other fields or another
    /// tokenizer are dropped and returned to be built again, with the new ones; the ones the schema no
    /// longer declares are dropped.
    func registerTextIndexes<T: Persistable>(of schema: Schema<T>, existing: CatalogEntry?) throws
        -> (live: [any AttachedIndex<T>], toBuild: [any AttachedIndex<T>])
    {
        let name = schema.typeName
        if let index = schema.textIndexes.first, store.isEncrypted {
            // Its terms would be keys LMDB sorts, and a search walks them in order: hashed, they
            // could not be found by prefix nor walked block by block.
            throw LodeError.textIndexUnavailable(
                type: name, index: index.name,
                reason:
                    "full-text indexes are not available in an encrypted store (their terms are sorted keys)")
        }
        let stored = existing?.textIndexes ?? []
        var live: [any AttachedIndex<T>] = []
        var toBuild: [any AttachedIndex<T>] = []
        for index in schema.textIndexes {
            let wanted = CatalogEntry.TextIndexEntry(index)
            let found = stored.first { $0.name == index.name }
            if let found, found != wanted { try dropTextIndex(type: name, index: found.name) }
            let postings = try lmdbWrite.database(
                named: TextIndexLayout.postingsDatabaseName(type: name, index: index.name), kind: .plain)
            let keys = try lmdbWrite.database(
                named: TextIndexLayout.keysDatabaseName(type: name, index: index.name), kind: .plain)
            let liveIndex = LiveTextIndex(definition: index, postings: postings, keys: keys)
            live.append(liveIndex)
            if found != wanted { toBuild.append(liveIndex) }
        }
        for found in stored where schema.textIndex(named: found.name) == nil {
            try dropTextIndex(type: name, index: found.name)
        }
        return (live, toBuild)
    }

    /// Drops the databases of full-text index `index` of `type` (those that exist).
    package func dropTextIndex(type: String, index: String) throws {
        for databaseName in [
            TextIndexLayout.postingsDatabaseName(type: type, index: index),
            TextIndexLayout.keysDatabaseName(type: type, index: index),
        ] {
            let database: Database
            do {
                database = try lmdbWrite.database(named: databaseName, create: false)
            } catch let error as LMDBError where error.code == .notFound {
                continue
            }
            discardPendingText(database)
            try lmdbWrite.drop(database)
        }
    }
}
