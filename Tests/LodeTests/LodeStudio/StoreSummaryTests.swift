import Foundation
import Lode
import Testing

@testable import LodeStudio

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
}
