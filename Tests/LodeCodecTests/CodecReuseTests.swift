import Foundation
import Testing

@testable import LodeCodec
@testable import LodeTestSupport

/// The coders reuse one state per thread (its buffers, its table of maps and the record containers
/// of the types it has seen): these check that nothing of one encode or decode leaks into another.
struct CodecReuseTests {
    struct Inner: Codable, Equatable {
        var name: String
        var count: Int
    }

    /// A type whose coding runs another encode or decode on the same thread, in the middle of its own.
    struct Nesting: Codable, Equatable {
        var before: String
        var blob: [UInt8]
        var after: Int

        enum CodingKeys: String, CodingKey { case before, blob, after }

        init(before: String, blob: [UInt8], after: Int) {
            (self.before, self.blob, self.after) = (before, blob, after)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(before, forKey: .before)
            // The inner value's bytes, made by a second encode while the first is half written.
            let inner = try CBOREncoder().encode(Inner(name: before + "!", count: after))
            try container.encode(Data(inner), forKey: .blob)
            try container.encode(after, forKey: .after)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            before = try container.decode(String.self, forKey: .before)
            let data = try container.decode(Data.self, forKey: .blob)
            // A second decode while the first is between two fields.
            let inner = try CBORDecoder().decode(Inner.self, from: Array(data))
            blob = Array(data)
            after = try container.decode(Int.self, forKey: .after)
            guard inner == Inner(name: before + "!", count: after) else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "inner \(inner)"))
            }
        }
    }

    struct Failing: Encodable {
        struct Refused: Error {}
        var first: String
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(first, forKey: .first)
            var nested = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .second)
            try nested.encode(first, forKey: .first)
            throw Refused()
        }
        enum CodingKeys: String, CodingKey { case first, second }
    }

    struct Optionals: Codable, Equatable {
        var a: Int?
        var b: String?
        var c: Double?
        var d: Bool?
        var e: Inner?
        var f: [Int]?
    }

    @Test func anEncodeOrDecodeInsideAnotherLeavesTheOuterOneWhole() throws {
        let value = Nesting(before: "outer", blob: [], after: 7)
        let bytes = try CBOREncoder().encode(value)
        let decoded = try CBORDecoder().decode(Nesting.self, from: bytes)
        #expect(decoded.before == "outer" && decoded.after == 7)
        #expect(try CBORDecoder().decode(Inner.self, from: decoded.blob) == Inner(name: "outer!", count: 7))
        // The record form (with its shape) too, and the same type again with the thread's state warm.
        let record = try CBOREncoder().encodeRecord(value)
        #expect(record.bytes == bytes)
        #expect(try CBORDecoder().decode(Nesting.self, from: record.bytes) == decoded)
    }

    @Test func aFailedEncodeOrDecodeLeavesNothingForTheNextOne() throws {
        #expect(throws: Failing.Refused.self) { try CBOREncoder().encode(Failing(first: "x")) }
        let inner = Inner(name: "after the failure", count: 3)
        let bytes = try CBOREncoder().encode(inner)
        #expect(
            bytes
                == CBORValue.map([
                    .init(key: .text("name"), value: .text("after the failure")),
                    .init(key: .text("count"), value: .unsigned(3)),
                ]).encoded)
        // A decode that fails half way (a truncated record), then a good one.
        #expect(throws: DecodingError.self) {
            try CBORDecoder().decode(Inner.self, from: Array(bytes.dropLast(2)))
        }
        #expect(try CBORDecoder().decode(Inner.self, from: bytes) == inner)
        // The shape of a record is its own, not the sum of the failed encode's and its own.
        let again = try CBOREncoder().encodeRecord(inner)
        #expect(again.shape == (try CBOREncoder().encodeRecord(inner)).shape)
        #expect(again.shape != (try CBOREncoder().encodeRecord(Optionals(a: 1))).shape)
    }

    @Test func optionalFieldsDecodeInAnyOrderPresentAbsentOrNull() throws {
        let full = Optionals(a: 1, b: "b", c: 2.5, d: true, e: Inner(name: "e", count: 5), f: [1, 2])
        #expect(try CBORDecoder().decode(Optionals.self, from: CBOREncoder().encode(full)) == full)
        #expect(
            try CBORDecoder().decode(Optionals.self, from: CBOREncoder().encode(Optionals())) == Optionals())
        // Written in reverse order, some null, some missing: each found by walking on and wrapping round.
        let reversed = CBORValue.map([
            .init(key: .text("f"), value: .array([.unsigned(9)])), .init(key: .text("e"), value: .null),
            .init(key: .text("d"), value: .bool(false)), .init(key: .text("b"), value: .text("bee")),
            .init(key: .text("a"), value: .negative(4)),
        ])
        let decoded = try CBORDecoder().decode(Optionals.self, from: reversed.encoded)
        #expect(decoded == Optionals(a: -5, b: "bee", c: nil, d: false, e: nil, f: [9]))
    }

    @Test func threadsDecodeAndEncodeAtOnceEachWithItsOwnState() async throws {
        let inners = (0..<200).map { Inner(name: "inner \($0)", count: $0) }
        let records = try inners.map { try CBOREncoder().encode($0) }
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var bad = 0
                    for round in 0..<50 {
                        for index in stride(from: (worker + round) % 7, to: inners.count, by: 7) {
                            let decoded = try? CBORDecoder().decode(Inner.self, from: records[index])
                            let encoded = try? CBOREncoder().encode(inners[index])
                            if decoded != inners[index] || encoded != records[index] { bad += 1 }
                        }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    final class WeakStates: @unchecked Sendable {  // written by one thread, read after it ended
        weak var decoding: CBORDecodingState?
        weak var encoding: CBOREncodingState?
    }

    /// A thread's states (and the record containers they keep, which hold them) are freed when the
    /// thread ends: threads come and go, the memory must not stay behind.
    @Test func aThreadsStatesAreFreedWhenItEnds() throws {
        let states = WeakStates()
        let record = try CBOREncoder().encode(Inner(name: "x", count: 1))
        let thread = Thread {
            _ = try? CBOREncoder().encodeRecord(Inner(name: "y", count: 2))
            _ = try? CBORDecoder().decode(Inner.self, from: record)
            let decoding = CBORDecodingState.borrow()
            let encoding = CBOREncodingState.borrow(tracksShape: false)
            (states.decoding, states.encoding) = (decoding, encoding)
            #expect(decoding.storage.pointee.rootContainers.count == 1)
            #expect(encoding.storage.pointee.rootContainers.count == 1)
            decoding.giveBack()
            encoding.giveBack()
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while (states.decoding != nil || states.encoding != nil || !thread.isFinished) && Date() < deadline {
            usleep(10_000)
        }
        #expect(states.decoding == nil && states.encoding == nil)
    }
}
