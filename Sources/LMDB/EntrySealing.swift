import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How the entries of one database of an encrypted environment lie on disk.
public enum SealingMode: Sendable, Hashable {
    /// Keys and values as given (the main database, the store's catalog).
    case clear
    /// Keys as given (they keep their order); values sealed.
    case values
    /// Keys replaced by a keyed hash (only equality lookups find them; walks come in hash order) and
    /// values sealed. In a plain database the sealed value carries the key, so walks return it; in a
    /// dup-sort database walks return the stored (hashed) key.
    case keysAndValues
}

/// Seals and opens the entries of an encrypted environment: implemented above LMDB (by the store,
/// with its key), called by the wrapper on every read and write of a sealed database.
///
/// The wrapper owns the buffers: it asks how long an opened value is, gives a buffer of that size,
/// and hands the opened bytes to its caller where it would have handed bytes of the map.
package protocol EntrySealer: AnyObject, Sendable {
    /// Which databases are sealed and how: read once, when the sealer is installed, so the wrapper
    /// decides for each database it opens without calling above it (under its lock).
    var policy: SealingPolicy { get }
    /// The length of every stored key of a database whose keys are hashed.
    var storedKeyLength: Int { get }
    /// Writes the key stored for `key` in a database whose keys are hashed (`database`: its name's
    /// bytes) to `out` (``storedKeyLength`` bytes).
    func storedKey(_ key: UnsafeRawBufferPointer, database: [UInt8], into out: UnsafeMutableRawPointer)
    /// The length of a value of `valueCount` bytes sealed (carrying a key of `embeddedKeyCount`).
    func sealedCount(valueCount: Int, embeddedKeyCount: Int?) -> Int
    /// Writes `value` sealed under `storedKey`, carrying `embeddedKey` when given, to `out` (of
    /// ``sealedCount(valueCount:embeddedKeyCount:)`` bytes). With `deterministic` (the values of a
    /// dup-sort database, which LMDB compares and finds by their bytes) the same input always seals
    /// to the same bytes.
    func seal(
        _ value: UnsafeRawBufferPointer, embeddedKey: UnsafeRawBufferPointer?,
        storedKey: UnsafeRawBufferPointer, database: [UInt8], deterministic: Bool,
        into out: UnsafeMutableRawBufferPointer)
    /// The length of the opened form of a sealed value of `count` bytes (an upper bound).
    func openedCapacity(sealedCount count: Int) -> Int
    /// Opens `sealed`, stored under `storedKey`, into `buffer`; returns where the embedded key (with
    /// `embedsKey`) and the value lie in it, or nil when the bytes do not open with the key (damaged,
    /// moved to another key or database, or sealed with another key).
    func open(
        _ sealed: UnsafeRawBufferPointer, storedKey: UnsafeRawBufferPointer, database: [UInt8],
        embedsKey: Bool, into buffer: UnsafeMutableRawBufferPointer
    ) -> (key: Range<Int>?, value: Range<Int>)?
}

/// How each database of an encrypted environment is sealed: by name, and `otherwise` for the rest.
package struct SealingPolicy: Sendable {
    /// The modes of databases named here.
    package var modes: [String: SealingMode]
    /// The mode of every database not named.
    package var otherwise: SealingMode

    /// A policy sealing the databases named in `modes` as they say and the rest as `otherwise`.
    package init(modes: [String: SealingMode], otherwise: SealingMode) {
        self.modes = modes
        self.otherwise = otherwise
    }

    /// How the database named `name` is sealed.
    package func mode(ofDatabase name: String) -> SealingMode { modes[name] ?? otherwise }
}

