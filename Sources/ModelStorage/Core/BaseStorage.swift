import Foundation

/// What every storage shares: supplementary models with the lineage's routing, and delivery of
/// updates to a delegate and to ``updates``.
open class BaseStorage: SupplementaryStorage {
    /// The header model of a section.
    public var headerModelProvider: ((_ sectionIndex: Int) -> Any?)?
    /// The footer model of a section.
    public var footerModelProvider: ((_ sectionIndex: Int) -> Any?)?
    /// The kind answered by ``headerModelProvider``.
    public var supplementaryHeaderKind: String?
    /// The kind answered by ``footerModelProvider``.
    public var supplementaryFooterKind: String?
    private var customSupplementaryProvider: ((String, IndexPath) -> Any?)?

    /// The model of any supplementary kind. Reading it gives a closure that routes the header and
    /// footer kinds to their providers first and everything else to the closure that was set.
    public var supplementaryModelProvider: ((_ kind: String, _ indexPath: IndexPath) -> Any?)? {
        get {
            { [weak self] kind, indexPath in
                guard let self else { return nil }
                if let header = self.headerModelProvider, kind == self.supplementaryHeaderKind {
                    return header(indexPath.section)
                }
                if let footer = self.footerModelProvider, kind == self.supplementaryFooterKind {
                    return footer(indexPath.section)
                }
                return self.customSupplementaryProvider?(kind, indexPath)
            }
        }
        set { customSupplementaryProvider = newValue }
    }

    /// Receives each update (held weakly).
    public weak var delegate: (any StorageUpdating)?

    /// Open ``updates`` streams. Guarded by its lock: a live storage delivers on its own queue while
    /// a task may start a new stream. A leaf lock: nothing is called while it is held.
    private let continuations = ContinuationList()

    /// Receives this storage's ``ListAnomaly``s (its own: silencing here silences no other storage).
    public let anomalyHandler = AnomalyHandler(label: "storage")

    /// Makes a storage. Header and footer kinds start as the table-view kinds
    /// (``SupplementaryKind/tableHeader`` / ``SupplementaryKind/tableFooter``), which
    /// ``ViewModelMappingRegistry/registerHeader(_:kind:condition:make:configure:)`` uses too.
    public init() {
        supplementaryHeaderKind = SupplementaryKind.tableHeader
        supplementaryFooterKind = SupplementaryKind.tableFooter
        anomalyHandler.rename(String(describing: type(of: self)))
    }

    /// Every update and reload from now on, as an asynchronous sequence (each call starts a new one).
    /// Updates reach it already applied, unless a delegate is set to apply them.
    public var updates: AsyncStream<StorageEvent> {
        let (stream, continuation) = AsyncStream<StorageEvent>.makeStream(bufferingPolicy: .unbounded)
        continuations.add(continuation)
        return stream
    }

    /// Sends an update to the delegate (which applies its data changes) and to ``updates``. Without a
    /// delegate the data changes are applied here.
    public func deliver(_ update: StorageUpdate) {
        if let delegate {
            delegate.storageDidPerformUpdate(update)
        } else {
            update.applyDeferredDatasourceUpdates()
        }
        yield(.update(update))
    }

    /// Asks the delegate and ``updates`` to reload everything.
    public func deliverReload() {
        delegate?.storageNeedsReloading()
        yield(.reload)
    }

    /// Tells the delegate and ``updates`` that the next update could not be produced.
    public func deliverFailure(_ error: any Error) {
        delegate?.storageDidFail(error)
        yield(.failure(error))
    }

    private func yield(_ event: StorageEvent) { continuations.yield(event) }
}

/// The continuations of a storage's ``BaseStorage/updates`` streams.
///
/// Lock order: `lock` is a leaf; continuations are resumed after it is released.
final class ContinuationList: @unchecked Sendable {
    // @unchecked: `continuations` is read and written under `lock` only.
    private let lock = NSLock()
    private var continuations: [UUID: AsyncStream<StorageEvent>.Continuation] = [:]

    func add(_ continuation: AsyncStream<StorageEvent>.Continuation) {
        let id = UUID()
        lock.withLock { continuations[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.continuations.removeValue(forKey: id) }
        }
    }

    func yield(_ event: StorageEvent) {
        let current = lock.withLock { Array(continuations.values) }
        for continuation in current { continuation.yield(event) }
    }
}
