import LMDB

/// What a write transaction changed in one full-text index and has not written yet: postings are
/// gathered per term and written term by term (`WriteTransaction.flushText()`), so a load of many
/// objects rewrites each term's last block once, not once per object.
final class PendingText {
    let postings: Database
    let keys: Database
    /// The statistics as this transaction changed them.
    var statistics: TextIndexStatistics
    /// Per term (UTF-8), the documents whose postings of it changed, in the order of the changes:
    /// the positions now, or nil when the document no longer holds the term.
    var changes: [String: [(document: Int, positions: [Int32]?)]] = [:]
    /// Documents whose length changed: tokens now (0: no document).
    var lengths: [Int: UInt32] = [:]
    /// Postings gathered so far (written once past ``flushThreshold``).
    var count = 0
    /// Whether the statistics changed.
    var statisticsChanged = false

    /// Postings a transaction gathers before it writes them.
    static let flushThreshold = 1_000_000

    init(postings: Database, keys: Database, statistics: TextIndexStatistics) {
        self.postings = postings
        self.keys = keys
        self.statistics = statistics
    }
}
