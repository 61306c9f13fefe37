import Foundation
import Testing

@testable import LodeCodec

/// Text read from records: short ASCII text is made as a small string directly (``SmallASCII``), the
/// rest by the standard library. Either way the string is the one the bytes spell, behaves as any
/// other string, and bytes that are not UTF-8 are refused.
struct TextDecodingTests {
    /// A record `{"t": text}` written by the encoder.
    private func record(_ text: String) throws -> [UInt8] {
        try CBOREncoder().encode(["t": text])
    }

    /// The text of field "t", read by the record reader.
    private func readText(_ bytes: [UInt8]) throws -> String {
        let names = RecordFieldNames(["t"])
        return try bytes.withUnsafeBytes { bytes in
            var reader = try RecordReader(bytes, names: names)
            guard try reader.nextField() == 0 else {
                throw RecordDecodingError(field: "t", reason: "missing")
            }
            return try reader.readString()
        }
    }

    @Test func theSmallStringLayoutIsRecognizedOnThisPlatform() {
        // On 64-bit Linux and Apple platforms the layout is the one expected: the fast path is taken.
        #expect(SmallASCII.form != nil)
    }

    @Test func everyLengthReadsAsTheTextWritten() throws {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789 -_.~!\u{7f}\u{1}".unicodeScalars)
        var generator = SystemRandomNumberGenerator()
        for length in 0...40 {
            for _ in 0..<20 {
                var text = ""
                for _ in 0..<length { text.unicodeScalars.append(alphabet.randomElement(using: &generator)!) }
                let read = try readText(try record(text))
                #expect(read == text)
                #expect(read.utf8.count == length)
                #expect(Array(read.utf8) == Array(text.utf8))
                #expect(read.hashValue == text.hashValue)
                #expect(Set([read, text]).count == 1)
                // Used as any string: grown, sliced and compared.
                var grown = read
                grown += "!"
                #expect(grown == text + "!")
                #expect(read.prefix(3) == text.prefix(3))
                #expect(read.count == text.count)
                // The Codable decoder makes its strings the same way.
                #expect(try CBORDecoder().decode([String: String].self, from: record(text)) == ["t": text])
            }
        }
    }

    @Test func nonASCIITextOfEveryLengthReadsAsWritten() throws {
        for text in ["é", "aé", "日本", "abcdefghijklmé", "abcdefghijklmnoé", "🙂", "a🙂b", "ñandú", "x\u{301}"] {
            #expect(try readText(try record(text)) == text)
        }
    }

    @Test func textThatIsNotUTF8IsRefusedAtEveryLength() throws {
        for length in 1...20 {
            for position in 0..<length {
                var text = Array(repeating: UInt8(ascii: "a"), count: length)
                text[position] = 0xff
                // {"t": text}, the text's head written by hand over bytes that are not UTF-8.
                var bytes: [UInt8] = [0xa1, 0x61, UInt8(ascii: "t")]
                bytes += length < 24 ? [0x60 | UInt8(length)] : [0x78, UInt8(length)]
                bytes += text
                #expect(throws: RecordDecodingError.self) { try readText(bytes) }
            }
        }
    }
}
