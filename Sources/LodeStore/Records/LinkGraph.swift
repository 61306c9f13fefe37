import Foundation
import LMDB

/// Every declared link of a store, by the type it points at, read from the catalog: what the delete
/// rules need to know about an object being deleted.
struct LinkGraph: Sendable {
    /// A link into a type.
    struct Inbound: Sendable {
        /// The linking type's store name.
        var source: String
        /// The link's field.
        var field: String
        /// The target type's store name.
        var target: String
        var toMany: Bool
        var rule: DeleteRule
    }

    /// The catalog it was read from: each entry's key and bytes, in key order.
    var catalog: [(name: [UInt8], bytes: [UInt8])] = []
    private var inbound: [String: [Inbound]] = [:]

    /// The links into the type stored as `type`.
    func links(into type: String) -> [Inbound] { inbound[type] ?? [] }

    /// True when no type declares a link.
    var isEmpty: Bool { inbound.isEmpty }

    /// Reads the catalog through `transaction`.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for an entry that does not
    ///   decode, and LMDB's errors.
    init(catalog database: Database, in transaction: LMDB.Transaction) throws {
        for entry in try transaction.allEntries(in: database) {
            catalog.append((entry.key, entry.value))
            let name = String(decoding: entry.key, as: UTF8.self)
            // Most entries declare no link: a quick look for the field name before decoding.
            guard entry.value.containsText("links") else { continue }
            for link in try CatalogEntry.decoded(from: entry.value, named: name).links ?? [] {
                inbound[link.target, default: []].append(
                    Inbound(
                        source: name, field: link.field, target: link.target, toMany: link.toMany,
                        rule: link.deleteRule))
            }
        }
    }

    /// True when `database` holds exactly the catalog this graph was read from (compared in place).
    func matches(_ database: Database, in transaction: LMDB.Transaction) throws -> Bool {
        var position = 0
        var same = true
        try transaction.withCursor(in: database) { cursor in
            func compare(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool {
                guard position < catalog.count, key.elementsEqual(catalog[position].name),
                    LodeStore.same(catalog[position].bytes, value)
                else {
                    same = false
                    return false
                }
                position += 1
                return true
            }
            guard try cursor.withFirst(compare) == true else { return }
            while try cursor.withNext(compare) == true {}
        }
        return same && position == catalog.count
    }
}

extension Array where Element == UInt8 {
    /// True when the CBOR text string `text` appears in these bytes (a cheap filter before decoding).
    func containsText(_ text: String) -> Bool {
        let needle = [UInt8(0x60 | text.utf8.count)] + Array(text.utf8)
        guard needle.count <= count else { return false }
        return withUnsafeBufferPointer { haystack in
            for start in 0...(haystack.count - needle.count)
            where haystack[start] == needle[0] && haystack[start..<start + needle.count].elementsEqual(needle)
            {
                return true
            }
            return false
        }
    }
}
