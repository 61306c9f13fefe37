import CLMDB

/// The operations a write transaction has applied, recorded as bytes so they can be replayed on a
/// fresh transaction after the map grows (`MDB_MAP_FULL` kills a transaction; LMDB's only way on is
/// abort, grow, redo). Replaying the recorded operations instead of re-running the user's closure
/// means the closure runs exactly once.
///
/// Only operations that succeeded are recorded; a failed put (`MDB_KEYEXIST`) or a delete of a
/// missing key changes nothing and needs no replay.
struct WriteLog {
    private enum Tag: UInt8 {
        case put = 1
        case delete = 2
        case deleteValue = 3
        case empty = 4
        case drop = 5
        case open = 6
    }

    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private mutating func appendInteger(_ value: UInt32) {
        // Four appends cost less than a generic copy of four bytes (native byte order, as replay reads).
        withUnsafeBytes(of: value) { raw in
            for byte in raw { bytes.append(byte) }
        }
    }

    @inline(__always)
    private mutating func appendBlob(_ blob: UnsafeRawBufferPointer) {
        appendInteger(UInt32(blob.count))
        // As typed bytes: one copy (a raw buffer appended as a sequence goes byte by byte).
        guard let base = blob.baseAddress, !blob.isEmpty else { return }
        bytes.append(
            contentsOf: UnsafeBufferPointer(
                start: base.assumingMemoryBound(to: UInt8.self), count: blob.count))
    }

    mutating func recordPut(
        _ dbi: MDB_dbi, flags: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) {
        bytes.append(Tag.put.rawValue)
        appendInteger(dbi)
        appendInteger(flags)
        appendBlob(key)
        appendBlob(value)
        count += 1
    }

    mutating func recordDelete(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) {
        bytes.append(value == nil ? Tag.delete.rawValue : Tag.deleteValue.rawValue)
        appendInteger(dbi)
        appendBlob(key)
        if let value { appendBlob(value) }
        count += 1
    }

    /// `mdb_drop`; a deleting drop closes the handle, so replay reopens the database by name.
    mutating func recordDrop(_ dbi: MDB_dbi, name: String?, delete: Bool) {
        bytes.append(delete ? Tag.drop.rawValue : Tag.empty.rawValue)
        appendInteger(dbi)
        let nameBytes = Array((name ?? "").utf8)
        nameBytes.withUnsafeBytes { appendBlob($0) }
        count += 1
    }

    /// `mdb_dbi_open` inside the transaction: an abort closes such handles, so replay opens them again
    /// and checks they come back with the same number.
    mutating func recordOpen(_ dbi: MDB_dbi, name: String, flags: UInt32) {
        bytes.append(Tag.open.rawValue)
        appendInteger(dbi)
        appendInteger(flags)
        Array(name.utf8).withUnsafeBytes { appendBlob($0) }
        count += 1
    }

    mutating func append(_ other: WriteLog) {
        bytes.append(contentsOf: other.bytes)
        count += other.count
    }

    enum ReplayFailure: Error {
        /// LMDB returned this code; `MDB_MAP_FULL` means grow more and start over.
        case lmdb(Int32, operation: String)
        /// A database handle came back with another number: the replay would write elsewhere.
        case handleMismatch(name: String)
    }

    /// Applies every recorded operation to `txn`, in order.
    func replay(on txn: OpaquePointer) -> ReplayFailure? {
        bytes.withUnsafeBytes { raw -> ReplayFailure? in
            var offset = 0
            func integer() -> UInt32 {
                let value = raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
                offset += 4
                return value
            }
            func blob() -> MDB_val {
                let length = Int(integer())
                let base = UnsafeMutableRawPointer(mutating: raw.baseAddress! + offset)
                offset += length
                return MDB_val(mv_size: length, mv_data: base)
            }
            while offset < raw.count {
                let tag = Tag(rawValue: raw[offset])!
                offset += 1
                switch tag {
                case .put:
                    let dbi = integer()
                    let flags = integer()
                    var key = blob()
                    var value = blob()
                    let rc = mdb_put(txn, dbi, &key, &value, flags)
                    if rc != 0 { return .lmdb(rc, operation: "mdb_put (replay)") }
                case .delete:
                    let dbi = integer()
                    var key = blob()
                    let rc = mdb_del(txn, dbi, &key, nil)
                    if rc != 0 { return .lmdb(rc, operation: "mdb_del (replay)") }
                case .deleteValue:
                    let dbi = integer()
                    var key = blob()
                    var value = blob()
                    let rc = mdb_del(txn, dbi, &key, &value)
                    if rc != 0 { return .lmdb(rc, operation: "mdb_del (replay)") }
                case .empty, .drop:
                    var dbi = integer()
                    let nameValue = blob()
                    if tag == .drop {
                        let name = String(
                            decoding: UnsafeRawBufferPointer(
                                start: nameValue.mv_data, count: nameValue.mv_size),
                            as: UTF8.self)
                        let rc = mdb_dbi_open(txn, name, 0, &dbi)
                        if rc != 0 { return .lmdb(rc, operation: "mdb_dbi_open \(name) (replay)") }
                    }
                    let rc = mdb_drop(txn, dbi, tag == .drop ? 1 : 0)
                    if rc != 0 { return .lmdb(rc, operation: "mdb_drop (replay)") }
                case .open:
                    let expected = integer()
                    let flags = integer()
                    let nameValue = blob()
                    let name = String(
                        decoding: UnsafeRawBufferPointer(start: nameValue.mv_data, count: nameValue.mv_size),
                        as: UTF8.self)
                    var dbi: MDB_dbi = 0
                    let rc = mdb_dbi_open(txn, name, flags, &dbi)
                    if rc != 0 { return .lmdb(rc, operation: "mdb_dbi_open \(name) (replay)") }
                    if dbi != expected { return .handleMismatch(name: name) }
                }
            }
            return nil
        }
    }
}
