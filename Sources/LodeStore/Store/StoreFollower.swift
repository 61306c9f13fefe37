/// The one thing a layer above keeps per store and the store tells of its commits: the live layer's
/// state for the store (its notifier and shared caches). The store defines this hook and never
/// names what implements it; it keeps the follower, once made, for as long as the store lives.
///
/// Lock order: the store makes the follower under its own leaf lock (`make` must only allocate) and
/// calls ``storeDidCommit()`` after the write transaction ended, outside every lock.
package protocol StoreFollower: AnyObject, Sendable {
    /// A write transaction of this process committed.
    func storeDidCommit()
}
