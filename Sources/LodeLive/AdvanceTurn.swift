import Foundation

/// The right to advance one live object (live results, sectioned results, a group, a storage):
/// advancers take turns, one at a time. The one whose turn it is works on the object's private
/// state with no lock held — it reads LMDB and runs the app's predicates, sort and section keys and
/// `Decodable` initializers — and publishes what readers see under a leaf lock before its turn ends.
/// Readers never wait for a turn.
///
/// A turn is waited for only outside transactions (`refresh`, an observation's delivery and a
/// storage's member edits refuse to run inside one, or run on a queue of their own), so a thread
/// waiting for a turn holds neither a Lode lock nor the map's resize lock, and the advancer it waits
/// for can always finish. Turns nest one way: a storage's, then its group's, then each member's.
package final class AdvanceTurn: @unchecked Sendable {
    // @unchecked: `taken` is only touched under `condition`.
    private let condition = NSCondition()
    private var taken = false

    /// A turn no one has taken.
    package init() {}

    /// Runs `body` in a turn of its own, waiting for the current one to end.
    package func run<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        while taken { condition.wait() }
        taken = true
        condition.unlock()
        defer {
            condition.lock()
            taken = false
            condition.signal()
            condition.unlock()
        }
        return try body()
    }
}
