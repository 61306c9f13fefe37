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

@Suite struct CatalogSyncTests {
    let tmp = TemporaryDirectory()

    @Test func aTypeAddedByAnotherProcessAfterAnEmptyWriteIsReadable() throws {
        // An export with a type this store does not have.
        let source = tmp.url.appendingPathComponent("source")
        let other = try Store(at: source, types: [Counter.self])
        try other.write { tx in try tx.insert(Counter(name: "elsewhere", value: 7)) }
        other.close()
        let export = try ToolProcess(["export", source.path], tool: "lode-dump").finish()
        #expect(export.status == 0)
        let exportFile = tmp.url.appendingPathComponent("export.ndjson")
        try Data(export.out.utf8).write(to: exportFile)

        let path = tmp.url.appendingPathComponent("store")
        let store = try Store(at: path, types: [Shipment.self])
        try store.write { tx in try tx.insert(contentsOf: ExportTests().shipments(2)) }
        // A write that changes nothing commits no version: the next version will be another process's.
        try store.write { _ in }
        let load = Process()
        load.executableURL = URL(fileURLWithPath: builtTool("lode-dump"))
        load.arguments = ["load", path.path, "--force"]
        load.standardInput = try FileHandle(forReadingFrom: exportFile)
        try load.run()
        load.waitUntilExit()
        #expect(load.terminationStatus == 0)
        let records = try store.read { tx in try tx.storedRecords(of: "Counter") }
        #expect(records.count == 1, "the other process's new type is open to this store's transactions")
        #expect(try store.read { tx in try tx.object(Counter.self, key: "elsewhere") }?.value == 7)
        store.close()
    }
}
