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
