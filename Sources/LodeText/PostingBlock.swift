import LodeCodec
import LodeStore

import struct LMDB.Database

/// A block of one term's postings: which documents hold the term, how often, and where.
///
/// Encoded as unsigned LEB128 numbers: the count *n*; *n* document deltas (the first from the
/// block key's document, each next from the one before); *n* frequencies (occurrences, at least 1);
/// then each posting's positions, its first absolute and each next as the difference from the one
/// before. A query that needs no positions reads the first two parts only.
package struct PostingBlock: Equatable {
    /// One document's occurrences of the term.
    package struct Posting: Equatable {
        package var document: Int
        package var positions: [Int32]

        package init(document: Int, positions: [Int32]) {
            self.document = document
            self.positions = positions
        }
    }

    package var postings: [Posting]

    package init(postings: [Posting]) { self.postings = postings }

    /// A block's encoded size at most, before it is split: what one overflow page holds (4,096
    /// bytes less LMDB's 16-byte page header and a little room). A larger value than a leaf node
    /// takes (about 2,000 bytes) gets pages of its own, so full blocks fill their page; a term's few
    /// postings stay in a leaf.
    static let targetBytes = 4_072

    /// Decodes a block whose key names `base`.
    /// - Throws: ``PostingBlockError`` when the bytes are not a block.
    package init(decoding bytes: UnsafeRawBufferPointer, base: Int) throws(PostingBlockError) {
        var reader = VarintReader(bytes: bytes)
        let count = try reader.count()
        var documents: [Int] = []
        documents.reserveCapacity(count)
        var document = base
        for index in 0..<count {
            let delta = try reader.next()
            if index > 0 && delta == 0 { throw PostingBlockError(reason: "a document is listed twice") }
            document += delta
            documents.append(document)
        }
        var frequencies: [Int] = []
        frequencies.reserveCapacity(count)
        for _ in 0..<count {
            let frequency = try reader.next()
            guard frequency > 0 else { throw PostingBlockError(reason: "a posting has no occurrences") }
            frequencies.append(frequency)
        }
        var postings: [Posting] = []
        postings.reserveCapacity(count)
        for index in 0..<count {
            var positions: [Int32] = []
            positions.reserveCapacity(frequencies[index])
            var position = 0
            for occurrence in 0..<frequencies[index] {
                let delta = try reader.next()
                if occurrence > 0 && delta == 0 {
                    throw PostingBlockError(reason: "a position is listed twice")
                }
                position += delta
                guard position <= Int(Int32.max) else {
                    throw PostingBlockError(reason: "a position is too large")
                }
                positions.append(Int32(position))
            }
            postings.append(Posting(document: documents[index], positions: positions))
        }
        guard reader.isAtEnd else { throw PostingBlockError(reason: "bytes follow the last posting") }
        self.postings = postings
    }

    /// The encoded block, for a key that names `base` (at most the first posting's document).
    package func encoded(base: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(postings.count * 4 + 8)
        appendVarint(postings.count, to: &bytes)
        var previous = base
        for posting in postings {
            appendVarint(posting.document - previous, to: &bytes)
            previous = posting.document
        }
        for posting in postings { appendVarint(posting.positions.count, to: &bytes) }
        for posting in postings {
            var last: Int32 = 0
            for position in posting.positions {
                appendVarint(Int(position - last), to: &bytes)
                last = position
            }
        }
        return bytes
    }
}

/// A posting block that does not decode: the index is damaged.
package struct PostingBlockError: Error, Sendable, Equatable {
    package let reason: String
}

/// Reads unsigned LEB128 numbers.
package struct VarintReader {
    let bytes: UnsafeRawBufferPointer
    package private(set) var offset = 0

    package init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    package var isAtEnd: Bool { offset == bytes.count }

    @inline(__always)
    package mutating func next() throws(PostingBlockError) -> Int {
        var value = 0
        var shift = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
            if shift > 56 { break }
        }
        throw PostingBlockError(reason: "a number is cut short or too long")
    }

    /// A count: a number no larger than the bytes left could hold.
    package mutating func count() throws(PostingBlockError) -> Int {
        let count = try next()
        guard count <= bytes.count - offset else { throw PostingBlockError(reason: "the count is too large") }
        return count
    }
}

/// The bytes of `value` as an unsigned LEB128 number.
func varintSize(_ value: Int) -> Int {
    var value = UInt64(value)
    var size = 1
    while value >= 0x80 {
        value >>= 7
        size += 1
    }
    return size
}

package func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
    var value = UInt64(value)
    while value >= 0x80 {
        bytes.append(UInt8(value & 0x7F) | 0x80)
        value >>= 7
    }
    bytes.append(UInt8(value))
}
