import LMDB

/// An index of a type that the write path keeps in step with the type's records beside its own
/// secondary indexes, unique indexes and links: the seam a kind of index plugs into (the full-text
/// indexes of `Text/` do). A type's state holds the attached indexes that exist on disk and match its
/// schema; a write transaction tells each of every object it writes or deletes and of the type being
/// emptied. An attached index writes only its own databases, in the same write transaction; an error
/// it throws refuses the operation, which then changes nothing the caller can see (the transaction
/// rolls back, or the caller catches it and the write closure goes on without the object).
package protocol AttachedIndex<Object>: Sendable {
    /// The type whose objects the index covers.
    associatedtype Object
    /// The index's name, unique among the type's attached indexes.
    var name: String { get }
    /// The stored fields the index reads: an update of other fields alone leaves it as it was.
    var fields: [String] { get }
    /// `new` was written under `key`, replacing `old` (nil for a new object); or, with `new` nil, the
    /// object `old` is being deleted.
    func objectChanged(key: [UInt8], old: Object?, new: Object?, in transaction: WriteTransaction) throws
    /// The object under `key` is being deleted and its stored record no longer decodes: removes what
    /// the index holds for it without reading it.
    func undecodableObjectDeleted(key: [UInt8], in transaction: WriteTransaction) throws
    /// Every object of the type is being deleted.
    func typeEmptied(in transaction: WriteTransaction) throws
}

/// Changes an attached index gathered in a write transaction and writes later, in one sorted pass
/// (full-text postings are written per term, not per object). The transaction keeps them by the
/// database they belong to and writes them before it commits, before a savepoint begins (the
/// savepoint's own are written into it when it commits, and are gone with it when it rolls back), and
/// before anything in the transaction reads the index (``Transaction/flushDeferredIndexWrites()``).
package protocol DeferredIndexWrites: AnyObject {
    /// Writes what was gathered (what it read to begin, such as an index's statistics, it may keep).
    func flush(in transaction: WriteTransaction) throws
}

/// An attached index's declaration (``AttachedIndexDeclaration``) with what the write path does with
/// it: open it for a registered type, or make it as the type is registered. Every declaration a
/// schema holds is one (the kind's module declares both).
package protocol AttachedIndexDefinition<Object>: AttachedIndexDeclaration {
    /// The index over its databases, which exist (the type is registered and the catalog lists the
    /// index as it is declared).
    func open(type: String, in transaction: Transaction) throws -> any AttachedIndex<Object>
    /// The index as its type is registered, its databases made when missing (then empty: the
    /// registration fills a new or redefined index from the type's records).
    /// - Throws: when the store cannot keep an index of the kind (see the kind's errors).
    func create(type: String, in transaction: WriteTransaction) throws -> any AttachedIndex<Object>
}

extension Schema {
    /// The definitions of the schema's attached indexes, which ``AttachedIndexDeclaration``s are.
    var attachedIndexDefinitions: [any AttachedIndexDefinition<Object>] {
        attachedIndexes.map { declaration in
            guard let definition = declaration as? any AttachedIndexDefinition<Object> else {
                preconditionFailure("\(type(of: declaration)) declares an attached index with no definition")
            }
            return definition
        }
    }
}

extension WriteTransaction {
    /// Drops the databases of the attached index `index` of `type` (those that exist) and what the
    /// transaction gathered for them.
    package func dropAttachedIndex(type: String, index: String) throws {
        for databaseName in CatalogEntry.attachedIndexDatabaseNames(type: type, index: index) {
            let database: Database
            do {
                database = try lmdbWrite.database(named: databaseName, create: false)
            } catch let error as LMDBError where error.code == .notFound {
                continue
            }
            discardDeferredIndexWrites(of: database)
            try lmdbWrite.drop(database)
        }
    }

    /// Empties the databases of the attached index `index` of `type` (made when missing) and forgets
    /// what the transaction gathered for them.
    package func emptyAttachedIndex(type: String, index: String) throws {
        for databaseName in CatalogEntry.attachedIndexDatabaseNames(type: type, index: index) {
            let database = try lmdbWrite.database(named: databaseName, kind: .plain)
            discardDeferredIndexWrites(of: database)
            try lmdbWrite.empty(database)
        }
    }

    /// Forgets the writes gathered for `database` and not yet written (the database is being emptied
    /// or dropped).
    package func discardDeferredIndexWrites(of database: Database) {
        deferredIndexWrites[database.number] = nil
    }
}
