import Foundation

/// A usage mistake a list layer noticed but cannot throw for: a view applying updates out of order,
/// a model no mapping shows, a reaction that can never run, an index path outside the data.
///
/// Edits that can fail throw instead (``MemoryStorageError``, ``SnapshotError``…): an anomaly never
/// replaces an error. Anomalies go to an ``AnomalyHandler`` — each storage and each
/// ``ViewModelMappingRegistry`` has its own — which prints each kind once per site by default and can
/// be replaced or silenced. Two anomalies are equal when their kinds and all their values are.
public enum ListAnomaly: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// No registered mapping shows this model at this index path, so no view can be made or
    /// configured for it and its events go nowhere.
    case noMapping(modelType: String, indexPath: IndexPath, kind: ViewKind)
    /// A reaction was registered for a model type no mapping shows: it can never run.
    case reactionForUnmappedModel(event: String, modelType: String)
    /// A reaction that takes the view was dispatched without a view of its type, so it did not run.
    case reactionWithoutView(event: String, viewType: String, indexPath: IndexPath)
    /// The view applied update number `update` while the next one due was `expected` (updates are
    /// numbered from 1 in the order the storage delivered them): it skipped one, or applied an old one
    /// after a newer one or a reload. The view's rows no longer match the data.
    case updateAppliedOutOfOrder(update: Int, expected: Int)
    /// An index path that names no item was used to make a view, dispatch an event or ask a value.
    case indexPathOutsideData(IndexPath, numberOfSections: Int)
    /// A header, footer or other supplementary model was asked for a section that does not exist.
    case supplementaryForMissingSection(kind: String, section: Int, numberOfSections: Int)
    /// A reused view handed in to be configured is not of the type the model's mapping makes
    /// (DTTableViewManager reports a cell of another class than the one registered): it was left as
    /// it was.
    case viewOfWrongType(expected: String, got: String, indexPath: IndexPath)

    /// The kinds of anomaly, for silencing a whole kind.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// ``ListAnomaly/noMapping(modelType:indexPath:kind:)``.
        case noMapping
        /// ``ListAnomaly/reactionForUnmappedModel(event:modelType:)``.
        case reactionForUnmappedModel
        /// ``ListAnomaly/reactionWithoutView(event:viewType:indexPath:)``.
        case reactionWithoutView
        /// ``ListAnomaly/updateAppliedOutOfOrder(update:expected:)``.
        case updateAppliedOutOfOrder
        /// ``ListAnomaly/indexPathOutsideData(_:numberOfSections:)``.
        case indexPathOutsideData
        /// ``ListAnomaly/supplementaryForMissingSection(kind:section:numberOfSections:)``.
        case supplementaryForMissingSection
        /// ``ListAnomaly/viewOfWrongType(expected:got:indexPath:)``.
        case viewOfWrongType
    }

    /// The kind of this anomaly.
    public var kind: Kind {
        switch self {
        case .noMapping: return .noMapping
        case .reactionForUnmappedModel: return .reactionForUnmappedModel
        case .reactionWithoutView: return .reactionWithoutView
        case .updateAppliedOutOfOrder: return .updateAppliedOutOfOrder
        case .indexPathOutsideData: return .indexPathOutsideData
        case .supplementaryForMissingSection: return .supplementaryForMissingSection
        case .viewOfWrongType: return .viewOfWrongType
        }
    }

    /// Where the mistake is, for printing each one once: the model type, view type, event or section
    /// it concerns — not the index path or counts, which change from one occurrence to the next.
    public var site: String {
        switch self {
        case .noMapping(let modelType, _, let kind): return "\(modelType) (\(kind))"
        case .reactionForUnmappedModel(let event, let modelType): return "\(event) for \(modelType)"
        case .reactionWithoutView(let event, let viewType, _): return "\(event) for \(viewType)"
        case .updateAppliedOutOfOrder: return "updates"
        case .indexPathOutsideData(let path, _): return "section \(path.count == 2 ? path.section : -1)"
        case .supplementaryForMissingSection(let kind, let section, _): return "\(kind) of section \(section)"
        case .viewOfWrongType(let expected, let got, _): return "\(got) for \(expected)"
        }
    }

    /// A short form for logs and analytics: the kind and its values.
    public var description: String {
        switch self {
        case .noMapping(let modelType, let path, let kind):
            return "ListAnomaly.noMapping(\(modelType), \(text(path)), \(kind))"
        case .reactionForUnmappedModel(let event, let modelType):
            return "ListAnomaly.reactionForUnmappedModel(\(event), \(modelType))"
        case .reactionWithoutView(let event, let viewType, let path):
            return "ListAnomaly.reactionWithoutView(\(event), \(viewType), \(text(path)))"
        case .updateAppliedOutOfOrder(let update, let expected):
            return "ListAnomaly.updateAppliedOutOfOrder(\(update), expected: \(expected))"
        case .indexPathOutsideData(let path, let sections):
            return "ListAnomaly.indexPathOutsideData(\(text(path)), sections: \(sections))"
        case .supplementaryForMissingSection(let kind, let section, let sections):
            return "ListAnomaly.supplementaryForMissingSection(\(kind), \(section), sections: \(sections))"
        case .viewOfWrongType(let expected, let got, let path):
            return "ListAnomaly.viewOfWrongType(expected: \(expected), got: \(got), \(text(path)))"
        }
    }

    /// What went wrong and what to do about it, in a sentence.
    public var debugDescription: String {
        switch self {
        case .noMapping(let modelType, let path, let kind):
            return
                "no mapping shows a \(modelType) at \(text(path)) (\(kind)): register a view for it, or check the mapping's condition"
        case .reactionForUnmappedModel(let event, let modelType):
            return
                "a \(event) reaction was registered for \(modelType), but no mapping shows that type: it can never run; register a view for \(modelType) first"
        case .reactionWithoutView(let event, let viewType, let path):
            return
                "the \(event) reaction at \(text(path)) takes a \(viewType), but none was passed: it did not run; pass the view, or register the reaction without a view"
        case .updateAppliedOutOfOrder(let update, let expected):
            return
                "update #\(update) was applied while #\(expected) was due: the view's rows no longer match the data; apply each update once, in the order it was delivered, and none after a reload"
        case .indexPathOutsideData(let path, let sections):
            return "index path \(text(path)) names no item (the data has \(sections) sections)"
        case .supplementaryForMissingSection(let kind, let section, let sections):
            return
                "a \(kind) model was asked for section \(section), which does not exist (the data has \(sections) sections)"
        case .viewOfWrongType(let expected, let got, let path):
            return
                "a \(got) was handed in to show the item at \(text(path)), whose mapping makes a \(expected): it was not configured; reuse views of the registered type for each model"
        }
    }

    private func text(_ path: IndexPath) -> String { "[\(path.map(String.init).joined(separator: ", "))]" }
}

