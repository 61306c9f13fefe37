import Foundation
import LodeCodec
import LodeStore

import class LMDB.Cursor
import struct LMDB.Database

/// Full-text index entries of the objects a write transaction stores and deletes.
extension WriteTransaction {
    /// Moves the postings of the object under `key` from `old`'s terms to `new`'s (nil: no object):
    /// only the terms whose positions changed are touched.
    func indexText<T>(_ index: LiveTextIndex<T>, key: [UInt8], old: T?, new: T?) throws {
        let definition = index.definition
        try indexText(
            index.postings, keys: index.keys, key: key, before: old.map { definition.texts($0) },
            after: new.map { definition.texts($0) }, tokenizer: definition.tokenizer)
    }

    /// ``indexText(_:key:old:new:)`` with the texts of the fields (per field, its texts) given.
    package func indexText(
        _ postings: Database, keys: Database, key: [UInt8], before: [[String]]?, after: [[String]]?,
        tokenizer: any TextTokenizer
    ) throws {
        let pending = try pendingTextState(postings, keys: keys)
        var document = try lmdb.get(key, in: keys).flatMap { TextIndexLayout.bigEndian($0) }
        // A document the index lacks (it cannot, unless damaged) has no postings to move.
        let old =
            document == nil
            ? nil
            : before.map {
                DocumentTerms(texts: $0, tokenizer: tokenizer, table: pending.terms)
            }
        let new = after.map { DocumentTerms(texts: $0, tokenizer: tokenizer, table: pending.terms) }
        if new != nil && document == nil {
            let number = pending.statistics.nextDocument
            document = number
            pending.statistics.nextDocument += 1
            var numberBytes: [UInt8] = []
            TextIndexLayout.appendBigEndian(UInt64(number), to: &numberBytes)
            try lmdbWrite.put(numberBytes, forKey: key, in: keys)
            try lmdbWrite.put(key, forKey: TextIndexLayout.documentKey(number), in: postings)
        }
        guard let document else { return }
        if new == nil {
            try lmdbWrite.delete(key, in: keys)
            try lmdbWrite.delete(TextIndexLayout.documentKey(document), in: postings)
        }
        // Both documents' terms in term order: the ones that left, joined or moved are the changes.
        let oldCount = old?.pairs.count ?? 0
        let newCount = new?.pairs.count ?? 0
        var i = 0
        var j = 0
        while i < oldCount || j < newCount {
            let oldTerm = i < oldCount ? old!.term(at: i) : Int32.max
            let newTerm = j < newCount ? new!.term(at: j) : Int32.max
            if oldTerm < newTerm {
                pending.append(term: oldTerm, document: document, positions: nil)
                i = old!.runEnd(from: i)
            } else if newTerm < oldTerm {
                let end = new!.runEnd(from: j)
                pending.append(term: newTerm, document: document, positions: new!.positions(j..<end)[...])
                j = end
            } else {
                let oldEnd = old!.runEnd(from: i)
                let newEnd = new!.runEnd(from: j)
                if !new!.samePositions(j..<newEnd, as: old!, i..<oldEnd) {
                    pending.append(
                        term: newTerm, document: document, positions: new!.positions(j..<newEnd)[...])
                }
                i = oldEnd
                j = newEnd
            }
        }
        let oldLength = old?.length ?? 0
        let newLength = new?.length ?? 0
        pending.statistics.documents += (new == nil ? 0 : 1) - (old == nil ? 0 : 1)
        pending.statistics.tokens += newLength - oldLength
        pending.statisticsChanged = true
        if old == nil || new == nil || oldLength != newLength {
            pending.lengths[document] = UInt32(clamping: newLength)
        }
        if pending.count >= PendingText.flushThreshold { try flushText(pending) }
    }

    /// The pending changes of the index whose postings are `postings`, begun with its stored
    /// statistics.
    /// - Throws: ``LodeError/textIndexDamaged(type:index:reason:)`` when they do not read.
    func pendingTextState(_ postings: Database, keys: Database) throws -> PendingText {
        // Only full-text indexes defer writes to their postings database: the cast cannot fail.
        if let pending = deferredIndexWrites[postings.number] {
            return unsafeDowncast(pending, to: PendingText.self)
        }
        let pending = PendingText(
            postings: postings, keys: keys, statistics: try textIndexStatistics(postings))
        deferredIndexWrites[postings.number] = pending
        return pending
    }

