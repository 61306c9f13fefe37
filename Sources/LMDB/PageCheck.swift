import CLMDB
import Foundation

/// What a structural check of an environment's pages found (``Environment/checkPages(maxProblems:)``).
///
/// LMDB trusts every page it reads: a zeroed or overwritten page can make it abort, fault or walk
/// into the wrong memory. The check reads the pages of one committed version with its own reads of
/// `data.mdb` (never through LMDB's map, so a short file is an error rather than a `SIGBUS`) and
/// checks what LMDB relies on: every page a tree names exists and has the type its place requires,
/// node offsets and sizes stay inside their page, keys are in order within and across pages, every
/// leaf is at the tree's depth, page and entry counts match the database records, overflow runs fit
/// in the file, no page is used twice, and no page in use is also on the free list. A version that
/// passes can be read by LMDB without it touching a page outside the file or a malformed node; damage
/// inside values (which LMDB treats as opaque bytes) is for the layer above to find.
public struct PageCheck: Sendable {
    /// One problem: where it is and what is wrong.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// The page number, when the problem is on one page.
        public var page: Int?
        /// The database whose tree holds the page (`"main"`, `"free list"` or a database's name).
        public var database: String
        /// What is wrong, in words.
        public var message: String

        /// `page N of database: message`.
        public var description: String {
            if let page { return "page \(page) (\(database)): \(message)" }
            return "\(database): \(message)"
        }
    }

    /// The problems found, at most the number asked for.
    public var problems: [Problem] = []
    /// True when more problems were found than kept.
    public var truncated = false
    /// The committed version checked (LMDB's transaction id).
    public var version = 0
    /// The page size.
    public var pageSize = 0
    /// The last page number the version uses.
    public var lastPage = 0
    /// Branch, leaf and overflow pages read, over every tree.
    public var pagesInUse = 0
    /// Pages on the free list.
    public var freePages = 0
    /// Pages up to the last one that are in no tree and not on the free list (LMDB loses track of
    /// none in a committed version; a damaged tree or free list leaves some, and it is a problem).
    public var unaccountedPages = 0
    /// Databases checked (the main one, the free list and every named one).
    public var databases = 0
    /// Entries counted, over every database but the free list.
    public var entries = 0

    /// True when nothing was found.
    public var isClean: Bool { problems.isEmpty }
}

extension Environment {
    /// Checks the structure of every page of the current committed version from reads of its own
    /// (see ``PageCheck``), holding a read transaction so that the version's pages stay put while it
    /// reads them. Reads the whole used part of the file once: its cost grows with the file.
    ///
    /// A file found sound is trusted from then on (``fileTrust`` is ``FileTrust/checked``), and a
    /// writable environment records it as closed cleanly at once (`.clean-close`).
    ///
    /// - Parameter maxProblems: how many problems to keep before stopping early.
    /// - Throws: ``LMDBError`` when the file cannot be opened or read, or when a read transaction
    ///   cannot begin.
    public func checkPages(maxProblems: Int = 100) throws -> PageCheck {
        let file = path + "/data.mdb"
        let descriptor = Foundation.open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LMDBError(returnCode: errno, operation: "open \(file)") }
        defer { close(descriptor) }
        // The meta page of the version a read transaction holds; a busy writer may overwrite it
        // between the transaction's start and the read (two commits later), so try again then.
        for _ in 0..<20 {
            let result: PageCheck? = try read { tx in
                var walker = PageWalker(
                    descriptor: descriptor, file: file, pageSize: pageSize, maxProblems: max(1, maxProblems))
                guard let meta = walker.currentMeta(version: tx.id) else { return nil }
                walker.check(meta)
                return walker.report
            }
            if let result {
                // A sound file is trusted from now on (see `fileTrust`).
                if result.isClean { trustAfterCheck() }
                return result
            }
        }
        throw LMDBError(
            .corrupted, operation: "check \(file)",
            message:
                "no meta page holds the version being read (the file changes too fast, or both meta pages are damaged)"
        )
    }
}

/// The record of one database as LMDB stores it (`MDB_db`, 48 bytes).
private struct DatabaseRecord {
    static let size = 48
    var pad: UInt32
    var flags: UInt16
    var depth: Int
    var branchPages: Int
    var leafPages: Int
    var overflowPages: Int
    var entries: Int
    var root: UInt64