/// Receives the ``ListAnomaly``s of one storage or registry.
///
/// By default each anomaly is written to standard error the first time its kind is seen at its
/// ``ListAnomaly/site``. Set ``anomalyAction`` to do something else (fail a test, log to analytics);
/// silence one anomaly, a kind, or every anomaly matching a predicate. Silencing is per handler, so
/// silencing one storage's anomaly does not silence another's. Thread-safe; the action runs on the
/// thread that noticed the anomaly, with no lock held.
public final class AnomalyHandler: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock` (a leaf lock: the action
    // runs after it is released).
    private let lock = NSLock()
    private var label: String
    private var action: ((ListAnomaly) -> Void)?
    private var silencers: [(ListAnomaly) -> Bool] = []
    private var printed = Set<String>()

    /// Makes a handler whose default messages start with `[label]`.
    public init(label: String) { self.label = label }

    /// Names the owner in default messages.
    func rename(_ newLabel: String) { lock.withLock { label = newLabel } }

    /// What to do with an anomaly that is not silenced; nil (the default) prints it once per kind and
    /// site to standard error.
    public var anomalyAction: ((ListAnomaly) -> Void)? {
        get { lock.withLock { action } }
        set { lock.withLock { action = newValue } }
    }

    /// Reports an anomaly: nothing when it is silenced, otherwise ``anomalyAction`` or the default.
    public func report(_ anomaly: ListAnomaly) {
        // The predicates and the action are the app's: they run with no lock held.
        let (silencers, action) = lock.withLock { (self.silencers, self.action) }
        if silencers.contains(where: { $0(anomaly) }) { return }
        if let action {
            action(anomaly)
            return
        }
        let (first, label) = lock.withLock {
            (printed.insert("\(anomaly.kind.rawValue) \(anomaly.site)").inserted, self.label)
        }
        guard first else { return }
        FileHandle.standardError.write(Data("⚠️ [\(label)] \(anomaly.debugDescription)\n".utf8))
    }

    /// Silences exactly this anomaly (its kind and every value equal).
    public func silence(_ anomaly: ListAnomaly) { silence { $0 == anomaly } }

    /// Silences every anomaly of a kind.
    public func silence(_ kind: ListAnomaly.Kind) { silence { $0.kind == kind } }

    /// Silences every anomaly the predicate accepts.
    public func silence(where predicate: @escaping (ListAnomaly) -> Bool) {
        lock.withLock { silencers.append(predicate) }
    }

    /// Ends all silencing and forgets which anomalies were printed.
    public func reset() {
        lock.withLock {
            silencers.removeAll()
            printed.removeAll()
        }
    }
}
