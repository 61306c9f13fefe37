import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct CodecTests {
    @Test func everythingRoundTrips() throws {
        let value = sampleEverything()
        let bytes = try CBOREncoder().encode(value)
        let decoded = try CBORDecoder().decode(Everything.self, from: bytes)
        #expect(decoded == value)
    }

    /// The extremes of every integer width round-trip; `Int64.min` (CBOR's negative argument
    /// `Int64.max`) was refused as "does not fit" until the links work's key tests found it.
    @Test func integerExtremesRoundTrip() throws {
        struct Extremes: Codable, Equatable {
            var values: [Int64]
            var unsigned: [UInt64]
            var small: [Int8]
        }
        let value = Extremes(
            values: [Int64.min, Int64.min + 1, -1, 0, Int64.max],
            unsigned: [0, UInt64(Int64.max) + 1, UInt64.max],
            small: [Int8.min, Int8.max])
        #expect(try CBORDecoder().decode(Extremes.self, from: try CBOREncoder().encode(value)) == value)
    }

    @Test func recordsAreMapsKeyedByFieldName() throws {
        let bytes = try CBOREncoder().encode(Address(street: "s", city: "c", zip: 5))
        // a3 (map of 3) 66 "street" 61 "s" 64 "city" 61 "c" 63 "zip" 05
        #expect(
            bytes == [0xa3, 0x66] + Array("street".utf8) + [0x61, 0x73, 0x64] + Array("city".utf8) + [
                0x61, 0x63, 0x63,
            ] + Array("zip".utf8) + [0x05])
    }

    @Test func largeContainersGetLongHeads() throws {
        let big = Array(0..<1000)
        let bytes = try CBOREncoder().encode(big)
        #expect(bytes.prefix(3) == [0x99, 0x03, 0xe8])
        #expect(try CBORDecoder().decode([Int].self, from: bytes) == big)
        let map = Dictionary(uniqueKeysWithValues: (0..<30).map { ("k\($0)", $0) })
        #expect(try CBORDecoder().decode([String: Int].self, from: try CBOREncoder().encode(map)) == map)
    }

    @Test func textIsValidatedAsUTF8() throws {
        // ASCII, multi-byte text, and bytes that are not UTF-8 (a lone continuation byte, a truncated
        // sequence, an overlong encoding) in a text string.
        #expect(try CBORDecoder().decode(String.self, from: [0x63] + Array("abc".utf8)) == "abc")
        let accented = "é, 日本, 🙂"
        #expect(
            try CBORDecoder().decode(
                String.self, from: [0x60 | UInt8(accented.utf8.count)] + Array(accented.utf8))
                == accented)
        for invalid: [UInt8] in [[0x80], [0x61, 0xe6, 0x97], [0xc0, 0xaf], [0x61, 0xff]] {
            #expect(throws: DecodingError.self, "\(invalid)") {
                try CBORDecoder().decode(String.self, from: [0x60 | UInt8(invalid.count)] + invalid)
            }
        }
    }

    @Test func oneDecodingStateServesManyRecordsOfAnyShape() throws {
        struct Small: Codable, Equatable {
            var a: Int
        }
        struct Wide: Codable, Equatable {
            var a: Int
            var b: String
            var c: [Int]
            var d: Small
            var e: Double?
        }
        let encoder = CBOREncoder()
        let small = try encoder.encode(Small(a: 1))
        let wide = try encoder.encode(Wide(a: 2, b: "two", c: [1, 2], d: Small(a: 3), e: nil))
        let number = try encoder.encode(42)
        let state = CBORDecodingState()
        func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
            try bytes.withUnsafeBytes { try CBORDecoder().decode(T.self, from: $0, state: state) }
        }
        // Small then wide (the frame table is reused), a non-map root, a failure in between, and
        // trailing bytes are still refused.
        for _ in 0..<3 {
            #expect(try decode(Small.self, small) == Small(a: 1))
            #expect(try decode(Wide.self, wide) == Wide(a: 2, b: "two", c: [1, 2], d: Small(a: 3), e: nil))
            #expect(try decode(Int.self, number) == 42)
            #expect(throws: DecodingError.self) { try decode(Wide.self, small) }
            #expect(throws: DecodingError.self) { try decode(Small.self, small + [0]) }
            #expect(throws: DecodingError.self) { try decode(Small.self, Array(wide.dropLast())) }
            #expect(try decode(Small.self, small) == Small(a: 1))
        }
    }

    @Test func malformedInputThrowsInsteadOfTrapping() throws {
        let good = try CBOREncoder().encode(sampleEverything())
        // Every truncation and a sweep of corrupted bytes: errors, never a crash.
        for length in stride(from: 0, to: good.count, by: 7) {
            #expect(throws: (any Error).self) {
                try CBORDecoder().decode(Everything.self, from: Array(good.prefix(length)))
            }
        }
        for position in stride(from: 0, to: good.count, by: 13) {
            var bad = good
            bad[position] = 0xff
            _ = try? CBORDecoder().decode(Everything.self, from: bad)
            bad[position] = 0x1f
            _ = try? CBORDecoder().decode(Everything.self, from: bad)
        }
        #expect(throws: (any Error).self) { try CBORDecoder().decode(Int.self, from: [0x01, 0x02]) }
    }

    @Test func anIndependentDecoderReadsRecords() throws {
        let tmp = TemporaryDirectory()
        let file = tmp.url.appendingPathComponent("record.cbor")
        try Data(try CBOREncoder().encode(sampleEverything())).write(to: file)
        let script = """
            import cbor2, sys, json, uuid, datetime, decimal
            v = cbor2.loads(open(sys.argv[1], 'rb').read())
            out = {
              'int': v['int'], 'negative': v['negative'], 'unsigned': v['unsigned'], 'double': v['double'],
              'unicode': v['unicode'], 'absent': 'optionalAbsent' in v,
              'date': v['date'].isoformat(), 'uuid': str(v['uuid']), 'data': list(v['data']),
              'decimal': str(v['decimal']), 'bigDecimal': str(v['bigDecimal']), 'negativeDecimal': str(v['negativeDecimal']),
              'city': v['address']['city'], 'matrix': v['matrix'], 'dictionary': v['dictionary'],
              'shape': v['shapes'][1], 'status': v['status'],
              'url': str(getattr(v['url'], 'value', v['url'])), 'urlTag': getattr(v['url'], 'tag', 32),
            }
            print(json.dumps(out, sort_keys=True))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, file.path]
        let pipe = Pipe()
        let errors = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(errorText)")
        let json = try JSONSerialization.jsonObject(with: output) as? [String: Any] ?? [:]
        #expect(json["int"] as? Int == 42)
        #expect(json["negative"] as? Int == -1_234_567_890_123)
        #expect((json["unsigned"] as? NSNumber)?.uint64Value == UInt64.max)
        #expect(json["double"] as? Double == -0.1)
        #expect(json["unicode"] as? String == "héllo wörld ✓ 日本 \u{1F600}")
        #expect(json["absent"] as? Bool == false)
        #expect(json["date"] as? String == "2023-11-14T22:13:20.250000+00:00")
        #expect(json["uuid"] as? String == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        #expect(json["data"] as? [Int] == [0, 1, 2, 255])
        #expect(json["decimal"] as? String == "123.45")
        #expect(json["bigDecimal"] as? String == "123456789012345678901234567890.5")
        #expect(json["negativeDecimal"] as? String == "-0.000001")
        #expect(json["city"] as? String == "Springfield")
        #expect(json["matrix"] as? [[Int]] == [[1, 2], [], [3]])
        #expect(json["dictionary"] as? [String: Int] == ["a": 1, "b": 2])
        #expect(json["shape"] as? [String: [String: Double]] == ["rectangle": ["width": 1, "height": 2]])
        #expect(json["status"] as? String == "doing")
        #expect(json["url"] as? String == "https://example.com/a?b=c")
        #expect(json["urlTag"] as? Int == 32)
    }
}