    /// Writes the full-text changes `pending` gathered (see ``DeferredIndexWrites``).
    func flushText(_ pending: PendingText) throws {
        if pending.count > 0 {
            // The changes grouped by term (a counting sort: each term's in the order made), the terms
            // in key order.
            let table = pending.terms
            var starts = [Int](repeating: 0, count: table.count + 1)
            for term in pending.changeTerms { starts[Int(term) + 1] += 1 }
            for term in 0..<table.count { starts[term + 1] += starts[term] }
            var next = starts
            var order = [Int](repeating: 0, count: pending.count)
            for index in 0..<pending.count {
                let term = Int(pending.changeTerms[index])
                order[next[term]] = index
                next[term] += 1
            }
            let touched = table.sortedByBytes((0..<table.count).filter { starts[$0 + 1] > starts[$0] })
            let cursor = try lmdb.cursor(in: pending.postings)
            defer { cursor.close() }
            for term in touched {
                try writePostings(
                    of: Int32(term), changes: order[starts[term]..<starts[term + 1]], pending: pending,
                    cursor: cursor)
            }
            pending.removeAllChanges()
        }
        var chunks: [Int: [(Int, UInt32)]] = [:]
        for (document, length) in pending.lengths {
            chunks[document / TextIndexLayout.lengthsPerChunk, default: []].append((document, length))
        }
        for (chunk, lengths) in chunks {
            let key = TextIndexLayout.lengthsKey(chunk: chunk)
            var words = [UInt32](repeating: 0, count: TextIndexLayout.lengthsPerChunk)
            if let stored = try lmdb.get(key, in: pending.postings) {
                guard stored.count == words.count * 4 else {
                    throw textIndexDamaged(
                        pending.postings,
                        "the lengths of documents \(chunk * TextIndexLayout.lengthsPerChunk)… are not \(words.count * 4) bytes"
                    )
                }
                stored.withUnsafeBytes { bytes in
                    for slot in 0..<words.count {
                        words[slot] = UInt32(
                            littleEndian: bytes.loadUnaligned(fromByteOffset: slot * 4, as: UInt32.self))
                    }
                }
            }
            for (document, length) in lengths { words[document % TextIndexLayout.lengthsPerChunk] = length }
            if words.allSatisfy({ $0 == 0 }) {
                try lmdbWrite.delete(key, in: pending.postings)
            } else {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(words.count * 4)
                for word in words { withUnsafeBytes(of: word.littleEndian) { bytes.append(contentsOf: $0) } }
                try lmdbWrite.put(bytes, forKey: key, in: pending.postings)
            }
        }
        pending.lengths.removeAll()
        if pending.statisticsChanged {
            try lmdbWrite.put(
                pending.statistics.bytes, forKey: TextIndexLayout.statisticsKey, in: pending.postings)
            pending.statisticsChanged = false
        }
    }

    /// Applies the changes of `term` (indices into `pending`'s changes, in the order made) to its
    /// blocks.
    private func writePostings(
        of term: Int32, changes: ArraySlice<Int>, pending: PendingText, cursor: Cursor
    ) throws {
        let prefix = TextIndexLayout.termPrefix(pending.terms.term(term))
        // A load: every change adds a document after the one before. The term's last block is
        // extended (its bytes copied, not decoded) and full blocks follow it.
        var appendsOnly = true
        var last = -1
        for change in changes {
            let document = pending.changeDocuments[change]
            if pending.changeStarts[change] < 0 || document <= last {
                appendsOnly = false
                break
            }
            last = document
        }
        if appendsOnly, try appendPostings(of: prefix, changes: changes, pending: pending, cursor: cursor) {
            return
        }
        // Otherwise: the last change of each document decides, in document order.
        var latest: [Int: [Int32]?] = [:]
        latest.reserveCapacity(changes.count)
        for change in changes {
            let start = Int(pending.changeStarts[change])
            latest[pending.changeDocuments[change]] =
                start < 0
                ? nil : Array(pending.positions[start..<(start + Int(pending.changeCounts[change]))])
        }
        try mergePostings(of: prefix, latest: latest, in: pending.postings, cursor: cursor)
    }

