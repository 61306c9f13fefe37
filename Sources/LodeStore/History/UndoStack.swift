import Foundation
import Synchronization

/// What one undo or redo did.
public struct UndoOutcome: Sendable, Equatable {
    /// The name of the step undone or redone.
    public var name: String
    /// The version of the commit that wrote it (nil when nothing was left to write).
    public var version: Int?
    /// The objects (and fields) left as they are because they changed since, under
    /// ``UndoConflictPolicy/skipChanged``.
    public var skipped: [UndoConflict]
}

/// An undo stack over an app's own write transactions: each ``write(_:_:)`` (or ``group(_:_:)`` of
/// them) is a named step; ``undo(policy:)`` writes the inverse of the last step as a new
/// transaction — records, indexes, links and full-text entries put back as they were — and
/// ``redo(policy:)`` writes it again.
///
/// It reads what to put back from the store's history, so the store must keep one
/// (``StoreConfiguration/history``) reaching back to the oldest step (older steps fail with
/// ``LodeError/historyUnavailable(reason:)``). Undo and redo are ordinary commits: live results
/// deliver them as changes, other processes see them, and the history records them.
///
/// When an object a step changed was changed since by someone else (another writer, another
/// process, sync), the policy decides: ``UndoConflictPolicy/refuse`` throws
/// ``LodeError/undoConflict(action:conflicts:)`` naming the objects and fields and writes nothing;
/// ``UndoConflictPolicy/skipChanged`` puts back only what nobody changed.
///
/// ```swift
/// let undo = try UndoStack(store)
/// try undo.write("Rename") { tx in try tx.update(Note.self, key: 1) { $0.title = "New" } }
/// try undo.undo()   // the title is the old one again
/// try undo.redo()   // and the new one
/// ```
///
/// The stack is safe to use from any thread; each undo or redo takes its step off the stack before
/// it writes (two at once undo two steps) and puts it back if the write fails. It lives in memory,
/// as an undo manager's does: steps are the versions of their commits, and a stack made again after
/// a restart starts empty.
public final class UndoStack: Sendable {
    /// A named step: the commits it reverts together.
    struct Step: Equatable {
        var name: String
        var versions: [Int]
    }

    struct State {
        var undo: [Step] = []
        var redo: [Step] = []
        /// The step ``group(_:_:)`` gathers writes into, and how deep its groups are nested.
        var open: Step?
        var depth = 0
    }

    /// The store written to.
    public let store: Store
    /// The most steps kept; the oldest go first.
    public let limit: Int
    /// The author written with undo and redo commits (``WriteTransaction/author``), and with the
    /// stack's writes when their closure sets none.
    public let author: String?
    private let state = Mutex(State())

    /// An empty stack over `store`, keeping at most `limit` steps.
    ///
    /// - Throws: ``LodeError/historyUnavailable(reason:)`` when the store keeps no history.
    public init(_ store: Store, limit: Int = 100, author: String? = nil) throws {
        let keeps = try store.read { try $0.keepsHistory }
        guard keeps else {
            throw LodeError.historyUnavailable(
                reason:
                    "undo reads the store's history, and it keeps none (open it with StoreConfiguration.history set)"
            )
        }
        self.store = store
        self.limit = Swift.max(1, limit)
        self.author = author
    }

    /// Whether there is a step to undo.
    public var canUndo: Bool { state.withLock { !$0.undo.isEmpty } }
    /// Whether there is a step to redo.
    public var canRedo: Bool { state.withLock { !$0.redo.isEmpty } }
    /// The name of the step ``undo(policy:)`` would undo.
    public var undoName: String? { state.withLock { $0.undo.last?.name } }
    /// The name of the step ``redo(policy:)`` would redo.
    public var redoName: String? { state.withLock { $0.redo.last?.name } }

    /// Runs `body` in a write transaction (as ``Store/write(_:)-86d6p``) and, when it changed
    /// objects, makes it a step named `name` — or part of the ``group(_:_:)`` open — and forgets
    /// what could be redone.
    ///
    /// - Throws: what the write throws; no step is made then.
    @discardableResult
    public func write<R>(_ name: String, _ body: (WriteTransaction) throws -> R) throws -> R {
        var version: Int?
        let result = try store.write { tx -> R in
            if tx.author == nil { tx.author = author }
            let result = try body(tx)
            version = tx.pendingChanges.isEmpty ? nil : tx.lmdb.id
            return result
        }
        if let version { push(Step(name: name, versions: [version])) }
        return result
    }

