import Foundation
import Testing

@testable import LodeCodec
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestSupport

/// The exchange path's two converters: a record's JSON written without the app's type reads back
/// through Foundation's decoder as the object (what a client of an earlier Lode reads), a row written
/// by Foundation's encoder (such a client's upload) reads through the JSON reader and the type as the
/// object, and both round trips keep every value; malformed JSON is refused with where and why.
@Suite struct RecordJSONTests {
    struct Point: Codable, Equatable {
        var x: Double
        var label: String?
    }

    struct Rich: Codable, Equatable {
        var id: UUID
        var when: Date
        var blob: Data
        var link: URL
        var amount: Decimal
        var ratio: Double
        var small: Float
        var count: Int
        var big: UInt64
        var negative: Int64
        var flag: Bool
        var note: String?
        var tags: [String]
        var nested: Point
        var points: [Point]
        var byName: [String: Int]
        var empty: [Int]
    }

    static func sample(_ seed: Int) -> Rich {
        var random = SeededGenerator(seed: UInt64(seed))
        func text() -> String {
            let pieces = [
                "plain", "quote \" and \\ back", "tab\tnew\nline", "\u{1}control", "é ü 中文 🎉", "", "/",
            ]
            return pieces.randomElement(using: &random)! + String(Int.random(in: 0..<100, using: &random))
        }
        return Rich(
            id: UUID(), when: Date(timeIntervalSince1970: Double.random(in: -1e9...2e9, using: &random)),
            blob: Data(
                (0..<Int.random(in: 0..<40, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }),
            link: URL(string: "https://example.org/a?b=\(seed)")!,
            amount: Decimal(Int.random(in: -100_000...100_000, using: &random)) / 100,
            ratio: [0.1, -2.5e-300, 1e300, 3.0, Double.random(in: -1...1, using: &random)].randomElement(
                using: &random)!,
            small: Float.random(in: -1000...1000, using: &random),
            count: Int.random(in: Int.min...Int.max, using: &random),
            big: UInt64.random(in: 0...UInt64.max, using: &random), negative: Int64.min + Int64(seed),
            flag: Bool.random(using: &random), note: Bool.random(using: &random) ? text() : nil,
            tags: (0..<Int.random(in: 0..<4, using: &random)).map { _ in text() },
            nested: Point(x: Double(seed), label: text()),
            points: (0..<Int.random(in: 0..<3, using: &random)).map { Point(x: Double($0) / 3, label: nil) },
            byName: [text(): seed, "b": -seed], empty: [])
    }

    /// The record of `json` read by the JSON reader.
    func record(_ json: String) throws -> [UInt8] {
        var writer = CBORWriter()
        var json = json
        try json.withUTF8 { try JSONRecordReader.convert(UnsafeRawBufferPointer($0), into: &writer) }
        return writer.bytes
    }

    @Test func aRecordsJSONReadsBackAsTheObjectBothWays() throws {
        for seed in 0..<200 {
            let object = Self.sample(seed)
            let stored = try CBOREncoder().encode(object)
            let json = try stored.withUnsafeBytes { try RecordJSONWriter.json($0) }
            // A client of an earlier Lode reads it with Foundation's decoder.
            #expect(try SyncJSON.decoder().decode(Rich.self, from: Data(json.utf8)) == object, "\(json)")
            // And this one with the JSON reader and the type.
            let back = try record(json)
            let read = try back.withUnsafeBytes { bytes in
                try JSONForms.accepting { try CBORDecoder().decode(Rich.self, from: bytes) }
            }
            #expect(read == object, "\(json)")
            // Such a client's upload, written by Foundation's encoder, reads the same way.
            let foundation = String(decoding: try SyncJSON.encoder().encode(object), as: UTF8.self)
            let fromFoundation = try record(foundation).withUnsafeBytes { bytes in
                try JSONForms.accepting { try CBORDecoder().decode(Rich.self, from: bytes) }
            }
            #expect(fromFoundation == object, "\(foundation)")
        }
    }

    @Test func theJSONFormsAreReadOnlyWhereAsked() throws {
        let json = #"{"id":"0C2D1A4E-8F1B-4C3D-9E2F-1A2B3C4D5E6F","when":1700000000.5}"#
        struct Stamp: Codable, Equatable {
            var id: UUID
            var when: Date
        }
        let bytes = try record(json)
        // A plain number is not a date in a store's records…
        #expect(throws: DecodingError.self) { try CBORDecoder().decode(Stamp.self, from: bytes) }
        // …only in a row that sync reads.
        let stamp = try JSONForms.accepting { try CBORDecoder().decode(Stamp.self, from: bytes) }
        #expect(stamp.when == Date(timeIntervalSince1970: 1_700_000_000.5))
    }

    @Test func numbersKeepTheirKind() throws {
        let item = try record(
            #"[0, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615, 18446744073709551616, 1.5, -0.0, 1e3, 2E-2]"#
        )
        let value = try CBORValue(decoding: item)
        #expect(
            value
                == .array([
                    .unsigned(0), .negative(0), .unsigned(UInt64(Int64.max)), .negative(UInt64(Int64.max)),
                    .unsigned(UInt64.max), .float(18_446_744_073_709_551_616), .float(1.5), .float(-0.0),
                    .float(1000), .float(0.02),
                ]))
    }

    @Test func stringsAreUnescaped() throws {
        let item = try record(
            #"["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u4e2d\ud83c\udf89", "\ud800 alone", "raw é"]"#)
        #expect(
            try CBORValue(decoding: item)
                == .array([
                    .text("a\"b\\c/d\u{8}\u{c}\n\r\t"), .text("é中🎉"), .text("\u{FFFD} alone"), .text("raw é"),
                ]))
    }

    @Test func malformedJSONIsRefusedWithWhereAndWhy() throws {
        let cases: [(String, Int, String)] = [
            ("", 0, "the text ends where a value should be"),
            ("{", 1, "an object's key is not a string"),
            (#"{"a" 1}"#, 5, "a key is not followed by ':'"),
            (#"{"a":1,}"#, 7, "an object's key is not a string"),
            ("[1 2]", 3, "expected ',' or ']'"),
            ("[1,", 3, "the text ends where a value should be"),
            ("01", 2, "a number starts with 0"),
            ("1.", 2, "a number's fraction has no digits"),
            ("1e", 2, "a number's exponent has no digits"),
            ("-", 1, "a number has no digits"),
            ("tru", 0, "not a JSON value"),
            (#""abc"#, 4, "a string is not closed"),
            (#""\x""#, 2, "an unknown escape in a string"),
            (#""\u12G4""#, 5, #"a \u escape has a character that is not hexadecimal"#),
            ("\"a\u{1}\"", 2, "a control character in a string"),
            ("{} x", 3, "text after the value"),
            (String(repeating: "[", count: 300), 256, "objects and arrays nest too deep"),
        ]
        for (json, offset, reason) in cases {
            #expect {
                _ = try record(json)
            } throws: { error in
                guard let failure = error as? JSONRecordReader.Failure else { return false }
                return failure.offset == offset && failure.reason == reason
            }
        }
    }

    @Test func aRecordFieldsOfOtherVersionsGoToTheJSON() throws {
        // A record with a field its reader's type does not know still writes it.
        let item = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(3)), .init(key: .text("color"), value: .text("red")),
            .init(key: .text("at"), value: .tagged(1, .float(12.5))),
        ])
        let json = try item.encoded.withUnsafeBytes { try RecordJSONWriter.json($0) }
        #expect(json == #"{"id":3,"color":"red","at":12.5}"#)
    }
}
