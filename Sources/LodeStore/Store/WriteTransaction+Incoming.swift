import Foundation
import LMDB
import LodeCodec

/// Objects that arrive with a record of their own — a sync download's row, written by whichever
/// version of the app wrote it last: the type's encoding is stored with the fields of that record the
/// type does not know (docs/FORMAT.md, "Fields of other versions").
extension WriteTransaction {
    /// The record `object` has when it arrives as `incoming`: the type's encoding followed by the
    /// fields of `incoming` it lacks and the type does not know; and its shape memo (see
    /// `CarriedFields.shape(_:keeping:of:)`).
    package func record<T: Persistable>(
        of object: T, arrivingAs incoming: UnsafeRawBufferPointer, key: [UInt8]
    )
        throws -> (bytes: [UInt8], shape: UInt64)
    {
        let state = try typeState(T.self)
        return try withEncodedRecord(object) { record, shape in
            let kept = try unknownFields(of: incoming, missingFrom: record, key: key, state: state)
            guard !kept.isEmpty else { return (Array(record), shape) }
            return (
                CarriedFields.record(record, keeping: kept, of: incoming),
                CarriedFields.shape(shape, keeping: kept, of: incoming)
            )
        }
    }

    /// Stores `object` as it arrives in `incoming` (see ``record(of:arrivingAs:key:)``): the fields its
    /// type does not know are those of `incoming`, not those of the stored record. Returns the record
    /// written, or nil when the stored record is that record already (nothing is written).
    ///
    /// - Throws: as ``upsert(_:)``.
    package func upsert<T: Persistable>(_ object: T, arrivingAs incoming: UnsafeRawBufferPointer) throws
        -> [UInt8]?
    {
        let state = try typeState(T.self)
        let key = try primaryKey(of: object, state: state)
        let (record, shape) = try self.record(of: object, arrivingAs: incoming, key: key)
        guard let records = state.records, let stored = try lmdb.get(key, in: records) else {
            try record.withUnsafeBytes {
                try store(object, record: $0, shape: shape, key: key, replacing: nil, state: state)
            }
            return record
        }
        if stored == record { return nil }
        var old = try stored.withUnsafeBytes { try decode(T.self, from: $0, key: key) }
        try withUnsafePointer(to: &old) { pointer in
            try record.withUnsafeBytes {
                try store(
                    object, record: $0, shape: shape, key: key,
                    replacing: StoredVersion(object: UnsafeRawPointer(pointer), record: stored), state: state)
            }
        }
        return record
    }
}
