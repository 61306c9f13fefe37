import Foundation
import LMDB
import LodeCodec

/// What one commit changed, as stored in `@changes` under the commit's transaction id (8 bytes,
/// big-endian). See `docs/FORMAT.md`.
package struct ChangeLogEntry: Codable, Equatable {
    package enum Operation: String, Codable, CaseIterable {
        case insert
        case update
        case delete
        /// Every object of the type was deleted (`deleteAll`).
        case clear
        /// More objects of the type changed than the entry lists one by one (`count` says how many):
        /// a reader evaluates its queries of the type again.
        case bulk
    }

    struct Change: Codable, Equatable {
        /// The type's store name.
        var type: String
        /// The encoded primary key (empty for `clear`).
        var key: Data
        var op: Operation
        /// For updates: the top-level fields whose values changed (absent when unknown).
        var fields: [String]?
        /// For `bulk`: how many objects of the type changed.
        var count: Int?
    }

    /// When the commit happened.
    var time: Date
    var changes: [Change]

    static func key(for version: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(version).bigEndian) { Array($0) }
    }

    package static func version(of key: some Collection<UInt8>) -> Int {
        Int(key.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The commit time of an encoded entry, read from its first field without decoding the rest (the
    /// writer puts `time` first); nil when the entry does not start that way.
    static func time(ofEncoded bytes: UnsafeRawBufferPointer) -> Date? {
        var reader = CBORReader(bytes)
        guard let map = try? reader.readHead(), map.major == 5,
            let name = try? reader.readStringBytes(major: 3), name.elementsEqual("time".utf8),
            let tag = try? reader.readHead(), tag.major == 6,
            let value = try? reader.readHead()
        else { return nil }
        let seconds: Double
        switch (value.major, value.info) {
        case (7, 27): seconds = Double(bitPattern: value.argument)
        case (7, 26): seconds = Double(Float(bitPattern: UInt32(value.argument)))
        case (0, _): seconds = Double(value.argument)
        default: return nil
        }
        switch tag.argument {
        case 1: return Date(timeIntervalSince1970: seconds)
        case CBORTags.referenceDate: return Date(timeIntervalSinceReferenceDate: seconds)
        default: return nil
        }
    }
}
