import Foundation

/// The kind of one change in a ``StorageUpdate``.
public enum ChangeType: String, Sendable, Hashable, CaseIterable {
    /// Something was inserted (new index).
    case insert
    /// Something was deleted (old index).
    case delete
    /// Something moved (old index → new index).
    case move
    /// Something changed in place and must be reloaded (old index).
    case update
}

/// One batch of changes to a storage, in the form table and collection views apply with
/// `performBatchUpdates`: deletions at old indices, insertions at new indices, moves from old to new,
/// updates (reloads) at old indices, each kind sorted ascending.
///
/// Storages that defer their data changes (``MemoryStorage`` and the other in-memory storages when
/// they have a delegate) enqueue a closure that makes the new data visible to the data-source methods:
/// a consumer calls ``applyDeferredDatasourceUpdates()`` inside its batch-update block, before the view
/// asks for counts. Without a delegate the data changes at once.
public final class StorageUpdate: CustomStringConvertible {
    /// Item changes, in order: each payload is one index path, or two (`[from, to]`) for a move.
    public var objectChanges: [(ChangeType, [IndexPath])] = []
    /// Section changes, in order: each payload is one index, or two (`[from, to]`) for a move.
    public var sectionChanges: [(ChangeType, [Int])] = []
    /// The model of every updated item, captured when the update was made (keyed by the old index
    /// path of the update).
    public var updatedObjects: [IndexPath: Any] = [:]
    /// Closures that change the storage's visible data, run by ``applyDeferredDatasourceUpdates()``.
    public private(set) var enqueuedDatasourceUpdates: [(StorageUpdate) -> Void] = []

    /// Makes an empty update.
    public init() {}

    /// True when there are no changes and nothing to apply.
    public var isEmpty: Bool {
        objectChanges.isEmpty && sectionChanges.isEmpty && enqueuedDatasourceUpdates.isEmpty
    }

    /// True when data changes are waiting for ``applyDeferredDatasourceUpdates()``.
    public var containsDeferredDatasourceUpdates: Bool { !enqueuedDatasourceUpdates.isEmpty }

    /// Adds a closure that changes the data, to run when the consumer applies the update.
    public func enqueueDatasourceUpdate(_ update: @escaping (StorageUpdate) -> Void) {
        enqueuedDatasourceUpdates.append(update)
    }

    /// Runs the enqueued data changes, in order, once.
    public func applyDeferredDatasourceUpdates() {
        let updates = enqueuedDatasourceUpdates
        enqueuedDatasourceUpdates.removeAll()
        for update in updates { update(self) }
    }

    /// The index paths of item changes of one kind (the first index path of each).
    public func objects(_ type: ChangeType) -> [IndexPath] {
        objectChanges.filter { $0.0 == type && $0.0 != .move }.compactMap(\.1.first)
    }

    /// Item moves as (from, to) pairs.
    public var objectMoves: [(from: IndexPath, to: IndexPath)] {
        objectChanges.filter { $0.0 == .move && $0.1.count == 2 }.map { ($0.1[0], $0.1[1]) }
    }

    /// The indices of section changes of one kind.
    public func sections(_ type: ChangeType) -> [Int] {
        sectionChanges.filter { $0.0 == type && $0.0 != .move }.compactMap(\.1.first)
    }

    /// Section moves as (from, to) pairs.
    public var sectionMoves: [(from: Int, to: Int)] {
        sectionChanges.filter { $0.0 == .move && $0.1.count == 2 }.map { ($0.1[0], $0.1[1]) }
    }

    /// E.g. `sections: insert [1]; items: delete [0, 2], insert [1, 0]`.
    public var description: String {
        func text(_ path: IndexPath) -> String { "[\(path.section), \(path.item)]" }
        var parts: [String] = []
        if !sectionChanges.isEmpty {
            parts.append(
                "sections: "
                    + sectionChanges.map {
                        "\($0.0.rawValue) \($0.1.map(String.init).joined(separator: "→"))"
                    }
                    .joined(separator: ", "))
        }
        if !objectChanges.isEmpty {
            parts.append(
                "items: "
                    + objectChanges.map { "\($0.0.rawValue) \($0.1.map(text).joined(separator: "→"))" }
                    .joined(separator: ", "))
        }
        return parts.isEmpty ? "no changes" : parts.joined(separator: "; ")
    }
}

extension StorageUpdate: Equatable {
    /// Equal when both have the same ordered changes and the same number of pending data changes.
    public static func == (lhs: StorageUpdate, rhs: StorageUpdate) -> Bool {
        lhs.objectChanges.elementsEqual(rhs.objectChanges) { $0.0 == $1.0 && $0.1 == $1.1 }
            && lhs.sectionChanges.elementsEqual(rhs.sectionChanges) { $0.0 == $1.0 && $0.1 == $1.1 }
            && lhs.enqueuedDatasourceUpdates.count == rhs.enqueuedDatasourceUpdates.count
    }
}
