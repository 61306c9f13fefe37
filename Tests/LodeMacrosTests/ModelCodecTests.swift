import Foundation
import LodeCodec
import Lode
import LodeMacros
import Testing

@Suite struct ModelCodecTests {
    @Test func aGeneratedRecordIsTheCodableRecord() throws {
        let object = Everything.sample(1)
        let generated = try object.encodeRecord()
        let codable = try CBOREncoder().encodeRecord(object)
        #expect(generated.bytes == codable.bytes)
        _ = codable.shape
        // The shape is a memo of shapes seen: the same for records of the same fields and kinds.
        #expect(try Everything.sample(3).encodeRecord().shape == generated.shape)
        #expect(try Everything.sample(2).encodeRecord().shape != generated.shape, "sample 2 has no note")
        let back = try generated.bytes.withUnsafeBytes { try Everything.decodeRecord($0) }
        #expect(back == object)
    }
}

extension Everything {
    static func sample(_ n: Int) -> Everything {
        Everything(
            id: UUID(), title: "title \(n)", stage: .doing, count: n, small: -3, unsigned: 1 << 40,
            ratio: 0.25,
            single: 1.5, flag: true, when: Date(timeIntervalSince1970: 1_700_000_000.5),
            blob: Data([1, 2, 3]),
            link: URL(string: "https://example.com/\(n)")!, note: n % 2 == 0 ? nil : "note",
            tags: ["a", "b"],
            scores: [3], byName: ["x": 1], byNumber: [1: "one"], address: Address(city: "Oslo", zip: nil),
            previous: nil, maybeStage: .done, priority: 2, project: try? Link(key: 7),
            related: [try! Link(key: 1), try! Link(key: 2)])
    }
}
