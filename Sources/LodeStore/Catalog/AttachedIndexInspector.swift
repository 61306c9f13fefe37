import LMDB

/// What reading a store without its app's types needs of a kind of attached index (see
/// ``AttachedIndex``): its counts for ``StoredType`` and its part of `Transaction.checkIntegrity()`.
/// The module that implements the kind registers it (the full-text module does when a full-text
/// index is declared and when a tool opens a store); a store read in a process that registered none
/// lists the index without its counts and reports it as not checked.
package protocol AttachedIndexInspector: Sendable {
    /// The index the catalog lists as `entry`, of type `type`, with its counts.
    func describe(_ entry: CatalogEntry.AttachedIndexEntry, of type: String, in transaction: Transaction)
        throws -> StoredTextIndex
    /// Checks the index `index` of `type` against the type's `records` (the keys of those that exist
    /// but do not read are `unreadable`).
    func check(
        _ index: StoredTextIndex, of type: String, records: [[UInt8]: UntypedRecord],
        unreadable: Set<[UInt8]>, in transaction: Transaction
    ) throws -> AttachedIndexCheck
    /// Removes the object under `key` from the index `entry` of `type`: a deletion made without the
    /// type's Swift type (one a delete rule reached).
    func objectDeleted(
        key: [UInt8], from entry: CatalogEntry.AttachedIndexEntry, of type: String,
        in transaction: WriteTransaction) throws
}

/// What checking an attached index found (see `Transaction.checkIntegrity()`).
package struct AttachedIndexCheck {
    /// Each problem, one readable line.
    package var problems: [String] = []
    /// How many of the index's entries were compared.
    package var entries = 0

    /// A check that found nothing yet.
    package init() {}
}

/// The registered ``AttachedIndexInspector`` (the one kind the format has: full-text indexes).
///
/// Lock order: a leaf.
package enum AttachedIndexInspection {
    private static let registered = Locked<(any AttachedIndexInspector)?>(
        nil, name: "the attached index inspector")

    /// Registers `inspector` (a later registration replaces an earlier one: they are the same kind's).
    package static func register(_ inspector: any AttachedIndexInspector) {
        registered.withLock { $0 = inspector }
    }

    /// The inspector registered, if any.
    package static var inspector: (any AttachedIndexInspector)? { registered.withLock { $0 } }
}
