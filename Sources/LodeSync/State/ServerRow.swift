/// One row of a server table as a download reads it.
struct ServerRow: Sendable {
    /// The index of its type in the client's list of synced types.
    var type: Int
    /// The object's key as text.
    var key: String
    /// The version the server stamped.
    var version: Int64
    /// True when the client must not hold the object: a tombstone, or a row outside its filter.
    var gone: Bool
    /// The object as JSON text, UTF-8 (nil when gone).
    var data: [UInt8]?
}