    /// The first document a block key names (its last eight bytes, after the term's `prefix`).
    /// - Throws: ``LodeError/textIndexDamaged(type:index:reason:)`` when they are not a document.
    private func blockStart(_ key: [UInt8], prefix: [UInt8], in postings: Database) throws -> Int {
        guard key.count == prefix.count + 8, let start = TextIndexLayout.bigEndian(key[prefix.count...])
        else {
            throw textIndexDamaged(
                postings,
                "a block key of term \"\(String(decoding: prefix.dropFirst().dropLast(), as: UTF8.self))\" does not end in a document number"
            )
        }
        return start
    }

    /// Appends postings to the end of a term's blocks, when every one follows its last document;
    /// false (nothing written) otherwise.
    private func appendPostings(
        of prefix: [UInt8], changes: ArraySlice<Int>, pending: PendingText, cursor: Cursor
    ) throws -> Bool {
        guard let first = changes.first else { return true }
        var upper = prefix
        upper.append(contentsOf: repeatElement(0xFF, count: 8))
        var builder: BlockBuilder?
        var blockKey: [UInt8] = []
        if let found = try cursor.seek(atMost: upper), found.key.count == prefix.count + 8,
            found.key.starts(with: prefix)
        {
            let base = try blockStart(found.key, prefix: prefix, in: pending.postings)
            guard let parsed = BlockBuilder(block: found.value, base: base),
                parsed.last < pending.changeDocuments[first]
            else { return false }
            builder = parsed
            blockKey = found.key
        }
        for change in changes {
            let document = pending.changeDocuments[change]
            let start = Int(pending.changeStarts[change])
            let positions = pending.positions[start..<(start + Int(pending.changeCounts[change]))]
            if let current = builder, current.count > 0,
                current.byteCount + BlockBuilder.cost(of: document, positions: positions, after: current.last)
                    > PostingBlock.targetBytes
            {
                try lmdbWrite.put(current.encoded(), forKey: blockKey, in: pending.postings)
                builder = nil
            }
            if builder == nil {
                builder = BlockBuilder(base: document)
                blockKey = TextIndexLayout.blockKey(prefix: prefix, document: document)
            }
            builder!.append(document: document, positions: positions)
        }
        if let builder { try lmdbWrite.put(builder.encoded(), forKey: blockKey, in: pending.postings) }
        return true
    }

    /// Merges `latest` (document → its positions now, nil when it no longer holds the term) into the
    /// blocks of the term whose keys begin with `prefix`.
    private func mergePostings(
        of prefix: [UInt8], latest: [Int: [Int32]?], in postings: Database, cursor: Cursor
    ) throws {
        let ordered = latest.keys.sorted()
        let term = String(decoding: prefix.dropFirst().dropLast(), as: UTF8.self)
        var next = 0
        while next < ordered.count {
            let first = ordered[next]
            // The block that holds `first`: the last one of the term starting at or before it, else
            // the term's first block.
            var found = try cursor.seek(atMost: TextIndexLayout.blockKey(prefix: prefix, document: first))
            if found.map({ !$0.key.starts(with: prefix) || $0.key.count != prefix.count + 8 }) ?? true {
                found = try cursor.seek(atLeast: prefix)
                if let entry = found, !entry.key.starts(with: prefix) || entry.key.count != prefix.count + 8 {
                    found = nil
                }
            }
            // The block's postings as offsets into its bytes: kept postings are copied, not decoded.
            var block = RawBlock()
            var oldKey: [UInt8]?
            var limit = Int.max
            if let found {
                let base = try blockStart(found.key, prefix: prefix, in: postings)
                do {
                    block = try RawBlock(found.value, base: base)
                } catch let error as PostingBlockError {
                    throw textIndexDamaged(
                        postings, "the postings of term \"\(term)\" do not read: \(error.reason)")
                }
                oldKey = found.key
                if let following = try cursor.next(), following.key.starts(with: prefix),
                    following.key.count == prefix.count + 8
                {
                    limit = try blockStart(following.key, prefix: prefix, in: postings)
                }
            }
            let oldBase = try oldKey.map { try blockStart($0, prefix: prefix, in: postings) }
            // Merge the changes below the next block's start into this block, cutting it where it
            // outgrows a page.
            var finished: [(base: Int, builder: BlockBuilder)] = []
            var current: (base: Int, builder: BlockBuilder)?
            func add(_ document: Int, frequency: Int, positions: (inout BlockBuilder) -> Void, bytes: Int) {
                if let open = current, open.builder.count > 0,
                    open.builder.byteCount + varintSize(document - open.builder.last) + varintSize(frequency)
                        + bytes
                        > PostingBlock.targetBytes
                {
                    finished.append(open)
                    current = nil
                }
                if current == nil {
                    // The first run keeps the block's start unless a document before it joined.
                    let base = finished.isEmpty ? min(oldBase ?? document, document) : document
                    current = (base, BlockBuilder(base: base))
                }
                positions(&current!.builder)
            }
            func keep(_ index: Int) {
                let range = block.positionRange(index)
                add(
                    block.documents[index], frequency: block.frequencies[index],
                    positions: {
                        $0.append(
                            document: block.documents[index], frequency: block.frequencies[index],
                            positionBytes: block.bytes[range])
                    },
                    bytes: range.count)
            }
            var existing = 0
            while next < ordered.count && ordered[next] < limit {
                let document = ordered[next]
                while existing < block.count && block.documents[existing] < document {
                    keep(existing)
                    existing += 1
                }
                if existing < block.count && block.documents[existing] == document { existing += 1 }
                if let positions = latest[document]!, !positions.isEmpty {
                    add(
                        document, frequency: positions.count,
                        positions: { $0.append(document: document, positions: positions[...]) },
                        bytes: BlockBuilder.cost(of: document, positions: positions[...], after: document) - 2
                    )
                }
                next += 1
            }
            while existing < block.count {
                keep(existing)
                existing += 1
            }
            if let open = current { finished.append(open) }
            var keysWritten: [[UInt8]] = []
            for (base, builder) in finished {
                let key = TextIndexLayout.blockKey(prefix: prefix, document: base)
                try lmdbWrite.put(builder.encoded(), forKey: key, in: postings)
                keysWritten.append(key)
            }
            if let oldKey, !keysWritten.contains(oldKey) { try lmdbWrite.delete(oldKey, in: postings) }
        }
    }
}

