/// How a database stores values.
public enum RawDatabaseKind: Sendable, Equatable {
    /// One value per key.
    case plain
    /// Several sorted values per key (`MDB_DUPSORT`).
    case duplicates
    /// Several sorted values of one width per key (`MDB_DUPSORT | MDB_DUPFIXED`).
    case fixedDuplicates(width: Int)
}
