import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// A full-text index read without the app's types: its statistics, its report, its integrity
/// check (registered as the store's ``AttachedIndexInspector`` for full-text indexes).
package struct TextIndexInspector: AttachedIndexInspector {
    /// Registers the inspector, once per process: the untyped paths (``Transaction/checkIntegrity()``,
    /// ``Transaction/storedType(named:)``) reach full-text indexes through it.
    package static func register() { _ = registration }

    private static let registration: Void = AttachedIndexInspection.register(TextIndexInspector())

    package func describe(
        _ entry: CatalogEntry.AttachedIndexEntry, of type: String, in transaction: Transaction
    ) throws -> StoredTextIndex {
        let postings = try transaction.database(
            named: TextIndexLayout.postingsDatabaseName(type: type, index: entry.name), kind: .plain)
        let statistics = try transaction.textIndexStatistics(postings)
        return StoredTextIndex(
            name: entry.name, fields: entry.fields, tokenizer: entry.tokenizer,
            documentCount: statistics.documents, tokenCount: statistics.tokens)
    }

    package func objectDeleted(
        key: [UInt8], from entry: CatalogEntry.AttachedIndexEntry, of type: String,
        in transaction: WriteTransaction
    ) throws {
        let write = transaction.lmdbWrite
        try transaction.removeTextEntries(
            postings: try write.database(
                named: TextIndexLayout.postingsDatabaseName(type: type, index: entry.name), create: false),
            keys: try write.database(
                named: TextIndexLayout.keysDatabaseName(type: type, index: entry.name), create: false),
            key: key)
    }

    package func check(
        _ index: StoredTextIndex, of type: String, records: [[UInt8]: UntypedRecord],
        unreadable: Set<[UInt8]>, in transaction: Transaction
    ) throws -> AttachedIndexCheck {
        try transaction.checkTextIndex(index, of: type, records: records, unreadable: unreadable)
    }
}

extension Transaction {
    /// The statistics of the full-text index whose postings are `postings` (zero when it has none).
    /// - Throws: ``LodeError/textIndexDamaged(type:index:reason:)`` when they do not read.
    package func textIndexStatistics(_ postings: Database) throws -> TextIndexStatistics {
        guard
            let statistics = try lmdb.withValue(
                forKey: TextIndexLayout.statisticsKey, in: postings, { TextIndexStatistics($0) })
        else {
            return TextIndexStatistics()
        }
        guard let statistics else { throw textIndexDamaged(postings, "its statistics do not read") }
        return statistics
    }

    /// Counts what the full-text index `index` of `type` holds, reading every block of it.
    /// - Complexity: O(*b*) for the index's *b* blocks.
    /// - Throws: ``LodeError/typeNotFound(_:)``, ``LodeError/indexNotFound(type:index:)``,
    ///   ``LodeError/textIndexDamaged(type:index:reason:)`` when a block does not read.
    public func textIndexReport(named index: String, of type: String) throws -> TextIndexReport {
        guard let catalog = try catalogEntry(named: type) else { throw LodeError.typeNotFound(type) }
        guard (catalog.attachedIndexes ?? []).contains(where: { $0.name == index }) else {
            throw LodeError.indexNotFound(type: type, index: index)
        }
        let postings = try database(
            named: TextIndexLayout.postingsDatabaseName(type: type, index: index), kind: .plain)
        let keys = try database(
            named: TextIndexLayout.keysDatabaseName(type: type, index: index), kind: .plain)
        var report = TextIndexReport(terms: 0, postings: 0, blocks: 0, bytes: 0, commonTerms: [])
        var current: [UInt8]?
        var held = 0
        var counts: [(term: String, documents: Int)] = []
        func finish() {
            guard let term = current else { return }
            counts.append((String(decoding: term, as: UTF8.self), held))
            if counts.count > 64 {
                counts.sort { $0.documents > $1.documents }
                counts.removeLast(counts.count - 10)
            }
        }
        let cursor = try lmdb.cursor(in: postings)
        defer { cursor.close() }
        var entry =
            try cursor.seek(atLeast: [TextIndexLayout.postingsTag]).map { _ in
                try cursor.entryInPlace(.current)
            } ?? nil
        while let (key, value) = entry, key.first == TextIndexLayout.postingsTag {
            guard key.count >= 10, key[key.count - 9] == 0 else {
                throw textIndexDamaged(postings, "a key of its postings is not a term and a document")
            }
            let term = Array(key[1..<(key.count - 9)])
            if term != current {
                finish()
                current = term
                held = 0
                report.terms += 1
            }
            var reader = VarintReader(bytes: value)
            let count: Int
            do {
                count = try reader.count()
            } catch {
                throw textIndexDamaged(
                    postings,
                    "the postings of term \"\(String(decoding: term, as: UTF8.self))\" do not read: \(error.reason)"
                )
            }
            held += count
            report.postings += count
            report.blocks += 1
            entry = try cursor.entryInPlace(.next)
        }
        finish()
        report.commonTerms = Array(
            counts.sorted { ($0.documents, $1.term) > ($1.documents, $0.term) }.prefix(10))
        for database in [postings, keys] {
            report.bytes += try lmdb.statistics(of: database).totalBytes
        }
        return report
    }

