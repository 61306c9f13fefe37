import Foundation
import LMDB
import LodeCodec

/// Full-text index entries of the objects a write transaction stores and deletes.
extension WriteTransaction {
    /// Moves the postings of the object under `key` from `old`'s terms to `new`'s (nil: no object):
    /// only the terms whose positions changed are touched.
    func indexText<T>(_ index: TypeState<T>.LiveTextIndex, key: [UInt8], old: T?, new: T?) throws {
        let definition = index.definition
        let before = old.map { TextDocument(texts: definition.texts($0), tokenizer: definition.tokenizer) }
        let after = new.map { TextDocument(texts: definition.texts($0), tokenizer: definition.tokenizer) }
        try indexText(index.postings, keys: index.keys, key: key, before: before, after: after)
    }

    /// ``indexText(_:key:old:new:)`` with the documents tokenized.
    package func indexText(
        _ postings: Database, keys: Database, key: [UInt8], before: TextDocument?, after: TextDocument?
    ) throws {
        let pending = try pendingTextState(postings, keys: keys)
        var document = try lmdb.get(key, in: keys).flatMap { TextIndexLayout.bigEndian($0) }
        // A document the index lacks (it cannot, unless damaged) has no postings to move.
        let before = document == nil ? nil : before
        if after != nil && document == nil {
            let number = pending.statistics.nextDocument
            document = number
            pending.statistics.nextDocument += 1
            var numberBytes: [UInt8] = []
            TextIndexLayout.appendBigEndian(UInt64(number), to: &numberBytes)
            try lmdbWrite.put(numberBytes, forKey: key, in: keys)
            try lmdbWrite.put(key, forKey: TextIndexLayout.documentKey(number), in: postings)
        }
        guard let document else { return }
        if after == nil {
            try lmdbWrite.delete(key, in: keys)
            try lmdbWrite.delete(TextIndexLayout.documentKey(document), in: postings)
        }
        let oldTerms = before?.terms ?? [:]
        let newTerms = after?.terms ?? [:]
        for (term, positions) in oldTerms where newTerms[term] != positions {
            pending.changes[term, default: []].append((document, newTerms[term]))
            pending.count += 1
        }
        for (term, positions) in newTerms where oldTerms[term] == nil {
            pending.changes[term, default: []].append((document, positions))
            pending.count += 1
        }
        let oldLength = before?.length ?? 0
        let newLength = after?.length ?? 0
        pending.statistics.documents += (after == nil ? 0 : 1) - (before == nil ? 0 : 1)
        pending.statistics.tokens += newLength - oldLength
        pending.statisticsChanged = true
        if before == nil || after == nil || oldLength != newLength {
            pending.lengths[document] = UInt32(clamping: newLength)
        }
        if pending.count >= PendingText.flushThreshold { try flush(pending) }
    }

    /// The pending changes of the index whose postings are `postings`, begun with its stored
    /// statistics.
    func pendingTextState(_ postings: Database, keys: Database) throws -> PendingText {
        if let pending = pendingText[postings.number] { return pending }
        let statistics = try lmdb.withValue(forKey: TextIndexLayout.statisticsKey, in: postings) {
            TextIndexStatistics($0)
        }
        let pending = PendingText(
            postings: postings, keys: keys, statistics: (statistics ?? nil) ?? TextIndexStatistics())
        pendingText[postings.number] = pending
        return pending
    }

    /// Forgets what the transaction gathered for the index whose postings are `postings` (emptied or
    /// dropped).
    func discardPendingText(_ postings: Database) { pendingText[postings.number] = nil }

    /// Writes every full-text change gathered so far: before a commit, a savepoint, and a search in
    /// this transaction.
    package func flushPendingText() throws {
        for pending in pendingText.values { try flush(pending) }
    }

