import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// What a tool gets from `import LodeInspection` beside `import Lode`: the landing page's example, as
/// written, on a store another part of the test wrote.
@Suite struct InspectionModuleTests {
    @Test func theLandingPageExampleReadsAStoreItDidNotWrite() throws {
        let tmp = TemporaryDirectory()
        let url = tmp.url
        let writer = try Store(at: url, types: [Counter.self])
        try writer.write { tx in try tx.insert(Counter(name: "a", value: 1)) }
        writer.close()

        let store = try Store(at: url, configuration: StoreConfiguration(readOnly: true))
        print(try store.fileInfo().usedBytes, try store.readers())
        let report = try store.checkPages()
        let history = try store.inspect { try $0.commits(after: 0) }

        #expect(report.isClean)
        #expect(history.commits.flatMap(\.changes).map(\.type).contains("Counter"))
        #expect(try store.fileInfo().usedBytes > 0)
    }

    @Test func theCodecsComeWithTheInspectionModule() throws {
        let bytes = try CBOREncoder().encode(Counter(name: "b", value: 2))
        #expect(try CBORDecoder().decode(Counter.self, from: bytes) == Counter(name: "b", value: 2))
        #expect(KeyDescription.describe(try KeyEncoder().encode("b")) == "\"b\"")
    }
}