    /// Checks a full-text index: its blocks read and are in order, every posting's document is an
    /// object's and every object has a document, the lengths and statistics add up — and, when the
    /// index was built by the default tokenizer, every object's terms and positions are the ones its
    /// fields' text gives.
    func checkTextIndex(
        _ index: StoredTextIndex, of type: String, records: [[UInt8]: UntypedRecord],
        unreadable: Set<[UInt8]>
    ) throws -> AttachedIndexCheck {
        var report = AttachedIndexCheck()
        let name = TextIndexLayout.postingsDatabaseName(type: type, index: index.name)
        let postings = try openDatabase(name, kind: .plain)
        let keys = try openDatabase(
            TextIndexLayout.keysDatabaseName(type: type, index: index.name), kind: .plain)
        func problem(_ text: String) { report.problems.append("full-text index \(name): \(text)") }
        var statistics: TextIndexStatistics?
        var documents: [Int: [UInt8]] = [:]
        var lengths: [Int: Int] = [:]
        // Per document, its terms and their positions as the postings hold them.
        var held: [Int: [String: [Int32]]] = [:]
        var previous: (term: [UInt8], last: Int)?
        for entry in try lmdb.allEntries(in: postings) {
            report.entries += 1
            switch entry.key.first {
            case 0x00 where entry.key == TextIndexLayout.statisticsKey:
                statistics = entry.value.withUnsafeBytes { TextIndexStatistics($0) }
                if statistics == nil { problem("its statistics are not 24 bytes") }
            case TextIndexLayout.postingsTag
            where entry.key.count >= 10 && entry.key[entry.key.count - 9] == 0:
                let term = Array(entry.key[1..<(entry.key.count - 9)])
                let text = String(decoding: term, as: UTF8.self)
                let base = TextIndexLayout.bigEndian(entry.key.suffix(8)) ?? 0
                let block: [PostingBlock.Posting]
                do {
                    block = try entry.value.withUnsafeBytes {
                        try PostingBlock(decoding: $0, base: base).postings
                    }
                } catch let error as PostingBlockError {
                    problem(
                        "the block of term \"\(text)\" at document \(base) does not read: \(error.reason)")
                    continue
                }
                if block.isEmpty { problem("the block of term \"\(text)\" at document \(base) is empty") }
                if let previous, previous.term == term, let first = block.first,
                    first.document <= previous.last
                {
                    problem("the blocks of term \"\(text)\" overlap at document \(first.document)")
                }
                for posting in block {
                    held[posting.document, default: [:]][text] = posting.positions
                }
                previous = (term, block.last?.document ?? base)
            case TextIndexLayout.documentTag where entry.key.count == 9:
                if let document = TextIndexLayout.bigEndian(entry.key.suffix(8)) {
                    documents[document] = entry.value
                }
            case TextIndexLayout.lengthsTag where entry.key.count == 9 && entry.value.count == 1024:
                let chunk = TextIndexLayout.bigEndian(entry.key.suffix(8)) ?? 0
                entry.value.withUnsafeBytes { bytes in
                    for slot in 0..<TextIndexLayout.lengthsPerChunk {
                        let length = UInt32(
                            littleEndian: bytes.loadUnaligned(fromByteOffset: slot * 4, as: UInt32.self))
                        if length > 0 {
                            lengths[chunk * TextIndexLayout.lengthsPerChunk + slot] = Int(length)
                        }
                    }
                }
            default:
                problem("entry \(KeyDescription.describe(entry.key)) is not part of a full-text index")
            }
        }
        var documentOfKey: [[UInt8]: Int] = [:]
        for entry in try lmdb.allEntries(in: keys) {
            report.entries += 1
            guard let document = TextIndexLayout.bigEndian(entry.value) else {
                problem("the document of \(type) \(KeyDescription.describe(entry.key)) is not 8 bytes")
                continue
            }
            documentOfKey[entry.key] = document
            if documents[document] != entry.key {
                problem(
                    "\(type) \(KeyDescription.describe(entry.key)) is document \(document), which is not its document"
                )
            }
        }
        for (document, key) in documents.sorted(by: { $0.key < $1.key }) {
            if records[key] == nil && !unreadable.contains(key) {
                problem(
                    "document \(document) is \(type) \(KeyDescription.describe(key)), which does not exist")
            }
            if documentOfKey[key] != document {
                problem(
                    "document \(document) is \(type) \(KeyDescription.describe(key)), whose document is not it"
                )
            }
            let tokens = held[document]?.values.reduce(0) { $0 + $1.count } ?? 0
            if tokens != (lengths[document] ?? 0) {
                problem(
                    "document \(document) has \(tokens) tokens in its postings but length \(lengths[document] ?? 0)"
                )
            }
        }
        for document in Set(held.keys).union(lengths.keys).subtracting(documents.keys).sorted() {
            problem("document \(document) has postings or a length but no object")
        }
        for key in records.keys.sorted(by: { $0.lexicographicallyPrecedes($1) })
        where documentOfKey[key] == nil {
            problem("\(type) \(KeyDescription.describe(key)) is missing")
        }
        if let statistics {
            let tokens = lengths.values.reduce(0, +)
            if statistics.documents != documents.count || statistics.tokens != tokens {
                problem(
                    "its statistics say \(statistics.documents) documents of \(statistics.tokens) tokens; it holds \(documents.count) of \(tokens)"
                )
            }
            if let last = documents.keys.max(), statistics.nextDocument <= last {
                problem("its next document, \(statistics.nextDocument), is already used")
            }
        } else if !documents.isEmpty {
            problem("its statistics are missing")
        }
        // The terms themselves, when this library has the tokenizer that built them.
        let tokenizer = UnicodeTokenizer()
        guard index.tokenizer == tokenizer.identifier else { return report }
        for (key, record) in records.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            guard let document = documentOfKey[key] else { continue }
            let expected = TextDocument(record: record.value, fields: index.fields, tokenizer: tokenizer)
                .terms
            let found = held[document] ?? [:]
            if expected != found {
                let missing = expected.keys.filter { found[$0] == nil }.sorted()
                let extra = found.keys.filter { expected[$0] == nil }.sorted()
                let moved = expected.keys.filter { found[$0] != nil && found[$0] != expected[$0] }.sorted()
                var parts: [String] = []
                if !missing.isEmpty {
                    parts.append("missing terms \(missing.prefix(5).joined(separator: ", "))")
                }
                if !extra.isEmpty {
                    parts.append("terms it does not have \(extra.prefix(5).joined(separator: ", "))")
                }
                if !moved.isEmpty {
                    parts.append("other positions of \(moved.prefix(5).joined(separator: ", "))")
                }
                problem("\(type) \(KeyDescription.describe(key)): " + parts.joined(separator: "; "))
            }
        }
        return report
    }
}

/// What a full-text index holds, counted by reading all of it (``Transaction/textIndexReport(named:of:)``).
public struct TextIndexReport: Sendable, Equatable {
    /// Distinct terms.
    public var terms: Int
    /// Postings: (term, document) pairs.
    public var postings: Int
    /// Blocks the postings are kept in.
    public var blocks: Int
    /// Bytes of the index's two databases (their pages).
    public var bytes: Int
    /// The terms held by the most documents, most first (at most ten), with their document counts.
    public var commonTerms: [(term: String, documents: Int)]

    /// Two reports are equal when they count the same.
    public static func == (lhs: TextIndexReport, rhs: TextIndexReport) -> Bool {
        lhs.terms == rhs.terms && lhs.postings == rhs.postings && lhs.blocks == rhs.blocks
            && lhs.bytes == rhs.bytes
            && lhs.commonTerms.map(\.term) == rhs.commonTerms.map(\.term)
            && lhs.commonTerms.map(\.documents) == rhs.commonTerms.map(\.documents)
    }
}
