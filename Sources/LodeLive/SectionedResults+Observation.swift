import Dispatch
import Foundation
import LodeStore
import Synchronization

/// What an observer of sectioned results receives.
public enum SectionedResultsChange<Key: Hashable & Encodable & Sendable, Element: Persistable>: Sendable {
    /// The sections when observation began.
    case initial(SectionedResults<Key, Element>)
    /// The sections at a new version and what changed since the previous delivery.
    case update(SectionedResults<Key, Element>, SectionedChange)
    /// Advancing failed; observation goes on.
    case error(LodeError)
}

extension SectionedResults {
    /// Observes the sections: `.initial`, then `.update` after every commit that changes them and
    /// `.error` when advancing fails, on `queue` (by default a serial queue of the observation's own),
    /// never inside a write transaction, coalesced while the queue is busy.
    /// Key paths (and linked key paths) filter modifications as ``Results/observe(keyPaths:linkedKeyPaths:on:_:)``
    /// does.
    public func observe(
        keyPaths: [PartialKeyPath<Element>]? = nil, linkedKeyPaths: [LinkedKeyPath<Element>] = [],
        on queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (SectionedResultsChange<Key, Element>) -> Void
    ) -> ObservationToken {
        let sectioned = self
        let paths = UncheckedKeyPaths(keyPaths)
        return ObservationDriver.observe(
            on: queue,
            make: {
                try LiveSectionedResults(sectioned, keyPaths: paths.value, linkedKeyPaths: linkedKeyPaths)
            },
            initial: { handler(.initial($0.sections)) }, failed: { handler(.error($0)) },
            consumer: { result in
                switch result {
                case .success(let update): handler(.update(update.sections, update.change))
                case .failure(let error): handler(.error(error))
                }
            })
    }
}