    init(_ bytes: ArraySlice<UInt8>) {
        let base = bytes.startIndex
        pad = UInt32(littleEndianBytes: bytes, at: base)
        flags = UInt16(truncatingIfNeeded: UInt32(littleEndianBytes: bytes, at: base + 4))
        depth = Int(UInt16(truncatingIfNeeded: UInt32(littleEndianBytes: bytes, at: base + 4) >> 16))
        branchPages = Int(truncatingIfNeeded: UInt64(littleEndianBytes: bytes, at: base + 8))
        leafPages = Int(truncatingIfNeeded: UInt64(littleEndianBytes: bytes, at: base + 16))
        overflowPages = Int(truncatingIfNeeded: UInt64(littleEndianBytes: bytes, at: base + 24))
        entries = Int(truncatingIfNeeded: UInt64(littleEndianBytes: bytes, at: base + 32))
        root = UInt64(littleEndianBytes: bytes, at: base + 40)
    }

    var isEmpty: Bool { root == UInt64.max }
    var usesDefaultKeyOrder: Bool { flags & UInt16(MDB_REVERSEKEY | MDB_INTEGERKEY) == 0 }
    var usesDefaultValueOrder: Bool {
        flags & UInt16(MDB_REVERSEDUP | MDB_INTEGERDUP) == 0
    }
}

extension UInt32 {
    fileprivate init(littleEndianBytes bytes: ArraySlice<UInt8>, at index: Int) {
        self =
            UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16
            | UInt32(bytes[index + 3]) << 24
    }
}

extension UInt64 {
    fileprivate init(littleEndianBytes bytes: ArraySlice<UInt8>, at index: Int) {
        self =
            UInt64(UInt32(littleEndianBytes: bytes, at: index))
            | UInt64(UInt32(littleEndianBytes: bytes, at: index + 4)) << 32
    }
}

/// LMDB's default order: bytes compared as unsigned, a prefix first.
private func precedes(_ left: ArraySlice<UInt8>, _ right: ArraySlice<UInt8>) -> Bool {
    left.withUnsafeBufferPointer { left in
        right.withUnsafeBufferPointer { right in
            let common = min(left.count, right.count)
            let order = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
            return order < 0 || (order == 0 && left.count < right.count)
        }
    }
}

/// Reads pages with `pread` and walks the trees of one version.
private struct PageWalker {
    // LMDB's page layout (64-bit builds of LMDB 0.9): a 16-byte header — page number (8), padding
    // (2), flags (2), then lower and upper free-space bounds (2 + 2) or an overflow page count (4) —
    // followed by 2-byte node offsets; nodes are an 8-byte header — data size low and high halves
    // (2 + 2; a branch node's child page number there and in the flags), flags (2), key size (2) —
    // then the key and the data.
    static let headerSize = 16
    static let nodeHeaderSize = 8
    static let branch: UInt16 = 0x01
    static let leaf: UInt16 = 0x02
    static let overflow: UInt16 = 0x04
    static let dirty: UInt16 = 0x10
    static let leaf2: UInt16 = 0x20
    static let subPage: UInt16 = 0x40
    static let keep: UInt16 = 0x8000
    static let bigData: UInt16 = 0x01
    static let subData: UInt16 = 0x02
    static let dupData: UInt16 = 0x04
    static let magic: UInt32 = 0xBEEF_C0DE
    static let maxDepth = 32

    let descriptor: Int32
    let file: String
    let pageSize: Int
    let maxProblems: Int
    var report = PageCheck()
    /// One bit per page: seen in a tree or on the free list.
    var seen: [UInt64] = []
    var lastPage = 0
    var stopped = false

    init(descriptor: Int32, file: String, pageSize: Int, maxProblems: Int) {
        self.descriptor = descriptor
        self.file = file
        self.pageSize = pageSize
        self.maxProblems = maxProblems
        report.pageSize = pageSize
    }

    mutating func problem(_ page: UInt64?, _ database: String, _ message: String) {
        guard !stopped else { return }
        if report.problems.count >= maxProblems {
            report.truncated = true
            stopped = true
            return
        }
        report.problems.append(
            PageCheck.Problem(
                page: page.map { Int(truncatingIfNeeded: $0) }, database: database, message: message))
    }

