/// What an upload finds of an object in the store.
enum LocalRecord {
    /// The store has no record: a deletion, if the server has the object.
    case absent
    /// The record is what the server holds (its digest is the shadow's).
    case unchanged
    /// The record changed: the object's key text and JSON, and the record's digest.
    case changed(keyText: String, json: String, digest: RecordDigest)
}
