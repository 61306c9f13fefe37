import LodeCodec
import LodeStore

import struct LMDB.Database

/// The keys of a full-text index's databases (docs/FORMAT.md, "Full-text indexes").
///
/// `<Type>.@text:<name>` (plain) holds, by the first byte of the key:
/// - `0x00`: the statistics — documents, tokens and the next document number, each a UInt64,
///   little-endian (24 bytes);
/// - `0x01` term `0x00` first document (UInt64, big-endian): a block of the term's postings (see
///   ``PostingBlock``), for documents from that number up to the next block's;
/// - `0x02` document (UInt64, big-endian): the primary key of the object that document is;
/// - `0x03` chunk (UInt64, big-endian): the lengths in tokens of documents `chunk × 256` up to
///   `chunk × 256 + 255`, each a UInt32, little-endian (0: no document).
///
/// `<Type>.@textkeys:<name>` (plain): primary key → document (UInt64, big-endian).
package enum TextIndexLayout {
    package static let statisticsKey: [UInt8] = [0x00]
    static let postingsTag: UInt8 = 0x01
    static let documentTag: UInt8 = 0x02
    static let lengthsTag: UInt8 = 0x03
    /// Documents per lengths chunk.
    static let lengthsPerChunk = 256

    /// The postings database of index `name` of `type`.
    package static func postingsDatabaseName(type: String, index: String) -> String {
        CatalogEntry.textPostingsDatabaseName(type: type, index: index)
    }

    /// The primary-key → document database of index `name` of `type`.
    package static func keysDatabaseName(type: String, index: String) -> String {
        CatalogEntry.textKeysDatabaseName(type: type, index: index)
    }

    /// `0x01 term 0x00`: what every block key of `term` begins with.
    package static func termPrefix(_ term: some Collection<UInt8>) -> [UInt8] {
        var key: [UInt8] = [postingsTag]
        key.reserveCapacity(term.count + 10)
        key.append(contentsOf: term)
        key.append(0)
        return key
    }

    /// The key of `term`'s block that starts at `document`.
    static func blockKey(prefix: [UInt8], document: Int) -> [UInt8] {
        var key = prefix
        appendBigEndian(UInt64(document), to: &key)
        return key
    }

    static func documentKey(_ document: Int) -> [UInt8] {
        var key: [UInt8] = [documentTag]
        appendBigEndian(UInt64(document), to: &key)
        return key
    }

    static func lengthsKey(chunk: Int) -> [UInt8] {
        var key: [UInt8] = [lengthsTag]
        appendBigEndian(UInt64(chunk), to: &key)
        return key
    }

    static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// A big-endian UInt64 at the end of `bytes`, or nil when they are shorter.
    static func bigEndianSuffix(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 8 else { return nil }
        var value: UInt64 = 0
        for offset in (bytes.count - 8)..<bytes.count { value = value << 8 | UInt64(bytes[offset]) }
        return value > UInt64(Int.max) ? nil : Int(value)
    }

    static func bigEndian(_ bytes: some Collection<UInt8>) -> Int? {
        guard bytes.count == 8 else { return nil }
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        return value > UInt64(Int.max) ? nil : Int(value)
    }
}

/// The statistics of a full-text index: what BM25 needs of the whole collection.
package struct TextIndexStatistics: Equatable, Sendable {
    /// Documents indexed (objects with the index's fields).
    package var documents: Int
    /// Tokens in all of them.
    package var tokens: Int
    /// The number the next document gets.
    package var nextDocument: Int

    package init(documents: Int = 0, tokens: Int = 0, nextDocument: Int = 0) {
        self.documents = documents
        self.tokens = tokens
        self.nextDocument = nextDocument
    }

    /// The statistics in `bytes`, or nil when they are not 24 bytes.
    package init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 24 else { return nil }
        func word(_ at: Int) -> Int {
            Int(
                truncatingIfNeeded: UInt64(
                    littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
        }
        documents = word(0)
        tokens = word(8)
        nextDocument = word(16)
        guard documents >= 0, tokens >= 0, nextDocument >= 0 else { return nil }
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        for value in [documents, tokens, nextDocument] {
            withUnsafeBytes(of: UInt64(value).littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }
}
