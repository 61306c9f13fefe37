import Foundation
import LodeQuery
import LodeStore

/// What an observer of live results receives.
public enum ResultsChange<Element: Persistable>: Sendable {
    /// The results when observation began.
    case initial(Results<Element>)
    /// The results at a new version, and what changed since the previous delivery.
    case update(Results<Element>, CollectionChange)
    /// Advancing failed (the store was closed, a record no longer decodes…); observation goes on.
    case error(LodeError)
}
