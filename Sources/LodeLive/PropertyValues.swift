import Foundation
import LodeCodec

/// Whether two values of one property are the same value, as an app would compare them — not as
/// their bytes were written: two equal dictionaries or sets are encoded in their iteration order,
/// which differs from instance to instance, and a record that lacked a field (written before it
/// existed) reads its default, which a rewrite then stores.
enum PropertyValues {
    /// `Equatable`'s `==` where the type has it; otherwise the values' encodings with every map's
    /// entries in key order.
    static func same(_ first: Any, _ second: Any) -> Bool {
        if let first = first as? any Equatable { return first.isEqual(to: second) }
        guard let first = first as? any Encodable, let second = second as? any Encodable else { return false }
        do {
            return try canonicalEncoding(first) == canonicalEncoding(second)
        } catch {
            // A value that does not encode cannot be told equal: it is reported as changed.
            return false
        }
    }

    private static func canonicalEncoding(_ value: any Encodable) throws -> CBORValue {
        canonical(try CBORValue(decoding: CBOREncoder().encode(value)))
    }

    private static func canonical(_ value: CBORValue) -> CBORValue {
        switch value {
        case .map(let entries):
            return .map(
                entries.map { CBORValue.MapEntry(key: $0.key, value: canonical($0.value)) }
                    .sorted { $0.key.encoded.lexicographicallyPrecedes($1.key.encoded) })
        case .array(let items): return .array(items.map(canonical))
        case .tagged(let tag, let inner): return .tagged(tag, canonical(inner))
        default: return value
        }
    }
}

extension Equatable {
    /// Whether `other` is a `Self` equal to this one.
    fileprivate func isEqual(to other: Any) -> Bool { (other as? Self) == self }
}
