import Foundation
import LMDB
import LodeCodec

/// Following links, both ways, in one transaction.
extension Transaction {
    /// The object `link` points at, read in this transaction; nil when it does not exist (the link
    /// dangles).
    ///
    /// - Complexity: one O(log *n*) B-tree lookup and one decode.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a target that no longer
    ///   decodes, ``LodeError/storeClosed(path:)`` and ``LodeError/storage(_:)``.
    public func object<T: Persistable>(_ link: Link<T>) throws -> T? {
        guard link.primaryKey.count <= IndexKeyLimit.maximum else { return nil }
        return try object(T.self, keyBytes: link.primaryKey, state: try typeState(T.self))
    }

    /// The object `link` points at, read in this transaction.
    ///
    /// - Complexity: one O(log *n*) B-tree lookup and one decode.
    /// - Throws: ``LodeError/linkTargetMissing(type:key:)`` when it does not exist, and what
    ///   ``object(_:)`` throws.
    public func resolve<T: Persistable>(_ link: Link<T>) throws -> T {
        guard let target = try object(link) else {
            throw LodeError.linkTargetMissing(type: T.schema.typeName, key: link.key.json)
        }
        return target
    }

    /// The objects `links` point at, in link order, skipping the ones that do not exist.
    ///
    /// - Complexity: O(*k* log *n*) for *k* links, one decode each.
    /// - Throws: as ``object(_:)``.
    public func objects<T: Persistable>(linkedBy links: [Link<T>]) throws -> [T] {
        try existingObjects(T.self, keys: links.map(\.primaryKey))
    }

    /// The objects stored under `keys` that exist, in order: read in place and collected without an
    /// optional or an array append of the generic type per object (each a metadata lookup in this
    /// unspecialized code).
    package func existingObjects<T: Persistable>(_ type: T.Type, keys: [[UInt8]]) throws -> [T] {
        guard let records = try typeState(T.self).records else { return [] }
        let reader = ObjectReader<T>()
        let found = ObjectCollector<T>(capacity: keys.count)
        for key in keys where key.count <= IndexKeyLimit.maximum {
            try key.withUnsafeBytes { key in
                guard let record = try lmdb.transientValue(forKey: key, in: records) else { return }
                try reader.read(record, key: key, appendingTo: found)
            }
        }
        return found.take()
    }

    /// The objects of `Source` whose to-one link `keyPath` points at `target`, in primary-key order:
    /// answered from the link's inverse index, never a scan.
    ///
    /// ```swift
    /// let tasks = try tx.objects(Task.self, linkingTo: try Link(project), via: \.project)
    /// ```
    ///
    /// - Complexity: O(log *N* + *k*) index reads and *k* lookups and decodes for the *k* objects.
    /// - Throws: ``LodeError/schemaMismatch(type:reason:)`` when `Source`'s schema declares no link on
    ///   that field, and what reading an object throws.
    public func objects<Source: Persistable, Target: Persistable>(
        _ type: Source.Type, linkingTo target: Link<Target>, via keyPath: KeyPath<Source, Link<Target>?>
    ) throws -> [Source] {
        try objects(Source.self, linkingTo: target.primaryKey, field: fieldName(of: keyPath))
    }

    /// The objects of `Source` whose to-many link `keyPath` holds `target`, in primary-key order:
    /// answered from the link's inverse index, never a scan.
    ///
    /// - Complexity: O(log *N* + *k*) index reads and *k* lookups and decodes for the *k* objects.
    /// - Throws: as ``objects(_:linkingTo:via:)-(_,_,KeyPath<Source,Link<Target>?>)``.
    public func objects<Source: Persistable, Target: Persistable>(
        _ type: Source.Type, linkingTo target: Link<Target>, via keyPath: KeyPath<Source, [Link<Target>]>
    ) throws -> [Source] {
        try objects(Source.self, linkingTo: target.primaryKey, field: fieldName(of: keyPath))
    }

    /// How many objects of `Source` link to `target` through the link on `field`.
    ///
    /// - Complexity: O(log *N* + *k*) index reads for the *k* objects; nothing is decoded.
    /// - Throws: as ``objects(_:linkingTo:via:)-(_,_,KeyPath<Source,Link<Target>?>)``.
    public func count<Source: Persistable, Target: Persistable>(
        _ type: Source.Type, linkingTo target: Link<Target>, via keyPath: PartialKeyPath<Source>
    ) throws -> Int {
        guard let database = try linkDatabase(Source.self, field: fieldName(of: keyPath)),
            target.primaryKey.count <= IndexKeyLimit.maximum
        else { return 0 }
        return try target.primaryKey.withUnsafeBytes { try lmdb.valueCount(forKey: $0, in: database) }
    }

    /// The inverse index of `Source`'s link on `field`; nil when the type was never written.
    ///
    /// - Throws: ``LodeError/schemaMismatch(type:reason:)`` when `Source`'s schema declares no link on
    ///   `field`.
    private func linkDatabase<Source: Persistable>(_ type: Source.Type, field: String) throws -> Database? {
        let state = try typeState(Source.self)
        guard let link = state.link(named: field) else {
            guard Source.schema.link(named: field) != nil else {
                throw LodeError.schemaMismatch(
                    type: Source.schema.typeName, reason: "no link is declared on field \"\(field)\"")
            }
            // Declared, but not in the store yet (the type was never written): nothing links.
            return nil
        }
        return link.database
    }

    /// The primary keys of the objects of `Source` that link to `target` through `field`, in order.
    package func linkingKeys<Source: Persistable>(_ type: Source.Type, to target: [UInt8], field: String)
        throws -> [[UInt8]]
    {
        guard let database = try linkDatabase(Source.self, field: field),
            target.count <= IndexKeyLimit.maximum
        else { return [] }
        return try lmdb.values(forKey: target, in: database)
    }

    /// The objects of `Source` that link to `target` through `field`, in primary-key order: the
    /// inverse index's keys and the records read in place, each object decoded into its place.
    private func objects<Source: Persistable>(_ type: Source.Type, linkingTo target: [UInt8], field: String)
        throws -> [Source]
    {
        guard let database = try linkDatabase(Source.self, field: field),
            target.count <= IndexKeyLimit.maximum,
            let records = try typeState(Source.self).records
        else { return [] }
        let reader = ObjectReader<Source>()
        let found = ObjectCollector<Source>()
        try target.withUnsafeBytes { target in
            try lmdb.forEachValue(forKey: target, in: database) { key in
                guard key.count <= IndexKeyLimit.maximum,
                    let record = try lmdb.transientValue(forKey: key, in: records)
                else { return }
                try reader.read(record, key: key, appendingTo: found)
            }
        }
        return found.take()
    }
}
