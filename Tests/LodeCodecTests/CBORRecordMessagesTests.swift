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
    /// not valid UTF-8: the first decodes, the second is named for what it is.
    @Test func indefiniteMapsDecodeAndBadFieldNamesAreNamed() throws {
        // {_ "name": "a", "value": 1 } with an indefinite-length head and a break.
        let indefinite: [UInt8] =
            [0xbf, 0x64] + Array("name".utf8) + [0x61, 0x61, 0x65] + Array("value".utf8) + [0x01, 0xff]
        #expect(
            try CBORDecoder().decode(NamedValue.self, from: indefinite) == NamedValue(name: "a", value: 1))
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
