import Foundation

/// One libFuzzer input: parsed as a `--where` expression and, if it parses, evaluated on a record.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzExpression(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    guard let expression = try? WhereExpression.parse(text) else { return 0 }
    let record = CBORValue.map([
        .init(key: .text("id"), value: .unsigned(7)), .init(key: .text("title"), value: .text("fuzz")),
        .init(key: .text("nested"), value: .map([.init(key: .text("a"), value: .negative(3))])),
    ])
    _ = expression.matches(record)
    return 0
}
