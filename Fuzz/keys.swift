import Foundation

/// One libFuzzer input: decoded as a key for display, and (as text) encoded and described again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeys(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = KeyDescription.describe(bytes)
    // Text keys must round-trip through the encoder that made them.
    if let text = String(bytes: bytes, encoding: .utf8), let key = try? KeyEncoder().encode(text) {
        precondition(KeyDescription.describe(key).contains("\""), "a text key did not describe as text")
    }
    return 0
}
