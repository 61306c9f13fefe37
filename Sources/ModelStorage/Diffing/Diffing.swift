/// Something with a stable identity across versions of its value (the identity decides whether an
/// element moved or changed; the value, whether it changed).
public protocol EntityIdentifiable {
    /// The identity.
    var identifier: AnyHashable { get }
}

/// One change to a single list, in batch-update form: deletes and updates at old indices, inserts at
/// new indices, moves from old to new.
public enum SingleSectionOperation: Equatable, Hashable, Sendable {
    /// The element at this old index is gone.
    case delete(Int)
    /// A new element is at this new index.
    case insert(Int)
    /// The element moved from an old index to a new one.
    case move(from: Int, to: Int)
    /// The element at this old index stayed but its value changed (reload it).
    case update(Int)
}

/// A way to compute the operations that turn one list into another. ``HeckelDiffer`` and
/// ``MyersDiffer`` are built in; any type conforming can be plugged into the single-section storages.
///
/// The result must be a valid batch: each old index at most once among deletes, moves and updates;
/// each new index at most once among inserts and moves; every other element keeps its relative order.
public protocol DiffingAlgorithm {
    /// The operations from `old` to `new`.
    func diff<T: EntityIdentifiable & Equatable>(from old: [T], to new: [T]) -> [SingleSectionOperation]
}

/// Sorts operations by kind (deletes, inserts, moves, updates), each ascending.
@inlinable
func normalized(
    deletes: [Int], inserts: [Int], moves: [(Int, Int)], updates: [Int]
) -> [SingleSectionOperation] {
    var result: [SingleSectionOperation] = []
    result.reserveCapacity(deletes.count + inserts.count + moves.count + updates.count)
    result += deletes.sorted().map(SingleSectionOperation.delete)
    result += inserts.sorted().map(SingleSectionOperation.insert)
    result += moves.sorted { $0.0 < $1.0 }.map { SingleSectionOperation.move(from: $0.0, to: $0.1) }
    result += updates.sorted().map(SingleSectionOperation.update)
    return result
}
