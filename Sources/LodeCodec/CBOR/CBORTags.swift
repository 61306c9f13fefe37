import Foundation

/// The CBOR tags Lode writes beyond RFC 8949's.
package enum CBORTags {
    /// A `Date` as seconds since 2001-01-01 (Foundation's reference date), used when tag 1 could not
    /// represent it exactly.
    package static let referenceDate: UInt64 = 40001
}
