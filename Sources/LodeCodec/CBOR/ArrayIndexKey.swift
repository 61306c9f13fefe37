import Foundation

/// An array position as a coding key (for error paths); its text is made only when asked for.
struct ArrayIndexKey: CodingKey {
    let index: Int
    var stringValue: String { "[\(index)]" }
    var intValue: Int? { index }
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.init(intValue) }
}
