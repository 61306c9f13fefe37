import Foundation
import ModelStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every anomaly kind, provoked for real, and the handler's reporting, silencing and printing.
@Suite struct AnomalyTests {
    final class NumberCell: ModelTransfer {
        var number: Int?
        func update(with model: Int) { number = model }
    }

    @Test func aViewApplyingUpdatesOutOfOrderIsReportedAndNeverTakesItsDataBack() throws {
        let storage = MemoryStorage()
        let log = AnomalyLog(storage.anomalyHandler)
        let view = HoldingDelegate()
        storage.delegate = view
        storage.addItem(1)
        storage.addItem(2)
        storage.addItem(3)
        let (first, second, third) = (view.held[0], view.held[1], view.held[2])
        second.applyDeferredDatasourceUpdates()  // #1 skipped
        #expect(log.anomalies == [.updateAppliedOutOfOrder(update: 2, expected: 1)])
        #expect(storage.numberOfItems(inSection: 0) == 2)
        first.applyDeferredDatasourceUpdates()  // an older one, late
        #expect(log.anomalies.last == .updateAppliedOutOfOrder(update: 1, expected: 3))
        #expect(storage.numberOfItems(inSection: 0) == 2)
        third.applyDeferredDatasourceUpdates()  // the one due
        #expect(log.anomalies.count == 2)
        #expect((0..<3).map { storage.item(at: ip($0, 0)) as? Int } == [1, 2, 3])
    }

    /// The single-section and snapshot storages follow the same order: a late update used to take
    /// their data-source rows back to its version.
    @Test func everyStorageKeepsTheNewestAppliedUpdate() throws {
        struct Item: Equatable, Hashable, EntityIdentifiable {
            var id: Int
            var identifier: AnyHashable { id }
        }
        let single = SingleSectionHashableStorage<Item>()
        let singleLog = AnomalyLog(single.anomalyHandler)
        let singleView = HoldingDelegate()
        single.delegate = singleView
        single.setItems([Item(id: 1)])
        single.setItems([Item(id: 1), Item(id: 2)])
        single.setItems([Item(id: 1), Item(id: 2)])  // no change while one is held: nothing shows early
        #expect(single.numberOfItems(inSection: 0) == 0)
        singleView.held[1].applyDeferredDatasourceUpdates()
        singleView.held[0].applyDeferredDatasourceUpdates()
        #expect(single.numberOfItems(inSection: 0) == 2)
        #expect(
            singleLog.anomalies == [
                .updateAppliedOutOfOrder(update: 2, expected: 1),
                .updateAppliedOutOfOrder(update: 1, expected: 3),
            ])

