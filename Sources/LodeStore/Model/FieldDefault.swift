import Foundation
import LodeCodec

/// A value for a top-level field that records written before the field existed lack (see
/// ``Schema/defaults``). Swift's synthesized `Decodable` does not use a property's initial value for
/// a missing field; a default declared here does, without a migration.
public struct FieldDefault<Object>: @unchecked Sendable {
    // @unchecked: immutable; the value is stored as CBOR.
    /// The field's name.
    public let field: String
    /// The value, as stored; nil when it does not encode (``failure`` says why).
    let value: CBORValue?
    /// Why the value does not encode.
    let failure: String?

    /// The default `value` for the top-level property at `keyPath`.
    public static func field<V: Codable>(_ keyPath: KeyPath<Object, V>, _ value: V) -> FieldDefault {
        let name = fieldName(of: keyPath)
        precondition(!name.contains("."), "defaults are for top-level fields (\(name))")
        do {
            let encoded = try CBORValue(decoding: try CBOREncoder().encode(value))
            return FieldDefault(field: name, value: encoded, failure: nil)
        } catch {
            return FieldDefault(field: name, value: nil, failure: "\(error)")
        }
    }
}
