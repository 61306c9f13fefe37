import Foundation
import Testing

@testable import LodeCodec
@testable import LodeTestSupport

/// A record of two fields.
private struct NamedValue: Codable, Equatable {
    var name: String
    var value: Int
}

@Suite struct CBORRecordMessagesTests {
    /// Other CBOR encoders may write a record as an indefinite-length map, or with a field name that is
    /// not valid UTF-8: each is refused, named for what it is. (Indefinite lengths are refused by every
    /// reader of the library, so that `lode-dump check` and the app agree on what reads.)
    @Test func indefiniteLengthsAndBadFieldNamesAreNamed() throws {
        // {_ "name": "a", "value": 1 } with an indefinite-length head and a break.
        let indefinite: [UInt8] =
            [0xbf, 0x64] + Array("name".utf8) + [0x61, 0x61, 0x65] + Array("value".utf8) + [0x01, 0xff]
        // {"name": (_ "a"), "value": 1}: the text as an indefinite-length string of one chunk.
        let chunked: [UInt8] =
            [0xa2, 0x64] + Array("name".utf8) + [0x7f, 0x61, 0x61, 0xff, 0x65] + Array("value".utf8) + [0x01]
        // {"name": "a", "value": 1, "more": [_ ]}: a field the type does not know, skipped.
        let unknown: [UInt8] =
            [0xa3, 0x64] + Array("name".utf8) + [0x61, 0x61, 0x65] + Array("value".utf8) + [0x01, 0x64]
            + Array("more".utf8) + [0x9f, 0xff]
        for (bytes, expected) in [
            (indefinite, "an indefinite-length map at byte 0"),
            (chunked, "an indefinite-length text string at byte 6"),
            (unknown, "an indefinite-length array at byte 20"),
        ] {
            do {
                _ = try CBORDecoder().decode(NamedValue.self, from: bytes)
                Issue.record("\(expected) decoded")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
        // {"name": "a", h'ff fe': 1}: a text head over bytes that are not UTF-8.
        let badName: [UInt8] = [0xa2, 0x64] + Array("name".utf8) + [0x61, 0x61, 0x62, 0xff, 0xfe, 0x01]
        do {
            _ = try CBORDecoder().decode(NamedValue.self, from: badName)
            Issue.record("a field name that is not UTF-8 decoded")
        } catch {
            #expect("\(error)".contains("UTF-8"), "\(error)")
        }
    }
}
