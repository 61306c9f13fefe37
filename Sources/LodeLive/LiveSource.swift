import LodeStore

import class LMDB.ReadSnapshot

/// Something that follows the store from one version to the next and says what changed: live
/// results, live sectioned results, a live group and a live-results storage. One
/// ``ObservationDriver`` delivers any of them.
package protocol LiveSource: AnyObject, Sendable {
    /// What a consumer is handed for one advance (made and handed over on the observation's queue).
    associatedtype Update

    /// The store the source follows.
    var store: Store { get }

    /// The version the source is on.
    var version: Int { get }

    /// Advances to the version of `snapshot` (newer than ``version``) and returns what the consumer
    /// is shown, or nil when the commits in between changed nothing it shows.
    func advance(to snapshot: ReadSnapshot) throws -> Update?

    /// Advances to the version of `snapshot` without producing an update: the consumer already shows
    /// that commit (``Store/write(withoutNotifying:_:)``).
    func advanceSilently(to snapshot: ReadSnapshot) throws
}

extension LiveSource {
    package func advanceSilently(to snapshot: ReadSnapshot) throws { _ = try advance(to: snapshot) }
}
