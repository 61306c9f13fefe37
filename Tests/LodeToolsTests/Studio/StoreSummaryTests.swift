import Foundation
import Lode
import ModelStorage
import StoredQuery
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeStudio
@testable import LodeTestModels
@testable import LodeTestSupport

/// The summary Lode Studio shows, read from a real store without its types.
@Suite struct StoreSummaryTests {
    struct Project: Persistable {
        var id: Int
        var name: String
        static let schema = Schema<Project>(primaryKey: \.id, indexes: [.unique(\.name)])
    }

    @Test func theSummaryNamesTypesCountsIndexesAndReaders() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-summary-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(at: directory, types: [Project.self])
        try store.write { tx in
            for id in 0..<25 { try tx.insert(Project(id: id, name: "p\(id)")) }
        }
        let reader = try Store(atPath: directory.path, configuration: StoreConfiguration(readOnly: true))
        let summary = try StoreSummary.read(reader, path: directory.path)
        #expect(summary.types.map(\.name) == ["Project"])
        let project = try #require(summary.types.first)
        #expect(project.objectCount == 25 && project.primaryKey == "id")
        #expect(project.indexes.map(\.isUnique) == [true] && project.indexes.first?.entryCount == 25)
        #expect(summary.version > 0 && summary.fileBytes > 0 && summary.usedBytes <= summary.mapBytes)
        #expect(summary.readerSlots > 0)
        // It survives a round trip through JSON, as the page receives it.
        let json = try JSONEncoder().encode(summary)
        #expect(try JSONDecoder().decode(StoreSummary.self, from: json) == summary)
    }

    @Test func freePagesAreThoseThePageCheckFindsOnTheFreeList() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "studio-free-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(at: directory, types: [Project.self])
        #expect(try store.freePageCount() == (try Store.checkPages(atPath: directory.path)).freePages)
        // Churn: pages freed by deletes and rewrites go to the free list.
        for round in 0..<6 {
            try store.write { tx in
                for id in 0..<400 {
                    try tx.upsert(
                        Project(id: id, name: "p\(id) round \(round) " + String(repeating: "x", count: 200)))
                }
            }
            try store.write { tx in
                for id in stride(from: round, to: 400, by: 3) { try tx.delete(Project.self, key: id) }
            }
        }
        let free = try store.freePageCount()
        #expect(free > 0)
        #expect(free == (try Store.checkPages(atPath: directory.path)).freePages)
        #expect(try StoreSummary.read(store, path: directory.path).freePages == free)
    }
}