/// The sealing of one database: its mode, the sealer, and its name (bound into every sealed entry).
package struct DatabaseSealing: Sendable {
    let sealer: any EntrySealer
    /// `.values` or `.keysAndValues` (a clear database has no sealing).
    package let mode: SealingMode
    let name: [UInt8]

    var hashesKeys: Bool { mode == .keysAndValues }

    /// `flags` without the append flags where sealing breaks the order they promise. An append also
    /// promises to refuse what exists (LMDB refuses a key, or a duplicate, not past the last): in
    /// their place the put refuses an existing key (``PutFlags/noOverwrite``) or an existing
    /// duplicate (``PutFlags/noDuplicateData``), so an insert that tries the append path never
    /// overwrites.
    func storableFlags(_ flags: PutFlags, in database: Database) -> PutFlags {
        var flags = flags
        if hashesKeys && flags.contains(.append) {
            flags.remove(.append)
            flags.insert(.noOverwrite)
        }
        if database.allowsDuplicates && flags.contains(.appendDuplicate) {
            flags.remove(.appendDuplicate)
            flags.insert(.noDuplicateData)
        }
        return flags
    }

    /// The key LMDB holds for `key`.
    func storedKey(_ key: UnsafeRawBufferPointer) -> [UInt8] { withStoredKey(key) { Array($0) } }

    /// Calls `body` with the key LMDB holds for `key` (`key` itself where keys stay clear; a hash
    /// on the stack where they are hashed: this runs per entry read or written).
    func withStoredKey<R, E: Error>(
        _ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        guard hashesKeys else { return try body(key) }
        return try withUnsafeTemporaryAllocation(byteCount: sealer.storedKeyLength, alignment: 8) {
            (buffer) throws(E) -> R in
            sealer.storedKey(key, database: name, into: buffer.baseAddress!)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Calls `body` with `value` sealed under `storedKey` (carrying `embeddedKey` when given), on
    /// the stack when it is small.
    func withSealed<R, E: Error>(
        _ value: UnsafeRawBufferPointer, embeddedKey: UnsafeRawBufferPointer?,
        storedKey: UnsafeRawBufferPointer,
        deterministic: Bool, _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let count = sealer.sealedCount(valueCount: value.count, embeddedKeyCount: embeddedKey?.count)
        return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { (buffer) throws(E) -> R in
            sealer.seal(
                value, embeddedKey: embeddedKey, storedKey: storedKey, database: name,
                deterministic: deterministic, into: buffer)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }
}

/// Memory for opened values that must stay valid as bytes of the map do (until the transaction
/// ends): chunks allocated as needed and freed, zeroed, together.
final class OpenedArena {
    /// The chunks, each with the bytes of it handed out.
    private var chunks: [(memory: UnsafeMutableRawBufferPointer, used: Int)] = []
    private static let chunkSize = 16 << 10

    /// The bytes handed out since the last ``release()``.
    var usedBytes: Int { chunks.reduce(0) { $0 + $1.used } }

    /// A buffer of `count` bytes, valid until ``release()``.
    func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if let last = chunks.last, last.memory.count - last.used >= count {
            chunks[chunks.count - 1].used += count
            return UnsafeMutableRawBufferPointer(rebasing: last.memory[last.used..<last.used + count])
        }
        let chunk = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(count, OpenedArena.chunkSize), alignment: 16)
        chunks.append((chunk, count))
        return UnsafeMutableRawBufferPointer(rebasing: chunk[0..<count])
    }

    /// Frees every buffer (the bytes handed out zeroed first: they held plaintext).
    func release() {
        for chunk in chunks {
            if let base = chunk.memory.baseAddress, chunk.used > 0 { memset(base, 0, chunk.used) }
            chunk.memory.deallocate()
        }
        chunks.removeAll()
    }

    deinit { release() }
}

/// One reusable buffer (a cursor's current entry, opened).
final class OpenedBuffer {
    private var buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    /// The buffer, at least `count` bytes long; its earlier contents are gone.
    func reserve(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if buffer.count < count {
            clear()
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1024), alignment: 16)
        }
        return buffer
    }

    /// Zeroes and frees the buffer (it held plaintext).
    func release() { clear() }

    private func clear() {
        if let base = buffer.baseAddress {
            memset(base, 0, buffer.count)
            buffer.deallocate()
        }
        buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    }

    deinit { clear() }
}

extension DatabaseSealing {
    /// The error for a sealed entry that does not open.
    func broken(key: UnsafeRawBufferPointer, _ operation: @autoclosure () -> String) -> LMDBError {
        var error = LMDBError(
            .sealBroken, operation: operation(),
            message:
                "a sealed entry of database \"\(String(decoding: name, as: UTF8.self))\" does not open with "
                + "the store's key: it was damaged, moved from another key, or written with another key")
        error.sealedEntry = LMDBError.SealedEntry(
            database: String(decoding: name, as: UTF8.self), key: Array(key))
        return error
    }

    /// The error for an ordered operation on a database whose keys are hashed.
    func unordered(_ operation: String) -> LMDBError {
        LMDBError(
            .unordered, operation: operation,
            message:
                "database \"\(String(decoding: name, as: UTF8.self))\" is encrypted with hashed keys: only "
                + "exact keys can be found, not ranges")
    }

    /// Opens the stored entry `storedKey`/`sealed` into `buffer`; returns the entry as the caller
    /// sees it (the embedded key, or the stored key when none is embedded).
    func open(
        storedKey: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, deterministic: Bool,
        into buffer: UnsafeMutableRawBufferPointer, givenKey: UnsafeRawBufferPointer? = nil,
        _ operation: @autoclosure () -> String
    ) throws(LMDBError) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard
            let opened = sealer.open(
                sealed, storedKey: storedKey, database: name, embedsKey: hashesKeys && !deterministic,
                into: buffer)
        else { throw broken(key: givenKey ?? storedKey, operation()) }
        let base = UnsafeRawBufferPointer(buffer)
        let key = opened.key.map { UnsafeRawBufferPointer(rebasing: base[$0]) } ?? storedKey
        return (key, UnsafeRawBufferPointer(rebasing: base[opened.value]))
    }
}
