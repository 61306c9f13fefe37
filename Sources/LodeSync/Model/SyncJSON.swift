import Foundation
import LodeCodec

/// How objects become the `jsonb` of their server rows and back: Foundation's JSON coders with
/// sorted keys, dates as seconds since 1970 (a number keeps every bit a `Date` has; SQL reads it with
/// `to_timestamp`), data as Base64, and non-finite numbers as the strings `"NaN"`, `"Infinity"`,
/// `"-Infinity"`.
enum SyncJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.dataEncodingStrategy = .base64
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        decoder.dataDecodingStrategy = .base64
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String { CBORValue.quoted(text) }
}