    /// Makes every ``write(_:_:)`` of this stack during `body` one step named `name` (the name of
    /// the outermost group when groups nest).
    public func group<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        state.withLock { state in
            if state.depth == 0 { state.open = Step(name: name, versions: []) }
            state.depth += 1
        }
        defer {
            let closed = state.withLock { state -> Step? in
                state.depth -= 1
                guard state.depth == 0 else { return nil }
                defer { state.open = nil }
                return state.open
            }
            if let closed, !closed.versions.isEmpty { push(closed, grouped: false) }
        }
        return try body()
    }

    private func push(_ step: Step, grouped: Bool = true) {
        state.withLock { state in
            if grouped, state.open != nil {
                state.open!.versions += step.versions
                return
            }
            state.undo.append(step)
            if state.undo.count > limit { state.undo.removeFirst(state.undo.count - limit) }
            state.redo.removeAll()
        }
    }

    /// Writes the inverse of the last step as a new transaction and moves it to the redo side;
    /// returns what it did, or nil when there was nothing to undo.
    ///
    /// - Throws: ``LodeError/undoConflict(action:conflicts:)`` under ``UndoConflictPolicy/refuse``
    ///   when an object the step changed was changed since; ``LodeError/historyUnavailable(reason:)``
    ///   when the history no longer holds the step; ``LodeError/deleteDenied(type:key:linkedFrom:)``
    ///   when an object the undo removes is still linked to through a link whose rule is deny. The
    ///   step stays on the stack then.
    @discardableResult
    public func undo(policy: UndoConflictPolicy = .refuse) throws -> UndoOutcome? {
        try move(from: \.undo, to: \.redo, action: "undo", policy: policy)
    }

    /// Writes again the last step undone (the inverse of its undo) and moves it back to the undo
    /// side; returns what it did, or nil when there was nothing to redo.
    ///
    /// - Throws: as ``undo(policy:)``.
    @discardableResult
    public func redo(policy: UndoConflictPolicy = .refuse) throws -> UndoOutcome? {
        try move(from: \.redo, to: \.undo, action: "redo", policy: policy)
    }

    /// Forgets every step.
    public func removeAll() {
        state.withLock { state in
            state.undo.removeAll()
            state.redo.removeAll()
        }
    }

    private func move(
        from source: WritableKeyPath<State, [Step]>, to destination: WritableKeyPath<State, [Step]>,
        action: String, policy: UndoConflictPolicy
    ) throws -> UndoOutcome? {
        guard let step = state.withLock({ $0[keyPath: source].popLast() }) else { return nil }
        let done: (version: Int?, skipped: [UndoConflict])
        do {
            done = try store.write { tx in
                tx.author = author
                let skipped = try tx.revert(
                    versions: step.versions, action: "\(action) of \"\(step.name)\"", policy: policy)
                return (tx.pendingChanges.isEmpty ? nil : tx.lmdb.id, skipped)
            }
        } catch {
            // Back where it was (by its commits' order, should another step have moved meanwhile).
            state.withLock { state in
                let position =
                    state[keyPath: source].firstIndex {
                        ($0.versions.first ?? 0) > (step.versions.first ?? 0)
                    }
                    ?? state[keyPath: source].count
                state[keyPath: source].insert(step, at: position)
            }
            throw error
        }
        // A step with nothing left to put back still moves (its counterpart does nothing either).
        state.withLock { state in
            state[keyPath: destination].append(
                Step(name: step.name, versions: done.version.map { [$0] } ?? []))
            if state[keyPath: destination].count > limit {
                state[keyPath: destination].removeFirst(state[keyPath: destination].count - limit)
            }
        }
        return UndoOutcome(name: step.name, version: done.version, skipped: done.skipped)
    }
}

extension Transaction {
    /// Whether the store keeps history (``StoreConfiguration/history`` was set by a process that
    /// opened it).
    public var keepsHistory: Bool {
        get throws { try lmdb.get(HistoryLayout.retentionKey, in: store.meta) != nil }
    }
}