/// A stored posting block read as offsets into its bytes: documents and frequencies decoded, the
/// positions left as they are (a merge copies them).
struct RawBlock {
    var bytes: [UInt8] = []
    var documents: [Int] = []
    var frequencies: [Int] = []
    /// Where each posting's positions begin in `bytes`, and one past the last.
    var positionStarts: [Int] = []

    var count: Int { documents.count }

    /// No block.
    init() {}

    /// The block `bytes` whose key names `base`.
    /// - Throws: ``PostingBlockError`` when they are not a block.
    init(_ bytes: [UInt8], base: Int) throws {
        self.bytes = bytes
        var documents: [Int] = []
        var frequencies: [Int] = []
        var starts: [Int] = []
        try bytes.withUnsafeBytes { raw in
            var reader = VarintReader(bytes: raw)
            let count = try reader.count()
            documents.reserveCapacity(count)
            frequencies.reserveCapacity(count)
            starts.reserveCapacity(count + 1)
            var document = base
            for index in 0..<count {
                let delta = try reader.next()
                if index > 0 && delta == 0 { throw PostingBlockError(reason: "a document is listed twice") }
                document += delta
                documents.append(document)
            }
            for _ in 0..<count {
                let frequency = try reader.next()
                guard frequency > 0 else { throw PostingBlockError(reason: "a posting has no occurrences") }
                frequencies.append(frequency)
            }
            for index in 0..<count {
                starts.append(reader.offset)
                for _ in 0..<frequencies[index] { _ = try reader.next() }
            }
            starts.append(reader.offset)
            guard reader.isAtEnd else { throw PostingBlockError(reason: "bytes follow the last posting") }
        }
        self.documents = documents
        self.frequencies = frequencies
        positionStarts = starts
    }

    /// The bytes of posting `index`'s positions.
    func positionRange(_ index: Int) -> Range<Int> { positionStarts[index]..<positionStarts[index + 1] }
}

/// A posting block built by appending: its three parts (document deltas, frequencies, positions)
/// kept apart until it is encoded, so an existing block is extended by copying its bytes.
struct BlockBuilder {
    private(set) var count = 0
    private var deltas: [UInt8] = []
    private var frequencies: [UInt8] = []
    private var positions: [UInt8] = []
    /// The last document appended (the base before any).
    private(set) var last: Int

    /// An empty block whose key names `base`.
    init(base: Int) { last = base }

