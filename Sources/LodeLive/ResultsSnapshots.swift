import LodeQuery
import LodeStore
import ModelStorage

extension Results {
    /// The identities of the results as a diffable snapshot with one section.
    ///
    /// - Throws: what evaluating the results throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes.
    public func snapshot(section: String = "") throws -> Snapshot<String, ObjectID> {
        var snapshot = Snapshot<String, ObjectID>()
        try snapshot.appendSections([section])
        let keys = try evaluation().keys
        try snapshot.appendItems(
            (0..<keys.count).map { ObjectID(typeName: Element.schema.typeName, primaryKey: Array(keys[$0])) })
        return snapshot
    }
}

extension SectionedResults {
    /// The identities of the sections' objects as a diffable snapshot, one section per key,
    /// identified by the key itself (as Core Data's sections are by their group values).
    ///
    /// - Throws: what evaluating the sections throws: ``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes, and ``LodeError/appCodeFailed(_:)`` when the section key throws.
    public func snapshot() throws -> Snapshot<Key, ObjectID> {
        var snapshot = Snapshot<Key, ObjectID>()
        for section in try fetchSections() {
            try snapshot.appendSections([section.key])
            try snapshot.appendItems(section.objects.objectIDs)
        }
        return snapshot
    }
}
