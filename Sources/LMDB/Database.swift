import CLMDB

/// A named database (or the main one) of an ``Environment``: a sorted map from keys to values, or to
/// sorted sets of values when it allows duplicates. Opened once and kept for the environment's life.
///
/// Keys sort by `memcmp`. Keys are 1...511 bytes; in a dup-sort database every value is at most 511
/// bytes as well, and in a dup-fixed one every value has exactly ``fixedValueWidth`` bytes. The
/// wrapper checks these limits before a call reaches LMDB.
public struct Database: Sendable, Hashable, CustomStringConvertible {
    /// The name, or `nil` for the main database.
    public let name: String?
    /// The options the database actually has (read back from LMDB).
    public let kind: Kind
    let handle: MDB_dbi
    /// How its entries are sealed, in an encrypted environment (nil: as given).
    package let sealing: DatabaseSealing?
    /// The handle's number: the same for every transaction of the environment, distinct per database.
    package var number: UInt32 { UInt32(handle) }

    /// How a database stores values.
    public enum Kind: Sendable, Hashable {
        /// One value per key.
        case plain
        /// Several values per key, kept sorted (`MDB_DUPSORT`).
        case duplicates
        /// Several values per key, all of one width in bytes (`MDB_DUPSORT | MDB_DUPFIXED`).
        case fixedDuplicates(width: Int)
    }

    /// True when a key may have several values.
    public var allowsDuplicates: Bool { kind != .plain }

    /// The width of every value in a dup-fixed database.
    public var fixedValueWidth: Int? {
        if case .fixedDuplicates(let width) = kind { return width }
        return nil
    }

    init(name: String?, kind: Kind, handle: MDB_dbi, sealing: DatabaseSealing? = nil) {
        self.name = name
        self.kind = kind
        self.handle = handle
        self.sealing = sealing
    }

    /// How the database's entries lie on disk.
    public var sealingMode: SealingMode { sealing?.mode ?? .clear }

    /// False when its keys are stored hashed: only exact keys can be found, and walks come in hash
    /// order.
    public var isOrdered: Bool { sealing?.hashesKeys != true }

    /// The key a walk of this database returns for `key`: `key` itself, except in a dup-sort database
    /// whose keys are hashed, where walks return the stored (hashed) keys.
    package func walkedKey(_ key: [UInt8]) -> [UInt8] {
        guard let sealing, sealing.hashesKeys, allowsDuplicates else { return key }
        return key.withUnsafeBytes { sealing.storedKey($0) }
    }

    /// Databases are equal when they are the same handle of the same name and kind.
    public static func == (lhs: Database, rhs: Database) -> Bool {
        lhs.handle == rhs.handle && lhs.name == rhs.name && lhs.kind == rhs.kind
    }

    /// Hashes the handle and name.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(handle)
        hasher.combine(name)
    }

    /// `main`, or the database's name.
    public var description: String { name.map { "database \"\($0)\"" } ?? "main database" }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
