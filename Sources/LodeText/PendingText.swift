import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// What a write transaction changed in one full-text index and has not written yet: postings are
/// gathered per term and written term by term (`WriteTransaction.flushText(_:)`), so a load of
/// many objects rewrites each term's last block once per flush, not once per object.
///
/// Terms are interned (``TermTable``) and postings kept in flat arrays: the writer makes no `String`
/// and no array per word. Used by one write transaction, one thread at a time (a transaction is not
/// `Sendable`): its state skips dynamic exclusivity checks, which cost more than the appends.
final class PendingText {
    let postings: Database
    let keys: Database
    /// The statistics as this transaction changed them.
    @exclusivity(unchecked) var statistics: TextIndexStatistics
    /// The terms of the changes.
    let terms = TermTable()
    /// The changes, in the order made: term, document, and where its positions are in `positions`
    /// (a negative start: the document no longer holds the term).
    @exclusivity(unchecked) var changeTerms: [Int32] = []
    @exclusivity(unchecked) var changeDocuments: [Int] = []
    @exclusivity(unchecked) var changeStarts: [Int32] = []
    @exclusivity(unchecked) var changeCounts: [Int32] = []
    @exclusivity(unchecked) var positions: [Int32] = []
    /// Documents whose length changed: tokens now (0: no document).
    @exclusivity(unchecked) var lengths: [Int: UInt32] = [:]
    /// Whether the statistics changed.
    @exclusivity(unchecked) var statisticsChanged = false

    /// Postings a transaction gathers before it writes them.
    static let flushThreshold = 1_000_000

    var count: Int { changeTerms.count }

    init(postings: Database, keys: Database, statistics: TextIndexStatistics) {
        self.postings = postings
        self.keys = keys
        self.statistics = statistics
    }

    /// Notes that `document` now holds `term` at `positions` (nil: no longer holds it).
    func append(term: Int32, document: Int, positions held: ArraySlice<Int32>?) {
        changeTerms.append(term)
        changeDocuments.append(document)
        if let held {
            changeStarts.append(Int32(positions.count))
            changeCounts.append(Int32(held.count))
            positions.append(contentsOf: held)
        } else {
            changeStarts.append(-1)
            changeCounts.append(0)
        }
    }

    func removeAllChanges() {
        changeTerms.removeAll(keepingCapacity: true)
        changeDocuments.removeAll(keepingCapacity: true)
        changeStarts.removeAll(keepingCapacity: true)
        changeCounts.removeAll(keepingCapacity: true)
        positions.removeAll(keepingCapacity: true)
    }
}

/// Terms interned as small numbers: an open-addressing table over their UTF-8 bytes (FNV-1a),
/// the bytes kept in one arena. Used as its ``PendingText`` is (no dynamic exclusivity checks).
final class TermTable {
    @exclusivity(unchecked) private(set) var bytes: [UInt8] = []
    @exclusivity(unchecked) private var starts: [Int32] = []
    @exclusivity(unchecked) private var lengths: [Int32] = []
    @exclusivity(unchecked) private var hashes: [UInt64] = []
    /// Term number + 1 per slot (0: empty); a power of two long.
    @exclusivity(unchecked) private var slots = [Int32](repeating: 0, count: 1024)

    var count: Int { starts.count }

    /// The number of `term`, given one when it is new.
    func intern(_ term: UnsafeBufferPointer<UInt8>) -> Int32 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in term { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = slots[slot]
            if entry == 0 { break }
            let id = Int(entry - 1)
            if hashes[id] == hash && Int(lengths[id]) == term.count
                && bytes.withUnsafeBufferPointer({ arena in
                    term.isEmpty
                        || memcmp(arena.baseAddress! + Int(starts[id]), term.baseAddress!, term.count) == 0
                })
            {
                return Int32(id)
            }
            slot = (slot + 1) & mask
        }
        let id = Int32(starts.count)
        starts.append(Int32(bytes.count))
        lengths.append(Int32(term.count))
        hashes.append(hash)
        bytes.append(contentsOf: term)
        slots[slot] = id + 1
        if starts.count * 2 > slots.count { grow() }
        return id
    }

    /// `ids` in the order of their terms' bytes (the order of their keys).
    func sortedByBytes(_ ids: [Int]) -> [Int] {
        bytes.withUnsafeBufferPointer { arena in
            let base = arena.baseAddress
            return ids.sorted { a, b in
                let (aStart, aLength) = (Int(starts[a]), Int(lengths[a]))
                let (bStart, bLength) = (Int(starts[b]), Int(lengths[b]))
                let common = min(aLength, bLength)
                let order = common == 0 ? 0 : memcmp(base! + aStart, base! + bStart, common)
                return order != 0 ? order < 0 : aLength < bLength
            }
        }
    }

    /// The bytes of term `id`.
    func term(_ id: Int32) -> ArraySlice<UInt8> {
        let start = Int(starts[Int(id)])
        return bytes[start..<(start + Int(lengths[Int(id)]))]
    }

    private func grow() {
        slots = [Int32](repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for id in 0..<starts.count {
            var slot = Int(truncatingIfNeeded: hashes[id]) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(id + 1)
        }
    }
}

/// A document's terms as the writer sees them: term numbers ascending, each with its positions.
struct DocumentTerms {
    /// (term << 32 | position), ascending: each term's positions together and in order.
    var pairs: [UInt64]
    var length: Int

    /// Tokenizes `texts` (per field, its texts) into `table`'s numbers.
    init(texts: [[String]], tokenizer: any TextTokenizer, table: TermTable) {
        var scratch: [UInt64] = []
        scratch.reserveCapacity(256)
        var position: UInt64 = 0
        var length = 0
        let unicode = tokenizer as? UnicodeTokenizer
        for field in texts {
            for text in field {
                if let unicode {
                    unicode.forEachTerm(in: text) { term in
                        guard position < UInt64(Int32.max - 1) else { return }
                        scratch.append(UInt64(UInt32(table.intern(term))) << 32 | position)
                        position += 1
                        length += 1
                    }
                } else {
                    for token in tokenizer.tokens(in: text)
                    where !token.term.isEmpty && !token.term.utf8.contains(0) {
                        guard position < UInt64(Int32.max - 1) else { break }
                        var term = TextDocument.cut(token.term)
                        term.withUTF8 { scratch.append(UInt64(UInt32(table.intern($0))) << 32 | position) }
                        position += 1
                        length += 1
                    }
                }
                // As `TextDocument` does: positions stop short of 2³¹.
                if position < UInt64(Int32.max - 1) { position += 1 }
            }
        }
        scratch.sort()
        pairs = scratch
        self.length = length
    }

    /// The term of pair `index`.
    func term(at index: Int) -> Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: pairs[index] >> 32)) }

    /// The end of the run of pairs of the term at `start`.
    func runEnd(from start: Int) -> Int {
        let term = pairs[start] >> 32
        var end = start + 1
        while end < pairs.count && pairs[end] >> 32 == term { end += 1 }
        return end
    }

    /// The positions of the pairs in `run`.
    func positions(_ run: Range<Int>) -> [Int32] {
        run.map { Int32(truncatingIfNeeded: pairs[$0] & 0xFFFF_FFFF) }
    }

    /// Whether the runs `run` of this and `otherRun` of `other` hold the same positions.
    func samePositions(_ run: Range<Int>, as other: DocumentTerms, _ otherRun: Range<Int>) -> Bool {
        guard run.count == otherRun.count else { return false }
        for (a, b) in zip(run, otherRun) where pairs[a] & 0xFFFF_FFFF != other.pairs[b] & 0xFFFF_FFFF {
            return false
        }
        return true
    }
}