    /// The block `bytes` whose key names `base`, ready to be extended; nil when it does not read.
    init?(block bytes: [UInt8], base: Int) {
        last = base
        let parsed: Bool = bytes.withUnsafeBytes { raw in
            var reader = VarintReader(bytes: raw)
            guard let count = try? reader.count() else { return false }
            let deltaStart = reader.offset
            var document = base
            for _ in 0..<count {
                guard let delta = try? reader.next() else { return false }
                document += delta
            }
            let frequencyStart = reader.offset
            for _ in 0..<count {
                guard (try? reader.next()) != nil else { return false }
            }
            self.count = count
            last = document
            deltas = Array(raw[deltaStart..<frequencyStart])
            frequencies = Array(raw[frequencyStart..<reader.offset])
            positions = Array(raw[reader.offset...])
            return true
        }
        guard parsed else { return nil }
    }

    /// The bytes a posting of `document` with `positions` adds after document `last`.
    static func cost(of document: Int, positions held: ArraySlice<Int32>, after last: Int) -> Int {
        var cost = varintSize(document - last) + varintSize(held.count)
        var previous: Int32 = 0
        for position in held {
            cost += varintSize(Int(position - previous))
            previous = position
        }
        return cost
    }

    /// The encoded size, with room for the count to grow by a byte.
    var byteCount: Int { varintSize(count) + 1 + deltas.count + frequencies.count + positions.count }

    /// Appends `document` (after the last one) with `frequency` positions already encoded as
    /// `positionBytes` (copied from another block).
    mutating func append(document: Int, frequency: Int, positionBytes: ArraySlice<UInt8>) {
        appendVarint(document - last, to: &deltas)
        last = document
        appendVarint(frequency, to: &frequencies)
        positions.append(contentsOf: positionBytes)
        count += 1
    }

    /// Appends `document` (after the last one) with its `positions`, ascending.
    mutating func append(document: Int, positions held: ArraySlice<Int32>) {
        appendVarint(document - last, to: &deltas)
        last = document
        appendVarint(held.count, to: &frequencies)
        var previous: Int32 = 0
        for position in held {
            appendVarint(Int(position - previous), to: &positions)
            previous = position
        }
        count += 1
    }

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount + 8)
        appendVarint(count, to: &bytes)
        bytes.append(contentsOf: deltas)
        bytes.append(contentsOf: frequencies)
        bytes.append(contentsOf: positions)
        return bytes
    }
}

extension WriteTransaction {
    /// Removes the document of the object under `key` from a full-text index when its record no
    /// longer decodes (its terms are unknown): every block of the index is read.
    func removeTextEntries<T>(_ index: LiveTextIndex<T>, key: [UInt8]) throws {
        try removeTextEntries(postings: index.postings, keys: index.keys, key: key)
    }

    /// Removes the document of the object under `key` from the full-text index whose databases are
    /// `postings` and `keys` (nothing when it holds none).
    func removeTextEntries(postings: Database, keys: Database, key: [UInt8]) throws {
        let index = (postings: postings, keys: keys)
        try flushDeferredIndexWrites()
        guard let document = try lmdb.get(key, in: index.keys).flatMap({ TextIndexLayout.bigEndian($0) })
        else {
            return
        }
        let pending = try pendingTextState(index.postings, keys: index.keys)
        var length = 0
        for entry in try lmdb.entries(in: index.postings, from: [TextIndexLayout.postingsTag]) {
            guard entry.key.first == TextIndexLayout.postingsTag else { break }
            guard entry.key.count >= 10, entry.key[entry.key.count - 9] == 0 else { continue }
            let termBytes = Array(entry.key[1..<(entry.key.count - 9)])
            // Only a block that may hold the document is read.
            let base = TextIndexLayout.bigEndian(entry.key.suffix(8)) ?? 0
            guard base <= document else { continue }
            let postings = try entry.value.withUnsafeBytes {
                try decodePostingBlock(
                    $0, base: base, term: String(decoding: termBytes, as: UTF8.self), in: index.postings)
            }
            if let held = postings.first(where: { $0.document == document }) {
                length += held.positions.count
                let term = termBytes.withUnsafeBufferPointer { pending.terms.intern($0) }
                pending.append(term: term, document: document, positions: nil)
            }
        }
        try lmdbWrite.delete(key, in: index.keys)
        try lmdbWrite.delete(TextIndexLayout.documentKey(document), in: index.postings)
        pending.statistics.documents -= 1
        pending.statistics.tokens -= length
        pending.statisticsChanged = true
        pending.lengths[document] = 0
        try flushDeferredIndexWrites()
    }
}
