import Foundation

/// Record shapes the typed decoders — `Codable`'s and the model macro's generated one
/// (generated-record.swift) — are driven through: scalars, optionals, arrays, nested maps, dates,
/// UUIDs, data, an enum with associated values and one with raw values, a field with a default.
struct FuzzRecord: Codable {
    var id: Int
    var title: String
    var tags: [String]
    var due: Date?
    var score: Double
    var nested: [String: Int]
    var owner: UUID?
    var blob: Data?
    var state: FuzzState?
    var rank: Int8 = 0
    var stage: FuzzStage?
}

enum FuzzStage: String, Codable {
    case todo, done
}

enum FuzzState: Codable {
    case open
    case assigned(to: String, priority: Int8)
}

/// One libFuzzer input: decoded as an untyped CBOR value and as typed records; nothing may crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let value = try? CBORValue(decoding: bytes) {
        _ = value.json
        _ = try? KeyEncoder().encode(value)
    }
    _ = try? CBORDecoder().decode(FuzzRecord.self, from: bytes)
    _ = try? bytes.withUnsafeBytes { try FuzzRecord.decodeRecord($0) }
    _ = try? CBORDecoder().decode([Int64].self, from: bytes)
    _ = try? CBORDecoder().decode(String.self, from: bytes)
    return 0
}
