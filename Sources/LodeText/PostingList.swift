import LodeCodec
import LodeStore

import struct LMDB.Database

/// The postings of one query term (or of every term a prefix matches) over the whole index, in
/// document order: read from the blocks, without their positions unless a phrase needs them.
package struct PostingList {
    package var documents: [Int] = []
    package var frequencies: [Int32] = []
    /// With positions: where each document's positions begin in ``positions`` (one more entry than
    /// documents, the last being the end).
    package var positionStarts: [Int] = []
    package var positions: [Int32] = []
    package let withPositions: Bool

    package init(withPositions: Bool) {
        self.withPositions = withPositions
        if withPositions { positionStarts = [0] }
    }

    package var count: Int { documents.count }

    /// The positions of the document at `index` (with positions only).
    package func positions(at index: Int) -> ArraySlice<Int32> {
        positions[positionStarts[index]..<positionStarts[index + 1]]
    }

    /// Appends the postings of a block whose key names `base`: its documents follow the ones read.
    /// - Throws: ``PostingBlockError`` when the bytes are not a block.
    package mutating func append(block bytes: UnsafeRawBufferPointer, base: Int) throws(PostingBlockError) {
        var reader = VarintReader(bytes: bytes)
        let count = try reader.count()
        let first = documents.count
        documents.reserveCapacity(first + count)
        var document = base
        for index in 0..<count {
            let delta = try reader.next()
            if index > 0 && delta == 0 { throw PostingBlockError(reason: "a document is listed twice") }
            document += delta
            documents.append(document)
        }
        if first > 0 && count > 0 && documents[first] <= documents[first - 1] {
            throw PostingBlockError(reason: "the blocks of a term are out of order")
        }
        frequencies.reserveCapacity(first + count)
        for _ in 0..<count {
            let frequency = try reader.next()
            guard frequency > 0, frequency <= Int(Int32.max) else {
                throw PostingBlockError(reason: "a posting has no occurrences")
            }
            frequencies.append(Int32(frequency))
        }
        guard withPositions else { return }
        for index in first..<(first + count) {
            var position = 0
            for occurrence in 0..<Int(frequencies[index]) {
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
            positionStarts.append(positions.count)
        }
        guard reader.isAtEnd else { throw PostingBlockError(reason: "bytes follow the last posting") }
    }

    /// The union of `lists` (the terms a prefix matches): a document's frequencies add up and its
    /// positions merge.
    package static func union(_ lists: [PostingList], withPositions: Bool) -> PostingList {
        if lists.count == 1 { return lists[0] }
        var entries: [(document: Int, list: Int, index: Int)] = []
        entries.reserveCapacity(lists.reduce(0) { $0 + $1.count })
        for (list, postings) in lists.enumerated() {
            for index in 0..<postings.count { entries.append((postings.documents[index], list, index)) }
        }
        entries.sort { $0.document < $1.document }
        var result = PostingList(withPositions: withPositions)
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count && entries[end].document == entries[start].document { end += 1 }
            var frequency: Int32 = 0
            var merged: [Int32] = []
            for entry in entries[start..<end] {
                frequency += lists[entry.list].frequencies[entry.index]
                if withPositions { merged.append(contentsOf: lists[entry.list].positions(at: entry.index)) }
            }
            result.documents.append(entries[start].document)
            result.frequencies.append(frequency)
            if withPositions {
                merged.sort()
                result.positions.append(contentsOf: merged)
                result.positionStarts.append(result.positions.count)
            }
            start = end
        }
        return result
    }
}
