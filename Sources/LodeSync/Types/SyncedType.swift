import LodeStore

/// A type kept in sync, with the rows it keeps (``SyncFilter``) and how a conflict is settled.
///
/// **The default rule: the server's order decides, per object.** Every write reaches the server in
/// one order (the versions it stamps); for each object the last write in that order is the one every
/// store ends with. A local write not yet uploaded stays visible locally and is uploaded after what
/// the server sent meanwhile, so it is the last write: the app never sees its own write vanish and
/// come back. With a `merge` function, a local write that raced a server change is instead merged
/// with it: `merge(local, server)` runs in the write that brings the server's version, and its result
/// is what is uploaded — checked against the server's version, so a third write in between starts
/// another merge rather than being overwritten. It runs inside that write, on the client's thread:
/// it must not write to the store nor stop the client.
public struct SyncedType: Sendable {
    let operations: any TypeSyncing
    let filter: SyncFilter?

    /// `T` with every row of its table (or those `filter` selects), under the server's order.
    public static func type<T: Persistable>(_ type: T.Type, filter: SyncFilter? = nil) -> SyncedType {
        SyncedType(operations: TypeSync<T>(merge: nil), filter: filter)
    }

    /// `T`, merging a local write that raced a server change with `merge(local, server)`.
    public static func type<T: Persistable>(
        _ type: T.Type, filter: SyncFilter? = nil,
        merge: @escaping @Sendable (_ local: T, _ server: T) throws -> T
    ) -> SyncedType {
        SyncedType(operations: TypeSync<T>(merge: merge), filter: filter)
    }

    /// The type's store name, which is also its server table's name.
    public var name: String { operations.typeName }
}
