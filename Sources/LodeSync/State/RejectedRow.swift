/// A row a download skipped, by type name and key text.
struct RejectedRow: Hashable {
    var type: String
    var keyText: String
}