    /// Page `number`, or nil when the file does not hold all of it.
    func readPage(_ number: UInt64, count: Int = 1) -> [UInt8]? {
        let length = pageSize * count
        var bytes = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let read = bytes.withUnsafeMutableBytes { buffer in
                pread(
                    descriptor, buffer.baseAddress! + done, length - done,
                    off_t(Int(number) * pageSize + done))
            }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return nil }
            done += read
        }
        return bytes
    }

    /// The meta page (0 or 1) that describes `version`, with its two database records.
    mutating func currentMeta(version: Int) -> (free: DatabaseRecord, main: DatabaseRecord)? {
        for number in [UInt64(0), 1] {
            guard let page = readPage(number) else { continue }
            let bytes = page[...]
            let base = Self.headerSize
            guard UInt32(littleEndianBytes: bytes, at: base) == Self.magic,
                UInt64(littleEndianBytes: bytes, at: base + 128) == UInt64(version)
            else { continue }
            lastPage = Int(truncatingIfNeeded: UInt64(littleEndianBytes: bytes, at: base + 120))
            report.version = version
            report.lastPage = lastPage
            return (
                DatabaseRecord(bytes[(base + 24)..<(base + 72)]),
                DatabaseRecord(bytes[(base + 72)..<(base + 120)])
            )
        }
        return nil
    }

    mutating func check(_ meta: (free: DatabaseRecord, main: DatabaseRecord)) {
        guard lastPage >= 1, lastPage < Int.max / pageSize else {
            problem(nil, "meta page", "names \(lastPage) as its last page")
            return
        }
        var size = stat()
        if fstat(descriptor, &size) == 0, Int(size.st_size) < (lastPage + 1) * pageSize {
            problem(
                nil, "meta page",
                "the file holds \(size.st_size) bytes, but the version uses pages up to byte \((lastPage + 1) * pageSize)"
            )
            return
        }
        seen = [UInt64](repeating: 0, count: (lastPage + 1 + 63) / 64)
        markSeen(0)
        markSeen(1)
        walkDatabase(meta.main, name: "main", isMain: true)
        walkDatabase(meta.free, name: "free list", isFreeList: true)
        guard !stopped else { return }
        var unaccounted = 0
        for word in seen.indices {
            let valid =
                word == seen.count - 1 && (lastPage + 1) % 64 != 0
                ? (UInt64(1) << UInt64((lastPage + 1) % 64)) - 1 : UInt64.max
            unaccounted += (~seen[word] & valid).nonzeroBitCount
        }
        report.unaccountedPages = unaccounted
        if unaccounted > 0 {
            problem(nil, "free list", "\(unaccounted) pages are in no tree and not on the free list")
        }
    }

    @discardableResult
    mutating func markSeen(_ page: UInt64) -> Bool {
        let index = Int(page)
        let word = index / 64
        let bit = UInt64(1) << UInt64(index % 64)
        if seen[word] & bit != 0 { return false }
        seen[word] |= bit
        return true
    }

    /// Counts gathered over one tree.
    struct TreeCounts {
        var branch = 0
        var leaf = 0
        var overflow = 0
        var entries = 0
    }

    mutating func walkDatabase(
        _ record: DatabaseRecord, name: String, isMain: Bool = false, isFreeList: Bool = false,
        isDuplicateTree: Bool = false
    ) {
        guard !stopped else { return }
        report.databases += isDuplicateTree ? 0 : 1
        if record.isEmpty {
            if record.depth != 0 || record.entries != 0 || record.leafPages != 0 || record.branchPages != 0 {
                problem(nil, name, "is empty but its record counts \(record.entries) entries")
            }
            return
        }
        guard record.depth >= 1, record.depth <= Self.maxDepth else {
            problem(nil, name, "its record gives an impossible tree depth \(record.depth)")
            return
        }
        var counts = TreeCounts()
        var context = TreeContext(
            name: name, record: record, isMain: isMain, isFreeList: isFreeList,
            isDuplicateTree: isDuplicateTree)
        walkPage(record.root, level: 1, low: nil, high: nil, context: &context, counts: &counts)
        guard !stopped else { return }
        if counts.branch != record.branchPages || counts.leaf != record.leafPages
            || counts.overflow != record.overflowPages
        {
            problem(
                nil, name,
                "its record counts \(record.branchPages) branch, \(record.leafPages) leaf and \(record.overflowPages) overflow pages, its tree has \(counts.branch), \(counts.leaf) and \(counts.overflow)"
            )
        }
        if counts.entries != record.entries {
            problem(
                nil, name, "its record counts \(record.entries) entries, its tree holds \(counts.entries)")
        }
        report.pagesInUse += counts.branch + counts.leaf + counts.overflow
        if !isFreeList && !isDuplicateTree { report.entries += counts.entries }
    }

    struct TreeContext {
        var name: String
        var record: DatabaseRecord
        var isMain: Bool
        var isFreeList: Bool
        var isDuplicateTree: Bool
    }

    /// Reads the page and checks its place in the tree; nil when it cannot be walked further.
    mutating func claimPage(_ number: UInt64, context: TreeContext, parent: String) -> [UInt8]? {
        guard number >= 2, number <= UInt64(lastPage) else {
            problem(nil, context.name, "\(parent) names page \(number), outside pages 2…\(lastPage)")
            return nil
        }
        guard markSeen(number) else {
            problem(number, context.name, "\(parent) names a page already used elsewhere")
            return nil
        }
        guard let page = readPage(number) else {
            problem(number, context.name, "the file ends before this page")
            return nil
        }
        let stored = UInt64(littleEndianBytes: page[...], at: 0)
        guard stored == number else {
            problem(number, context.name, "the page says it is page \(stored)")
            return nil
        }
        return page
    }

    mutating func walkPage(
        _ number: UInt64, level: Int, low: ArraySlice<UInt8>?, high: ArraySlice<UInt8>?,
        context: inout TreeContext, counts: inout TreeCounts
    ) {
        guard !stopped else { return }
        let parent = level == 1 ? "the database record" : "a branch page"
        guard let page = claimPage(number, context: context, parent: parent) else { return }
        let flags = UInt16(page[10]) | UInt16(page[11]) << 8
        let kind = flags & ~(Self.dirty | Self.keep)
        let isLeafLevel = level == context.record.depth
        let fixedSize = context.isDuplicateTree && context.record.flags & UInt16(MDB_DUPFIXED) != 0
        let expected: UInt16 = isLeafLevel ? (fixedSize ? Self.leaf | Self.leaf2 : Self.leaf) : Self.branch
        guard kind == expected else {
            problem(
                number, context.name,
                "has page flags 0x\(String(kind, radix: 16)) where a \(isLeafLevel ? "leaf" : "branch") page belongs (0x\(String(expected, radix: 16)))"
            )
            return
        }
        guard let layout = nodeLayout(page[...], base: 0, size: pageSize, page: number, context: context)
        else {
            return
        }
        if isLeafLevel { counts.leaf += 1 } else { counts.branch += 1 }
        let checksOrder = context.record.usesDefaultKeyOrder
        if kind & Self.leaf2 != 0 {
            let width = Int(context.record.pad)
            guard width > 0, Self.headerSize + layout.count * width <= pageSize else {
                problem(number, context.name, "holds \(layout.count) values of \(width) bytes, more than fit")
                return
            }
            var previous: ArraySlice<UInt8>? = nil
            for index in 0..<layout.count {
                let start = Self.headerSize + index * width
                let key = page[start..<(start + width)]
                if checksOrder {
                    checkOrder(key, previous: previous, low: low, high: high, page: number, context: context)
                }
                previous = key
            }
            counts.entries += layout.count
            return
        }
        guard layout.count >= 1 else {
            problem(number, context.name, "holds no entries")
            return
        }
        var previous: ArraySlice<UInt8>? = nil
        var children: [(page: UInt64, low: ArraySlice<UInt8>?)] = []
        for index in 0..<layout.count {
            guard let node = node(page[...], base: 0, size: pageSize, offset: layout.offsets[index]) else {
                problem(number, context.name, "entry \(index) runs past the end of the page")
                return
            }
            if !isLeafLevel {
                let child = UInt64(node.low) | UInt64(node.high) << 16 | UInt64(node.flags) << 32
                let key: ArraySlice<UInt8>? = index == 0 ? low : node.key
                if index > 0, checksOrder {
                    checkOrder(
                        node.key, previous: previous, low: low, high: high, page: number, context: context)
                }
                if index > 0 { previous = node.key }
                children.append((child, key))
                continue
            }
            if checksOrder && !context.isFreeList {
                checkOrder(node.key, previous: previous, low: low, high: high, page: number, context: context)
            }
            previous = node.key
            leafEntry(node, page: page, number: number, index: index, context: &context, counts: &counts)
            guard !stopped else { return }
        }
        for (index, child) in children.enumerated() {
            let childHigh = index + 1 < children.count ? children[index + 1].low : high
            walkPage(
                child.page, level: level + 1, low: child.low, high: childHigh, context: &context,
                counts: &counts)
            guard !stopped else { return }
        }
    }

    /// The node offsets of a page or sub-page at `base` of `size` bytes, checked against its bounds.
    mutating func nodeLayout(
        _ bytes: ArraySlice<UInt8>, base: Int, size: Int, page: UInt64, context: TreeContext
    ) -> (count: Int, offsets: [Int])? {
        let lower = Int(bytes[base + 12]) | Int(bytes[base + 13]) << 8
        let upper = Int(bytes[base + 14]) | Int(bytes[base + 15]) << 8
        guard lower >= Self.headerSize, lower <= upper, upper <= size, (lower - Self.headerSize) % 2 == 0
        else {
            problem(
                page, context.name, "has free-space bounds \(lower)…\(upper) that do not fit in \(size) bytes"
            )
            return nil
        }
        let count = (lower - Self.headerSize) / 2
        let flags = UInt16(bytes[base + 10]) | UInt16(bytes[base + 11]) << 8
        if flags & Self.leaf2 != 0 { return (count, []) }
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for index in 0..<count {
            let at = base + Self.headerSize + 2 * index
            let offset = Int(bytes[at]) | Int(bytes[at + 1]) << 8
            guard offset >= upper, offset + Self.nodeHeaderSize <= size else {
                problem(
                    page, context.name,
                    "entry \(index) starts at \(offset), outside the page's \(upper)…\(size)")
                return nil
            }
            offsets.append(offset)
        }
        return (count, offsets)
    }

    struct Node {
        var low: UInt16
        var high: UInt16
        var flags: UInt16
        var key: ArraySlice<UInt8>
        /// The bytes after the key that fit in the page (the whole value unless it is on overflow pages).
        var dataStart: Int
        var dataSize: Int { Int(low) | Int(high) << 16 }
    }

    func node(_ bytes: ArraySlice<UInt8>, base: Int, size: Int, offset: Int) -> Node? {
        let at = base + offset
        let low = UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
        let high = UInt16(bytes[at + 2]) | UInt16(bytes[at + 3]) << 8
        let flags = UInt16(bytes[at + 4]) | UInt16(bytes[at + 5]) << 8
        let keySize = Int(bytes[at + 6]) | Int(bytes[at + 7]) << 8
        let keyStart = at + Self.nodeHeaderSize
        guard keyStart + keySize <= base + size else { return nil }
        return Node(
            low: low, high: high, flags: flags, key: bytes[keyStart..<(keyStart + keySize)],
            dataStart: keyStart + keySize)
    }

    mutating func checkOrder(
        _ key: ArraySlice<UInt8>, previous: ArraySlice<UInt8>?, low: ArraySlice<UInt8>?,
        high: ArraySlice<UInt8>?, page: UInt64, context: TreeContext
    ) {
        if let previous, !precedes(previous, key) {
            problem(page, context.name, "its keys are out of order")
        } else if let low, precedes(key, low) {
            problem(page, context.name, "holds a key below the range its branch page gives it")
        } else if let high, !precedes(key, high) {
            problem(page, context.name, "holds a key above the range its branch page gives it")
        }
    }

    mutating func leafEntry(
        _ node: Node, page: [UInt8], number: UInt64, index: Int, context: inout TreeContext,
        counts: inout TreeCounts
    ) {
        let known = Self.bigData | Self.subData | Self.dupData
        guard node.flags & ~known == 0,
            node.flags & Self.bigData == 0 || node.flags & (Self.subData | Self.dupData) == 0
        else {
            problem(number, context.name, "entry \(index) has node flags 0x\(String(node.flags, radix: 16))")
            return
        }
        if context.isDuplicateTree && node.flags != 0 {
            problem(
                number, context.name,
                "a duplicate value \(index) has node flags 0x\(String(node.flags, radix: 16))")
            return
        }
        var value: ArraySlice<UInt8>
        if node.flags & Self.bigData != 0 {
            guard node.dataStart + 8 <= pageSize else {
                problem(number, context.name, "entry \(index) runs past the end of the page")
                return
            }
            let first = UInt64(littleEndianBytes: page[...], at: node.dataStart)
            guard let run = overflowRun(first, size: node.dataSize, context: context, from: number) else {
                return
            }
            counts.overflow += run.count
            if context.isFreeList {
                value = run.bytes[Self.headerSize..<(Self.headerSize + node.dataSize)]
            } else {
                counts.entries += 1
                return
            }
        } else {
            guard node.dataStart + node.dataSize <= pageSize else {
                problem(
                    number, context.name,
                    "entry \(index) holds \(node.dataSize) bytes, more than the page has left")
                return
            }
            value = page[node.dataStart..<(node.dataStart + node.dataSize)]
        }
        if context.isFreeList {
            counts.entries += 1
            freeListEntry(node.key, value, page: number)
            return
        }
        let isDuplicates = context.record.flags & UInt16(MDB_DUPSORT) != 0
        if node.flags & Self.dupData != 0 {
            guard isDuplicates else {
                problem(
                    number, context.name,
                    "entry \(index) holds several values in a database without duplicates")
                return
            }
            if node.flags & Self.subData != 0 {
                guard value.count == DatabaseRecord.size else {
                    problem(number, context.name, "entry \(index) holds a \(value.count)-byte tree record")
                    return
                }
                walkDuplicateTree(
                    DatabaseRecord(value), parent: context.record, name: context.name, counts: &counts)
            } else {
                subPage(value, page: number, index: index, context: context, counts: &counts)
            }
            return
        }
        if node.flags & Self.subData != 0 {
            guard context.isMain, value.count == DatabaseRecord.size else {
                problem(number, context.name, "entry \(index) claims to be a database record but is not one")
                return
            }
            counts.entries += 1
            let name = String(decoding: node.key, as: UTF8.self)
            walkDatabase(DatabaseRecord(value), name: name)
            return
        }
        counts.entries += 1
    }

    /// The tree of one key's values in a database with duplicates.
    mutating func walkDuplicateTree(
        _ record: DatabaseRecord, parent: DatabaseRecord, name: String, counts: inout TreeCounts
    ) {
        // The values are the keys of the tree; they sort like the parent's values.
        var adjusted = record
        adjusted.flags = UInt16(parent.flags & UInt16(MDB_DUPFIXED)) != 0 ? UInt16(MDB_DUPFIXED) : 0
        if parent.flags & UInt16(MDB_REVERSEDUP) != 0 { adjusted.flags |= UInt16(MDB_REVERSEKEY) }
        if parent.flags & UInt16(MDB_INTEGERDUP) != 0 { adjusted.flags |= UInt16(MDB_INTEGERKEY) }
        if record.isEmpty {
            problem(nil, name, "one key's tree of values is empty")
            return
        }
        guard record.depth >= 1, record.depth <= Self.maxDepth else {
            problem(nil, name, "one key's tree of values has an impossible depth \(record.depth)")
            return
        }
        var sub = TreeCounts()
        var context = TreeContext(
            name: name, record: adjusted, isMain: false, isFreeList: false, isDuplicateTree: true)
        walkPage(record.root, level: 1, low: nil, high: nil, context: &context, counts: &sub)
        guard !stopped else { return }
        if sub.branch != record.branchPages || sub.leaf != record.leafPages || sub.entries != record.entries {
            problem(
                nil, name,
                "one key's tree of values counts \(record.entries) values on \(record.branchPages + record.leafPages) pages; it holds \(sub.entries) on \(sub.branch + sub.leaf)"
            )
        }
        // The parent's record counts every value but only the pages of its own tree.
        report.pagesInUse += sub.branch + sub.leaf
        counts.entries += sub.entries
    }

    /// The values of one key kept inside its node (a sub-page).
    mutating func subPage(
        _ bytes: ArraySlice<UInt8>, page: UInt64, index: Int, context: TreeContext, counts: inout TreeCounts
    ) {
        guard bytes.count >= Self.headerSize else {
            problem(page, context.name, "entry \(index) holds a \(bytes.count)-byte list of values")
            return
        }
        let base = bytes.startIndex
        let flags = UInt16(bytes[base + 10]) | UInt16(bytes[base + 11]) << 8
        let fixed = context.record.flags & UInt16(MDB_DUPFIXED) != 0
        let expected = Self.leaf | Self.subPage | (fixed ? Self.leaf2 : 0)
        guard flags & ~(Self.dirty | Self.keep) == expected else {
            problem(
                page, context.name,
                "entry \(index) holds a list of values with flags 0x\(String(flags, radix: 16))")
            return
        }
        guard let layout = nodeLayout(bytes, base: base, size: bytes.count, page: page, context: context)
        else {
            return
        }
        guard layout.count >= 1 else {
            problem(page, context.name, "entry \(index) holds an empty list of values")
            return
        }
        let ordered = context.record.usesDefaultValueOrder
        var previous: ArraySlice<UInt8>? = nil
        if fixed {
            // A list of fixed-size values keeps their size where a page keeps its padding.
            let width = Int(bytes[base + 8]) | Int(bytes[base + 9]) << 8
            guard width > 0, Self.headerSize + layout.count * width <= bytes.count else {
                problem(
                    page, context.name,
                    "entry \(index) holds \(layout.count) values of \(width) bytes, more than fit")
                return
            }
            for value in 0..<layout.count {
                let start = base + Self.headerSize + value * width
                let key = bytes[start..<(start + width)]
                if ordered {
                    checkOrder(key, previous: previous, low: nil, high: nil, page: page, context: context)
                }
                previous = key
            }
        } else {
            for offset in layout.offsets {
                guard let node = node(bytes, base: base, size: bytes.count, offset: offset) else {
                    problem(page, context.name, "entry \(index) holds a value that runs past its list")
                    return
                }
                if ordered {
                    checkOrder(
                        node.key, previous: previous, low: nil, high: nil, page: page, context: context)
                }
                previous = node.key
            }
        }
        counts.entries += layout.count
    }

    /// Claims the overflow pages of a value of `size` bytes starting at `first`.
    mutating func overflowRun(
        _ first: UInt64, size: Int, context: TreeContext, from page: UInt64
    ) -> (count: Int, bytes: [UInt8])? {
        guard let header = claimPage(first, context: context, parent: "an entry of page \(page)") else {
            return nil
        }
        let flags = (UInt16(header[10]) | UInt16(header[11]) << 8) & ~(Self.dirty | Self.keep)
        guard flags == Self.overflow else {
            problem(
                first, context.name,
                "has page flags 0x\(String(flags, radix: 16)) where an overflow page belongs")
            return nil
        }
        let count = Int(UInt32(littleEndianBytes: header[...], at: 12))
        let needed = (size + Self.headerSize + pageSize - 1) / pageSize
        guard count >= needed, first + UInt64(count) - 1 <= UInt64(lastPage) else {
            problem(
                first, context.name,
                "an overflow run of \(count) pages cannot hold \(size) bytes within pages …\(lastPage)")
            return nil
        }
        for next in (first + 1)..<(first + UInt64(count)) where !markSeen(next) {
            problem(next, context.name, "belongs to an overflow run and is used elsewhere too")
            return nil
        }
        // Only the free list's values are read past their first page (they list page numbers).
        if context.isFreeList {
            guard let all = readPage(first, count: count) else {
                problem(first, context.name, "the file ends inside this overflow run")
                return nil
            }
            return (count, all)
        }
        return (count, header)
    }

    /// A free-list entry: a transaction id and the pages it freed (a count, then the page numbers).
    mutating func freeListEntry(_ key: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>, page: UInt64) {
        guard key.count == 8, value.count >= 8, value.count % 8 == 0 else {
            problem(page, "free list", "an entry has a \(key.count)-byte key and a \(value.count)-byte value")
            return
        }
        let count = UInt64(littleEndianBytes: value, at: value.startIndex)
        guard count == UInt64(value.count / 8 - 1) else {
            problem(
                page, "free list", "an entry says it lists \(count) pages in \(value.count / 8 - 1) slots")
            return
        }
        for slot in 1..<(value.count / 8) {
            let free = UInt64(littleEndianBytes: value, at: value.startIndex + slot * 8)
            guard free >= 2, free <= UInt64(lastPage) else {
                problem(page, "free list", "lists page \(free), outside pages 2…\(lastPage)")
                return
            }
            guard markSeen(free) else {
                problem(free, "free list", "is listed as free but is in use (or listed twice)")
                return
            }
            report.freePages += 1
        }
    }
}
