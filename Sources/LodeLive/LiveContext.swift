import Foundation
import LodeStore

import class LMDB.ReadSnapshot

/// The live layer's state for one store: its notifier and the caches that the live results of the
/// store share (the change log read once per version range, objects decoded once per version, the
/// sorted index keys of changed objects). The store keeps it as its ``StoreFollower`` and tells it
/// of each commit, which it passes on to the notifier; it holds the store weakly.
///
/// Lock order: `lock` is a leaf (the caches only; nothing is called while it is held). The notifier
/// is made under it but its initializer only allocates and arms a timer.
final class LiveContext: StoreFollower, @unchecked Sendable {
    // @unchecked: every mutable property is read and written under `lock`.
    private weak var store: Store?
    private let lock = LodeLock("LiveContext")
    private var notifier: Notifier?
    private var changes: [ChangesKey: TypeChanges] = [:]
    private var decoded: [String: DecodedObjects] = [:]
    private var changedIndexKeys: [String: [(key: [UInt8], primaryKey: [UInt8])]] = [:]
    /// Hooks tests use to force interleavings.
    let hooks = LiveTestHooks()

    private init(store: Store) { self.store = store }

    /// The context of `store`.
    static func of(_ store: Store) -> LiveContext {
        store.follower { LiveContext(store: store) }
    }

    /// Wakes the notifier (when there is one) after a commit of this process.
    func storeDidCommit() { lock.withLock { notifier }?.storeDidCommit() }

    /// The store's notifier, made (and listening to the store's commits) on first use.
    func makeNotifier(for store: Store) -> Notifier {
        lock.withLock {
            if let notifier { return notifier }
            let made = Notifier(store: store, interval: store.configuration.notificationPollInterval)
            notifier = made
            return made
        }
    }

    /// The changes to a type in versions `(from, next]`, read from the change log once for all live
    /// results that advance over the same versions.
    func changes(of typeName: String, from: Int, to next: ReadSnapshot, in store: Store) throws -> TypeChanges
    {
        let key = ChangesKey(type: typeName, from: from, to: next.transactionID)
        if let cached = lock.withLock({ changes[key] }) { return cached }
        let read = try store.changes(of: typeName, from: from, to: next)
        lock.withLock {
            if changes.count >= 32 { changes.removeAll() }
            changes[key] = read
        }
        return read
    }

    /// The index keys (new values) of the objects of a type changed in `(from, to]`, sorted, made
    /// once for every live result that reads that index.
    func changedIndexKeys(
        of typeName: String, index: String, from: Int, to: Int,
        build: () throws -> [(key: [UInt8], primaryKey: [UInt8])]
    ) throws -> [(key: [UInt8], primaryKey: [UInt8])] {
        let key = "\(typeName)\u{0}\(index)\u{0}\(from)\u{0}\(to)"
        if let cached = lock.withLock({ changedIndexKeys[key] }) { return cached }
        let built = try build()
        lock.withLock {
            if changedIndexKeys.count >= 16 { changedIndexKeys.removeAll() }
            changedIndexKeys[key] = built
        }
        return built
    }

    /// The shared cache of objects of a type decoded at `version`.
    func decodedObjects(of typeName: String, at version: Int) -> DecodedObjects {
        lock.withLock {
            if let cache = decoded[typeName], cache.version == version { return cache }
            let cache = DecodedObjects(version: version)
            decoded[typeName] = cache
            return cache
        }
    }
}

struct ChangesKey: Hashable {
    var type: String
    var from: Int
    var to: Int
}

/// Objects of one type decoded at one version, shared by the live results advancing to it.
///
/// Lock order: `lock` is a leaf; `decode` runs outside it.
final class DecodedObjects: @unchecked Sendable {
    // @unchecked: `objects` is only touched under `lock`; the values are decoded objects handed out
    // as copies (value types) or as the caller's own references.
    package let version: Int
    private let lock = LodeLock("DecodedObjects")
    private var objects: [[UInt8]: Any?] = [:]

    init(version: Int) { self.version = version }

    package func object<T>(_ key: [UInt8], as type: T.Type, decode: () throws -> T?) throws -> T? {
        if let cached = lock.withLock({ objects[key] }) { return cached as? T }
        let object = try decode()
        lock.withLock { objects[key] = .some(object) }
        return object
    }
}
