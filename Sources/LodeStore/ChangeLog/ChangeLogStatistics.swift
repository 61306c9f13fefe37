/// What change-log pruning has done in this process: how many prunes ran and, over all of them, how
/// many entries each read, removed and had to decode in full. Tests check that a prune costs what it
/// removes; tools may report it.
///
/// Lock order: `totals` is a leaf.
final class ChangeLogStatistics: Sendable {
    private let totals = Locked<(prunes: Int, outcome: ChangeLogPruning.Outcome)>((0, .init()))

    func record(_ outcome: ChangeLogPruning.Outcome) {
        totals.withLock { totals in
            totals.prunes += 1
            totals.outcome.examined += outcome.examined
            totals.outcome.removed += outcome.removed
            totals.outcome.decoded += outcome.decoded
        }
    }

    /// The number of prunes and the summed outcome.
    var current: (prunes: Int, outcome: ChangeLogPruning.Outcome) { totals.withLock { $0 } }
}
