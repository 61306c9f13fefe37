import Dispatch
import Foundation
import LodeQuery
import LodeStore
import Observation

/// The objects of a query, following every commit of any process, observable with the Observation
/// framework — what SwiftData's `@Query` gives a view. Code that reads ``elements`` (or
/// ``results``, ``lastChange``) inside `withObservationTracking` is told after each commit that
/// changes the results (an object joins, leaves, moves or is modified); code that reads only
/// ``count`` is told only when the count changes.
///
/// ```swift
/// let open = try LiveQuery(store.objects(Todo.self).filter(#Predicate { $0.status == pending }))
/// withObservationTracking {
///     print(open.count)
/// } onChange: {
///     print("a todo opened or closed")
/// }
/// ```
///
/// With `keyPaths`, a change to other properties of an object is not a modification (a list that
/// shows titles is not told when a rank changes, unless the order changes). ``elements`` are read
/// when a change arrives, on `queue` (a serial queue of its own unless given; `.main` for UI code),
/// where observers' `onChange` runs too, before the new values are visible; for very large results,
/// read the pinned ``results`` lazily instead. It follows the store until ``cancel()``, the store
/// closes, or it is released.
public final class LiveQuery<Element: Persistable>: Observable, @unchecked Sendable {
    // @unchecked: `state` is guarded by its lock; the registrar is thread-safe; the rest is immutable.
    private let registrar = ObservationRegistrar()
    private let state:
        Locked<
            (results: Results<Element>, elements: [Element], lastChange: CollectionChange?, error: LodeError?)
        >
    private let token = ObservationToken()

    /// Follows `results`' query (evaluated now, at the last committed version).
    ///
    /// - Throws: as ``LiveResults/init(_:keyPaths:linkedKeyPaths:)``, and what reading the objects
    ///   throws.
    public init(
        _ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        on queue: DispatchQueue? = nil
    ) throws {
        let live = try LiveResults(results, keyPaths: keyPaths)
        let pinned = live.results
        state = Locked((pinned, try pinned.fetch(), nil, nil))
        let queue = queue ?? DispatchQueue(label: "lode.live-query")
        let driver = ObservationDriver(source: live, queue: queue, token: token) { [weak self] result in
            self?.apply(result)
        }
        queue.async { driver.start() }
    }

    deinit { token.cancel() }

    /// Stops following the store: the values stay as they are.
    public func cancel() { token.cancel() }

    /// The objects, in the query's order, at the last version delivered.
    public var elements: [Element] {
        registrar.access(self, keyPath: \.elements)
        return state.withLock { $0.elements }
    }

    /// How many objects there are; reading it tracks the count alone.
    public var count: Int {
        registrar.access(self, keyPath: \.count)
        return state.withLock { $0.elements.count }
    }

    /// The results at the last version delivered (pinned to it: lazy reads see that version).
    public var results: Results<Element> {
        registrar.access(self, keyPath: \.results)
        return state.withLock { $0.results }
    }

    /// The change the last delivery made (nil before the first), in UIKit's batch-update form.
    public var lastChange: CollectionChange? {
        registrar.access(self, keyPath: \.lastChange)
        return state.withLock { $0.lastChange }
    }

    /// The last error following the store met (nil after a delivery succeeds).
    public var error: LodeError? {
        registrar.access(self, keyPath: \.error)
        return state.withLock { $0.error }
    }

    private enum Tracked {
        case elements, count, results, lastChange, error
    }

    /// Applies one delivery: the observers of what changed are told, then the values change.
    private func apply(_ result: Result<ResultsUpdate<Element>, LodeError>) {
        let current = state.withLock { $0 }
        var next = current
        var changed: [Tracked] = []
        switch result {
        case .success(let update):
            do {
                next = (update.results, try update.results.fetch(), update.change, nil)
                changed = [.elements, .results, .lastChange]
                if next.elements.count != current.elements.count { changed.append(.count) }
            } catch {
                // The results moved on; the objects could not be read at the new version.
                next = (update.results, current.elements, update.change, LodeError(error))
                changed = [.results, .lastChange]
            }
        case .failure(let error):
            next.error = error
        }
        if (current.error == nil) != (next.error == nil) { changed.append(.error) }
        for tracked in changed { mutation(of: tracked, willSet: true) }
        state.withLock { $0 = next }
        for tracked in changed { mutation(of: tracked, willSet: false) }
    }

    private func mutation(of tracked: Tracked, willSet: Bool) {
        func tell<Value>(_ path: KeyPath<LiveQuery, Value>) {
            willSet ? registrar.willSet(self, keyPath: path) : registrar.didSet(self, keyPath: path)
        }
        switch tracked {
        case .elements: tell(\.elements)
        case .count: tell(\.count)
        case .results: tell(\.results)
        case .lastChange: tell(\.lastChange)
        case .error: tell(\.error)
        }
    }
}
