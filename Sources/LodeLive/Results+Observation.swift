import Dispatch
import Foundation
import LodeQuery

extension Results {
    /// Observes these results: `handler` runs on `queue` with `.initial` first, then `.update` with
    /// the exact change after every commit (of any process) that changes them — never inside a write
    /// transaction — and `.error` when advancing fails. Commits that arrive while the queue is busy
    /// are coalesced into one change.
    ///
    /// Without a queue, the observation delivers on a serial queue of its own, so a command-line
    /// program that never runs the main queue receives its changes; pass `.main` to update a UI.
    /// With `keyPaths`, changes to other fields of an object do not count as modifications; with
    /// `linkedKeyPaths`, changes to those fields of the objects it links to do
    /// (`.through(\.project, \Project.name)`). Without either, a change of a linked object the results
    /// filter, sort or section by counts as a modification of the rows linking to it.
    public func observe(
        keyPaths: [PartialKeyPath<Element>]? = nil, linkedKeyPaths: [LinkedKeyPath<Element>] = [],
        on queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) -> ObservationToken {
        observe(keyPaths: keyPaths, linkedKeyPaths: linkedKeyPaths, on: queue, demand: nil, handler)
    }

    func observe(
        keyPaths: [PartialKeyPath<Element>]?, linkedKeyPaths: [LinkedKeyPath<Element>] = [],
        on queue: DispatchQueue?, demand: DeliveryDemand?,
        _ handler: @escaping @Sendable (ResultsChange<Element>) -> Void
    ) -> ObservationToken {
        let results = self
        let paths = UncheckedKeyPaths(keyPaths)
        return ObservationDriver.observe(
            on: queue, demand: demand,
            make: { try LiveResults(results, keyPaths: paths.value, linkedKeyPaths: linkedKeyPaths) },
            initial: { handler(.initial($0.results)) }, failed: { handler(.error($0)) },
            consumer: { result in
                switch result {
                case .success(let update): handler(.update(update.results, update.change))
                case .failure(let error): handler(.error(error))
                }
            })
    }

    /// The same observation as an asynchronous sequence that advances as fast as it is consumed (a
    /// consumer that falls behind gets one change covering what it missed); it ends when the
    /// consuming task is cancelled. The loop needs a thread of the consuming task's executor — the
    /// cooperative pool, by default — where ``observe(keyPaths:linkedKeyPaths:on:_:)`` needs none
    /// (see ``LiveChanges``).
    public var changes: LiveChanges<ResultsChange<Element>> {
        let results = self
        return LiveChanges { demand, yield in
            results.observe(keyPaths: nil, on: nil, demand: demand) { yield($0) }
        }
    }

    /// Live results that follow this query (see ``LiveResults``).
    ///
    /// - Throws: as ``LiveResults/init(_:keyPaths:linkedKeyPaths:)``.
    public func live(
        keyPaths: [PartialKeyPath<Element>]? = nil, linkedKeyPaths: [LinkedKeyPath<Element>] = []
    ) throws -> LiveResults<Element> {
        try LiveResults(self, keyPaths: keyPaths, linkedKeyPaths: linkedKeyPaths)
    }
}

/// Key paths are immutable values; this carries them into the delivery queue.
struct UncheckedKeyPaths<Root>: @unchecked Sendable {
    // @unchecked: key paths are immutable once made; Swift 6.3 does not mark `PartialKeyPath` Sendable.
    let value: [PartialKeyPath<Root>]?
    init(_ value: [PartialKeyPath<Root>]?) { self.value = value }
}