        let snapshots = SnapshotStorage<String, Int>()
        let snapshotLog = AnomalyLog(snapshots.anomalyHandler)
        let snapshotView = HoldingDelegate()
        snapshots.delegate = snapshotView
        var snapshot = Snapshot<String, Int>()
        try snapshot.appendSections(["a"])
        try snapshot.appendItems([1, 2])
        snapshots.apply(snapshot)
        try snapshot.deleteItems([1])
        snapshots.apply(snapshot)
        snapshotView.held[1].applyDeferredDatasourceUpdates()
        snapshotView.held[0].applyDeferredDatasourceUpdates()
        #expect(snapshots.numberOfItems(inSection: 0) == 1)
        #expect(snapshotLog.anomalies.last == .updateAppliedOutOfOrder(update: 1, expected: 3))
    }

    @Test func aModelWithNoMappingIsReportedWhereverItIsUsed() {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        registry.register(NumberCell.self, make: NumberCell.init)
        let storage = MemoryStorage()
        storage.addItems([1, 2])
        storage.addItem("text", toSection: 1)
        #expect(registry.makeView(forItemAt: ip(0, 1), in: storage) == nil)
        #expect(!registry.configure(NumberCell(), with: 2.5, at: ip(3, 0)))
        #expect(!registry.handle(.select, at: ip(0, 1), in: storage))
        #expect(registry.answer(.height, at: ip(0, 1), in: storage) == nil)
        #expect(
            log.anomalies == [
                .noMapping(modelType: "String", indexPath: ip(0, 1), kind: .cell),
                .noMapping(modelType: "Double", indexPath: ip(3, 0), kind: .cell),
                .noMapping(modelType: "String", indexPath: ip(0, 1), kind: .cell),
                .noMapping(modelType: "String", indexPath: ip(0, 1), kind: .cell),
            ])
        // A plain lookup is a question, not a mistake.
        #expect(registry.mapping(for: "text", at: ip(0, 1)) == nil)
        #expect(log.anomalies.count == 4)
    }

    @Test func anIndexPathOutsideTheDataIsReported() {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        registry.register(NumberCell.self, make: NumberCell.init)
        let manager = ListManager(registry: registry)
        manager.memoryStorage?.addItems([1, 2])
        #expect(manager.makeView(forItemAt: ip(2, 0)) == nil)
        #expect(!manager.handle(.select, at: ip(0, 4)))
        #expect(manager.answer(.height, at: ip(0, 1)) == nil)
        #expect(
            log.anomalies == [
                .indexPathOutsideData(ip(2, 0), numberOfSections: 1),
                .indexPathOutsideData(ip(0, 4), numberOfSections: 1),
                .indexPathOutsideData(ip(0, 1), numberOfSections: 1),
            ])
    }

    @Test func aReactionNoMappingCanRunIsReportedWhenRegistered() {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        registry.register(NumberCell.self, make: NumberCell.init)
        registry.on(.select, for: Int.self) { _, _ in }
        #expect(log.anomalies.isEmpty)
        registry.on(.select, for: String.self) { _, _ in }
        registry.on(.deselect, for: Int.self, kind: .header) { _, _ in }
        #expect(
            log.anomalies == [
                .reactionForUnmappedModel(event: "select", modelType: "String"),
                .reactionForUnmappedModel(event: "deselect", modelType: "Int"),
            ])
    }

    @Test func aReactionThatNeedsTheViewIsReportedWhenDispatchedWithoutIt() {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        registry.register(NumberCell.self, make: NumberCell.init) { mapping in
            mapping.didSelect { _, _, _ in }
            mapping.answer(.height) { cell, number, _ in Double(cell.number ?? number) }
        }
        let storage = MemoryStorage()
        storage.addItem(7)
        #expect(!registry.handle(.select, at: ip(0, 0), in: storage, view: NSObject()))
        #expect(registry.answer(.height, at: ip(0, 0), in: storage) == nil)
        let viewType = "\(NumberCell.self)"
        #expect(
            log.anomalies == [
                .reactionWithoutView(event: "select", viewType: viewType, indexPath: ip(0, 0)),
                .reactionWithoutView(event: "height", viewType: viewType, indexPath: ip(0, 0)),
            ])
    }

    @Test func aSupplementaryModelForASectionThatDoesNotExistIsReported() {
        let storage = MemoryStorage()
        let log = AnomalyLog(storage.anomalyHandler)
        storage.addItems([1])
        storage.setSectionHeaderModels(["A", "B"])
        #expect(storage.header(for: 0) as? String == "A")
        #expect(storage.header(for: 1) as? String == "B")  // the provider answers; no section 1
        #expect(storage.footerModel(forSection: -1) == nil)
        #expect(storage.supplementaryModel(ofKind: "badge", forSectionAt: ip(0, 3)) == nil)
        #expect(
            log.anomalies == [
                .supplementaryForMissingSection(
                    kind: SupplementaryKind.tableHeader, section: 1, numberOfSections: 1),
                .supplementaryForMissingSection(
                    kind: SupplementaryKind.tableFooter, section: -1, numberOfSections: 1),
                .supplementaryForMissingSection(kind: "badge", section: 3, numberOfSections: 1),
            ])
    }

    @Test func silencingOneCaseSilencesThoseValuesOnlyAndOnlyInItsStorage() {
        let first = MemoryStorage()
        let second = MemoryStorage()
        let firstLog = AnomalyLog(first.anomalyHandler)
        let secondLog = AnomalyLog(second.anomalyHandler)
        first.anomalyHandler.silence(
            .supplementaryForMissingSection(
                kind: SupplementaryKind.tableHeader, section: 2, numberOfSections: 0))
        for storage in [first, second] {
            _ = storage.headerModel(forSection: 2)
            _ = storage.headerModel(forSection: 3)
        }
        #expect(
            firstLog.anomalies == [
                .supplementaryForMissingSection(
                    kind: SupplementaryKind.tableHeader, section: 3, numberOfSections: 0)
            ])
        #expect(secondLog.anomalies.count == 2)
    }

    @Test func silencingAKindOrAPredicate() {
        let registry = ViewModelMappingRegistry()
        let log = AnomalyLog(registry.anomalyHandler)
        let storage = MemoryStorage()
        storage.addItems([1, 2.5] as [Any])
        registry.anomalyHandler.silence(where: { anomaly in
            if case .noMapping(let type, _, _) = anomaly { return type == "Int" }
            return false
        })
        _ = registry.makeView(forItemAt: ip(0, 0), in: storage)
        _ = registry.makeView(forItemAt: ip(1, 0), in: storage)
        _ = registry.makeView(forItemAt: ip(5, 0), in: storage)
        #expect(log.kinds == [.noMapping, .indexPathOutsideData])
        registry.anomalyHandler.silence(.indexPathOutsideData)
        _ = registry.makeView(forItemAt: ip(6, 0), in: storage)
        _ = registry.makeView(forItemAt: ip(1, 0), in: storage)
        #expect(log.kinds == [.noMapping, .indexPathOutsideData, .noMapping])
        registry.anomalyHandler.reset()
        _ = registry.makeView(forItemAt: ip(0, 0), in: storage)
        #expect(log.anomalies.last == .noMapping(modelType: "Int", indexPath: ip(0, 0), kind: .cell))
    }

    @Test func theDefaultHandlerPrintsEachKindOncePerSiteToStandardError() throws {
        let label = "anomaly-print-\(UUID().uuidString)"
        let handler = AnomalyHandler(label: label)
        let printed = try capturingStandardError {
            handler.report(.noMapping(modelType: "Int", indexPath: ip(0, 0), kind: .cell))
            handler.report(.noMapping(modelType: "Int", indexPath: ip(5, 2), kind: .cell))  // same site
            handler.report(.noMapping(modelType: "Int", indexPath: ip(0, 0), kind: .header))  // another
            handler.report(.updateAppliedOutOfOrder(update: 3, expected: 2))
            handler.report(.updateAppliedOutOfOrder(update: 4, expected: 2))
        }
        let lines = printed.split(separator: "\n").filter { $0.contains(label) }
        #expect(lines.count == 3)
        #expect(
            lines.first
                == "⚠️ [\(label)] no mapping shows a Int at [0, 0] (cell): register a view for it, or check the mapping's condition"
        )
        #expect(lines.last?.contains("update #3 was applied while #2 was due") == true)
    }

    @Test func aStoragesDefaultMessagesNameItsType() throws {
        let storage = MemoryStorage()
        let printed = try capturingStandardError {
            _ = storage.headerModel(forSection: 9)
        }
        #expect(
            printed.contains(
                "⚠️ [MemoryStorage] a DTTableViewElementSectionHeader model was asked for section 9, which does not exist (the data has 0 sections)"
            ))
        #expect(
            ListAnomaly.supplementaryForMissingSection(kind: "h", section: 9, numberOfSections: 0).description
                == "ListAnomaly.supplementaryForMissingSection(h, 9, sections: 0)")
    }
}

/// Runs `body` with standard error going to a file, and returns what was written. Other tests running
/// meanwhile may write there too: look for your own lines.
func capturingStandardError(_ body: () -> Void) throws -> String { try capturing(descriptor: 2, body) }

/// Runs `body` with standard output going to a file (see ``capturingStandardError(_:)``).
func capturingStandardOutput(_ body: () -> Void) throws -> String {
    try capturing(descriptor: 1) {
        body()
        fflush(nil)
    }
}

/// One capture at a time in the whole process: tests run in parallel, and two captures redirecting
/// the same descriptor at once would restore each other's copy (a nested capture of another
/// descriptor on the same thread is fine, hence a recursive lock).
private let captureLock = NSRecursiveLock()

private func capturing(descriptor: Int32, _ body: () -> Void) throws -> String {
    captureLock.lock()
    defer { captureLock.unlock() }
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: url) }
    let file = try FileHandle(forWritingTo: url)
    fflush(nil)
    let saved = dup(descriptor)
    dup2(file.fileDescriptor, descriptor)
    body()
    dup2(saved, descriptor)
    close(saved)
    try file.close()
    return try String(contentsOf: url, encoding: .utf8)
}