    private func flush(_ pending: PendingText) throws {
        for term in pending.changes.keys.sorted() {
            try writePostings(of: term, pending.changes[term]!, in: pending.postings)
        }
        pending.changes.removeAll()
        pending.count = 0
        var chunks: [Int: [(Int, UInt32)]] = [:]
        for (document, length) in pending.lengths {
            chunks[document / TextIndexLayout.lengthsPerChunk, default: []].append((document, length))
        }
        for (chunk, lengths) in chunks {
            let key = TextIndexLayout.lengthsKey(chunk: chunk)
            var words = [UInt32](repeating: 0, count: TextIndexLayout.lengthsPerChunk)
            if let stored = try lmdb.get(key, in: pending.postings), stored.count == words.count * 4 {
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

    /// Applies `changes` (in the order made) to the blocks of `term`.
    private func writePostings(
        of term: String, _ changes: [(document: Int, positions: [Int32]?)], in postings: Database
    ) throws {
        // The last change of each document decides, in document order.
        var latest: [Int: [Int32]?] = [:]
        latest.reserveCapacity(changes.count)
        for change in changes { latest[change.document] = change.positions }
        let ordered = latest.keys.sorted()
        let prefix = TextIndexLayout.termPrefix(term.utf8)
        let cursor = try lmdb.cursor(in: postings)
        defer { cursor.close() }
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
            var blockPostings: [PostingBlock.Posting] = []
            var oldKey: [UInt8]?
            var limit = Int.max
            if let found {
                let base = TextIndexLayout.bigEndian(found.key[prefix.count...])!
                blockPostings = try decodeBlock(found.value, base: base, term: term, in: postings)
                oldKey = found.key
                if let following = try cursor.next(), following.key.starts(with: prefix),
                    following.key.count == prefix.count + 8
                {
                    limit = TextIndexLayout.bigEndian(following.key[prefix.count...])!
                }
            }
            // Merge the changes below the next block's start into this block.
            var merged: [PostingBlock.Posting] = []
            merged.reserveCapacity(blockPostings.count + 1)
            var existing = 0
            while next < ordered.count && ordered[next] < limit {
                let document = ordered[next]
                while existing < blockPostings.count && blockPostings[existing].document < document {
                    merged.append(blockPostings[existing])
                    existing += 1
                }
                if existing < blockPostings.count && blockPostings[existing].document == document {
                    existing += 1
                }
                if let positions = latest[document]!, !positions.isEmpty {
                    merged.append(PostingBlock.Posting(document: document, positions: positions))
                }
                next += 1
            }
            merged.append(contentsOf: blockPostings[existing...])
            let runs = PostingBlock(postings: merged).split()
            var keysWritten: [[UInt8]] = []
            for (position, run) in runs.enumerated() {
                // The first run keeps the block's start unless a document before it joined.
                let oldBase = oldKey.map { TextIndexLayout.bigEndian($0[prefix.count...])! }
                let base = position == 0 ? min(oldBase ?? run[0].document, run[0].document) : run[0].document
                let key = TextIndexLayout.blockKey(prefix: prefix, document: base)
                try lmdbWrite.put(PostingBlock(postings: run).encoded(base: base), forKey: key, in: postings)
                keysWritten.append(key)
            }
            if let oldKey, !keysWritten.contains(oldKey) { try lmdbWrite.delete(oldKey, in: postings) }
        }
    }

    private func decodeBlock(_ value: [UInt8], base: Int, term: String, in postings: Database) throws
        -> [PostingBlock.Posting]
    {
        try value.withUnsafeBytes { try decodePostingBlock($0, base: base, term: term, in: postings) }
    }
}

extension WriteTransaction {
    /// Removes the document of the object under `key` from a full-text index when its record no
    /// longer decodes (its terms are unknown): every block of the index is read.
    func removeTextEntries<T>(_ index: TypeState<T>.LiveTextIndex, key: [UInt8]) throws {
        try flushPendingText()
        guard let document = try lmdb.get(key, in: index.keys).flatMap({ TextIndexLayout.bigEndian($0) })
        else {
            return
        }
        let pending = try pendingTextState(index.postings, keys: index.keys)
        var length = 0
        for entry in try lmdb.entries(in: index.postings, from: [TextIndexLayout.postingsTag]) {
            guard entry.key.first == TextIndexLayout.postingsTag else { break }
            guard entry.key.count >= 10, entry.key[entry.key.count - 9] == 0 else { continue }
            let term = String(decoding: entry.key[1..<(entry.key.count - 9)], as: UTF8.self)
            // Only a block that may hold the document is read.
            let base = TextIndexLayout.bigEndian(entry.key.suffix(8)) ?? 0
            guard base <= document else { continue }
            let postings = try entry.value.withUnsafeBytes {
                try decodePostingBlock($0, base: base, term: term, in: index.postings)
            }
            if let held = postings.first(where: { $0.document == document }) {
                length += held.positions.count
                pending.changes[term, default: []].append((document, nil))
                pending.count += 1
            }
        }
        try lmdbWrite.delete(key, in: index.keys)
        try lmdbWrite.delete(TextIndexLayout.documentKey(document), in: index.postings)
        pending.statistics.documents -= 1
        pending.statistics.tokens -= length
        pending.statisticsChanged = true
        pending.lengths[document] = 0
        try flushPendingText()
    }
}
