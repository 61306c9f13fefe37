import Foundation
import Testing

/// The "A tour of the LMDB layer" article's example runs as written, in a directory of its own.
@Suite struct ReadmeTourTests {
    @Test func theTourRunsAsWritten() throws {
        let tmp = TemporaryDirectory()
        let result = try Helper.run(["readme-tour", tmp.path])
        #expect(result.status == 0, "\(result.error)")
        #expect(
            result.output.split(separator: "\n") == ["Ada", "[76, 111, 110, 100, 111, 110] [0, 0, 0, 1]"])
        #expect(FileManager.default.fileExists(atPath: tmp.subpath("people-store/data.mdb")))
    }
}
