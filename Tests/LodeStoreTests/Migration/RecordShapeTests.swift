import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct RecordShapeTests {
    /// The shapes the check at open reads from stored records survive damaged bytes: counts larger
    /// than the record, deep nesting, truncation.
    @Test func shapesOfDamagedRecordsDoNotCrash() {
        var deepTags = [UInt8](repeating: 0xc6, count: 100_000)  // tag 6, nested
        deepTags.append(0x01)
        let inputs: [[UInt8]] = [
            [0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],  // a map of 2^64-1 entries
            [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],  // an array of 2^64-1 items
            [0xa2, 0x61, 0x61],  // cut short
            deepTags,
            [UInt8](repeating: 0x81, count: 100_000),  // arrays in arrays
            [],
        ]
        for input in inputs {
            _ = input.withUnsafeBytes { RecordShape.of($0) }
            _ = input.withUnsafeBytes { RecordNames.shape(of: $0) }
        }
        let record = try! CBOREncoder().encode(ContactV1(id: 1, name: "a", email: "b", city: "c", age: "d"))
        let other = try! CBOREncoder().encode(ContactWithoutAge(id: 1, name: "a", email: "b", city: "c"))
        #expect(record.withUnsafeBytes { RecordShape.of($0) } != other.withUnsafeBytes { RecordShape.of($0) })
    }
}
