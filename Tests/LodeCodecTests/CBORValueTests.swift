import Foundation
import Testing

@testable import LodeCodec
@testable import LodeTestSupport

@Suite struct CBORValueTests {
    @Test func recordsDecodeWithoutTheirTypesAndRenderAsJSON() throws {
        let bytes = try CBOREncoder().encode(sampleEverything())
        let value = try CBORValue(decoding: bytes)
        #expect(value["int"] == .unsigned(42))
        #expect(value["small"] == .negative(7))
        #expect(value["optionalAbsent"] == nil)
        let parsed = try JSONSerialization.jsonObject(with: Data(value.json.utf8)) as? [String: Any] ?? [:]
        #expect(parsed["int"] as? Int == 42)
        #expect(parsed["negative"] as? Int == -1_234_567_890_123)
        #expect((parsed["unsigned"] as? NSNumber)?.uint64Value == .max)
        #expect(parsed["double"] as? Double == -0.1)
        #expect(parsed["float"] as? Double == 3.5)
        #expect(parsed["unicode"] as? String == "héllo wörld ✓ 日本 \u{1F600}")
        #expect(parsed["date"] as? String == "2023-11-14T22:13:20.250Z")
        #expect((parsed["preciseDate"] as? String)?.hasPrefix("2025-12-04T") == true)
        #expect(parsed["uuid"] as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(parsed["data"] as? String == "AAEC/w==")
        #expect((parsed["decimal"] as? NSNumber)?.description == "123.45")
        #expect(value["bigDecimal"]?.json == "123456789012345678901234567890.5")
        #expect(value["negativeDecimal"]?.json == "-0.000001")
        #expect(parsed["url"] as? String == "https://example.com/a?b=c")
        #expect((parsed["address"] as? [String: Any])?["city"] as? String == "Springfield")
        #expect(parsed["matrix"] as? [[Int]] == [[1, 2], [], [3]])
        #expect(
            value["shapes"]?.json
                == #"[{"circle":{"radius":2.0}},{"rectangle":{"width":1.0,"height":2.0}},{"labelled":{"_0":"x","_1":3}},{"none":{}}]"#
        )
    }

    @Test func malformedBytesThrowWithTheOffset() throws {
        let good = try CBOREncoder().encode(sampleEverything())
        for length in stride(from: 0, to: good.count, by: 5) {
            #expect(throws: CBORError.self) { try CBORValue(decoding: Array(good.prefix(length))) }
        }
        for position in stride(from: 0, to: good.count, by: 11) {
            var bad = good
            bad[position] = 0xff
            _ = try? CBORValue(decoding: bad)
        }
        #expect(throws: CBORError.self) { try CBORValue(decoding: [0x01, 0x02]) }
        do {
            _ = try CBORValue(decoding: [0x82, 0x01])
            Issue.record("a truncated array decoded")
        } catch {
            #expect(
                "\(error)"
                    == "the CBOR data ends early (at byte 0)",
                "\(error)")
        }
        #expect(try CBORValue(decoding: [0xf9, 0x3c, 0x00]) == .float(1))
        // Indefinite lengths (valid CBOR, never written by Lode) are refused where they are, at any
        // depth: the library's other readers refuse them too (docs/FORMAT.md, "Encoding").
        for (bytes, expected) in [
            ([0x9f, 0x01, 0xff], "an indefinite-length array at byte 0"),
            ([0x82, 0x01, 0x7f, 0x61, 0x61, 0xff], "an indefinite-length text string at byte 2"),
            ([0xa1, 0x61, 0x61, 0x5f, 0x41, 0x00, 0xff], "an indefinite-length byte string at byte 3"),
            ([0xc1, 0xbf, 0xff], "an indefinite-length map at byte 1"),
        ] as [([UInt8], String)] {
            #expect(throws: CBORError(reason: expected + ", a form Lode neither writes nor reads")) {
                try CBORValue(decoding: bytes)
            }
            // Skipping it (a field a type does not know) refuses it as well.
            let skipped = bytes.withUnsafeBytes { buffer -> String in
                var reader = CBORReader(buffer)
                do throws(CBORReader.Failure) {
                    try reader.skipItem()
                    return "skipped"
                } catch {
                    return error.description
                }
            }
            #expect(skipped.hasPrefix(expected), "\(skipped)")
        }
        // A decimal whose mantissa is a negative bignum: -1 - 2^64, exponent -1.
        let bignum: [UInt8] = [0xc4, 0x82, 0x20, 0xc3, 0x49, 0x01] + [UInt8](repeating: 0, count: 8)
        #expect(try CBORValue(decoding: bignum).json == "-1844674407370955161.7")
        // A decimal with a huge exponent (found by the cbor fuzz target, which ran out of memory
        // spelling out its zeros) renders in JSON's exponent form.
        let huge: [UInt8] = [0xc4, 0x82, 0x1b, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x07]
        #expect(try CBORValue(decoding: huge).json == "7e4611686018427387903")
        let tiny: [UInt8] = [0xc4, 0x82, 0x3b, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x07]
        #expect(try CBORValue(decoding: tiny).json == "7e-4611686018427387904")
        #expect(
            try CBORValue(decoding: [0xc4, 0x82, 0x18, 0x40, 0x07]).json == "7"
                + String(repeating: "0", count: 64))
        // Maps keyed by maps, nested (found by the cbor fuzz target: quoting each level's key doubled
        // its escapes) are arrays of pairs, linear in the input.
        var nested = [UInt8](repeating: 0xa1, count: 40)
        nested += [0x01, 0x02] + [UInt8](repeating: 0x03, count: 39)
        let rendered = try CBORValue(decoding: nested).json
        #expect(rendered.count < 1_000, "\(rendered.count) characters")
        #expect(try CBORValue(decoding: [0xa1, 0xa1, 0x01, 0x02, 0x03]).json == "[[{\"1\":2},3]]")
        #expect(try CBORValue(decoding: [0xa1, 0x01, 0x02]).json == "{\"1\":2}")
        // Exponents beyond Int's range (a Double conversion once trapped on them).
        let largest: [UInt8] = [0xc4, 0x82, 0x1b] + [UInt8](repeating: 0xff, count: 8) + [0x07]
        #expect(try CBORValue(decoding: largest).json == "7e18446744073709551615")
        let smallest: [UInt8] = [0xc4, 0x82, 0x3b] + [UInt8](repeating: 0xff, count: 8) + [0x07]
        #expect(try CBORValue(decoding: smallest).json == "7e-18446744073709551616")
    }
}
