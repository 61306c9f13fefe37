import Foundation

/// The kind of a CBOR value, as the catalog records it for each top-level field (`kinds` in
/// `docs/FORMAT.md`): its major type, with integers of either sign one kind and simple values told
/// apart (booleans, null, floating-point numbers).
@usableFromInline package enum FieldKind: UInt8, CaseIterable {
    case integer = 0
    case bytes = 2
    case text = 3
    case array = 4
    case map = 5
    case tagged = 6
    case bool = 20
    case null = 22
    case undefined = 23
    case simple = 24
    case float = 25

    /// The kind of the value whose first byte is `byte`.
    @usableFromInline package static func of(initialByte byte: UInt8) -> FieldKind {
        switch byte >> 5 {
        case 0, 1: return .integer
        case 2: return .bytes
        case 3: return .text
        case 4: return .array
        case 5: return .map
        case 6: return .tagged
        default:
            switch byte & 0x1f {
            case 20, 21: return .bool
            case 22: return .null
            case 23: return .undefined
            case 25, 26, 27: return .float
            default: return .simple
            }
        }
    }

    /// The name the catalog stores.
    package var name: String {
        switch self {
        case .integer: "integer"
        case .bytes: "bytes"
        case .text: "text"
        case .array: "array"
        case .map: "map"
        case .tagged: "tagged"
        case .bool: "bool"
        case .null: "null"
        case .undefined: "undefined"
        case .simple: "simple"
        case .float: "float"
        }
    }
}
