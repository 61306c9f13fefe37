/// A batch of local changes on its way to the server, kept in `@sync` from before it is sent until
/// the server's answer is recorded, so that after a crash or a lost answer the same batch — same
/// number, same contents — is sent again and the server recognizes it.
struct UploadBatch: Codable, Equatable {
    /// One object's change.
    struct Entry: Codable, Equatable {
        /// The index of its type among the synced types.
        var type: Int
        /// The object's encoded key.
        var key: [UInt8]
        /// Its key as the server names it.
        var keyText: String
        /// The object as JSON; nil for a deletion.
        var json: String?
        /// The server version the change was made on (0: none), checked for types with a merge.
        var base: Int64
        /// The digest of the uploaded record (nil for a deletion): the object's shadow once the
        /// server has it.
        var digestHigh: UInt64?
        var digestLow: UInt64?

        var digest: RecordDigest? {
            guard let digestHigh, let digestLow else { return nil }
            return RecordDigest(high: digestHigh, low: digestLow)
        }
    }

    /// The batch's number: the server applies a client's batches once each, in order.
    var number: Int64
    /// The local version the batch was read at.
    var snapshot: Int
    /// True when it holds every change up to `snapshot` (the upload cursor then moves there).
    var complete: Bool
    var entries: [Entry]
    /// Per synced type (by index), the field names its version of the app knows, when learned: the
    /// server keeps a row's other fields — written by other versions — over the ones sent. Nil in
    /// batches kept by a Lode before it (the data sent replaces the row's).
    var fields: [[String]?]?
}
