import LMDB

/// What an encrypted store puts between itself and LMDB: which databases are sealed and how, and
/// the sealing of their entries with a ``RecordSealer``.
///
/// - `@meta` stays clear (it holds what opening needs before the key is checked: the format, the
///   salt and parameters of a passphrase, the key check), and so does the main database (the names
///   of the others: type, index and field names are visible, as in every encrypted store Lode
///   compares with).
/// - `@catalog`, `@changes` and `@history` keep their keys (type names, transaction ids) and seal
///   their values.
/// - Every other database (records, indexes, links, the sync layer's) stores a keyed hash of each
///   key and seals each value bound to the database's name and the stored key, so a value moved to
///   another key or database does not open. A record carries its primary key inside the seal.
///
/// Opened values are kept in a ``DecryptedCache`` (when given a budget) and copied from it when the
/// same sealed bytes are read again.
package final class StoreSealer: EntrySealer {
    package let sealer: RecordSealer
    private let cache: DecryptedCache?

    /// A sealer keeping up to `decryptedCacheSize` bytes of opened values (0: none).
    package init(sealer: RecordSealer, decryptedCacheSize: Int = 0) {
        self.sealer = sealer
        cache = DecryptedCache(budget: decryptedCacheSize)
    }

    /// The sealing of the store's databases.
    package let policy = SealingPolicy(
        modes: [
            StoreLayout.meta: .clear, StoreLayout.catalog: .values, StoreLayout.changes: .values,
            StoreLayout.history: .values,
        ],
        otherwise: .keysAndValues)

    package var storedKeyLength: Int { RecordSealer.keyedHashLength }

    package func storedKey(
        _ key: UnsafeRawBufferPointer, database: [UInt8], into out: UnsafeMutableRawPointer
    ) {
        // The database's name and a separator go first, so one key hashes differently per database.
        Self.withContext(database: database, storedKey: key) { sealer.keyedHash($0, into: out) }
    }

    /// The stored key of `key` in `database` (tests compute where a record lies).
    package func storedKey(_ key: UnsafeRawBufferPointer, database: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: storedKeyLength) { out, initialized in
            storedKey(key, database: database, into: out.baseAddress!)
            initialized = storedKeyLength
        }
    }

    package func sealedCount(valueCount: Int, embeddedKeyCount: Int?) -> Int {
        RecordSealer.overhead + (embeddedKeyCount.map { 2 + $0 } ?? 0) + valueCount
    }

    package func seal(
        _ value: UnsafeRawBufferPointer, embeddedKey: UnsafeRawBufferPointer?,
        storedKey: UnsafeRawBufferPointer,
        database: [UInt8], deterministic: Bool, into out: UnsafeMutableRawBufferPointer
    ) {
        Self.withContext(database: database, storedKey: storedKey) { context in
            // An embedded key goes first, after its length in two bytes.
            var header: (UInt8, UInt8) = (0, 0)
            if let embeddedKey { header = (UInt8(embeddedKey.count >> 8), UInt8(embeddedKey.count & 0xff)) }
            withUnsafeBytes(of: &header) { headerBytes in
                sealer.seal(
                    embeddedKey == nil ? UnsafeRawBufferPointer(start: nil, count: 0) : headerBytes,
                    embeddedKey ?? UnsafeRawBufferPointer(start: nil, count: 0), value, boundTo: context,
                    deterministic: deterministic, into: out)
            }
        }
    }

    package func openedCapacity(sealedCount count: Int) -> Int { max(count - RecordSealer.overhead, 0) }

    package func open(
        _ sealed: UnsafeRawBufferPointer, storedKey: UnsafeRawBufferPointer, database: [UInt8],
        embedsKey: Bool, into buffer: UnsafeMutableRawBufferPointer
    ) -> (key: Range<Int>?, value: Range<Int>)? {
        Self.withContext(database: database, storedKey: storedKey) { context in
            let length: Int
            if let cache, let copied = cache.copy(sealed, context: context, into: buffer) {
                length = copied
            } else {
                guard let opened = sealer.open(sealed, boundTo: context, into: buffer) else { return nil }
                length = opened
                cache?.keep(
                    sealed, context: context, plain: UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
            }
            guard embedsKey else { return (nil, 0..<length) }
            guard length >= 2 else { return nil }
            let keyCount = Int(buffer[0]) << 8 | Int(buffer[1])
            guard 2 + keyCount <= length else { return nil }
            return (2..<2 + keyCount, 2 + keyCount..<length)
        }
    }

    /// Calls `body` with the associated data of an entry: the database's name, a zero byte, and the
    /// stored key (gathered on the stack: this runs per entry read or written).
    private static func withContext<R>(
        database: [UInt8], storedKey: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let count = database.count + 1 + storedKey.count
        return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
            database.withUnsafeBytes {
                buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            buffer[database.count] = 0
            if let key = storedKey.baseAddress {
                (buffer.baseAddress! + database.count + 1).copyMemory(from: key, byteCount: storedKey.count)
            }
            return body(UnsafeRawBufferPointer(buffer))
        }
    }
}
