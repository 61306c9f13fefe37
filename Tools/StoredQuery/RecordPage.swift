import Foundation
import Lode
import LodeInspection
import LodeQuery

/// One field to order records by.
package struct SortKey: Sendable, Equatable {
    /// The field (a dotted path for nested values).
    package var field: String
    /// Ascending (`field`) or descending (`-field`).
    package var ascending: Bool

    /// A key ordering by `field`.
    package init(field: String, ascending: Bool = true) {
        self.field = field
        self.ascending = ascending
    }

    /// `title,-rank`: fields separated by commas, a leading `-` for descending.
    package static func parse(_ text: String) -> [SortKey] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map
        {
            $0.hasPrefix("-") ? SortKey(field: String($0.dropFirst()), ascending: false) : SortKey(field: $0)
        }
    }
}

/// Why a query or one of its cursors was refused.
package struct QueryError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    package var description: String
}

/// Where a page ends: the primary key of the last record it examined and, for an order other than the
/// primary key's, that record's sort values. The next page starts after it.
package struct PageCursor: Sendable, Equatable {
    /// The key-encoded primary key.
    package var key: [UInt8]
    /// The values of the sort fields (empty in primary-key order).
    package var sortValues: [CBORValue]

    /// A cursor after the record `key` with `sortValues`.
    package init(key: [UInt8], sortValues: [CBORValue] = []) {
        self.key = key
        self.sortValues = sortValues
    }

    /// The cursor as URL-safe text: base64url of a CBOR array of the key and the sort values.
    package var token: String {
        let bytes = CBORValue.array([.bytes(key)] + sortValues).encoded
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Reads a cursor written by ``token``.
    ///
    /// - Throws: ``QueryError`` for text that is not a cursor.
    package init(token: String) throws(QueryError) {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard token.count <= 4096, let data = Data(base64Encoded: base64),
            case .array(let items)? = try? CBORValue(decoding: Array(data)),
            case .bytes(let key)? = items.first
        else {
            throw QueryError(
                description: "the page cursor \"\(token.prefix(40))\" is not one this server wrote")
        }
        self.init(key: key, sortValues: Array(items.dropFirst()))
    }
}

/// A record of a page: its primary key and its value.
package struct RecordRow: Sendable, Equatable {
    /// The key-encoded primary key.
    package var key: [UInt8]
    /// The record decoded.
    package var value: CBORValue

    /// The record stored under `key`, decoded as `value`.
    package init(key: [UInt8], value: CBORValue) {
        self.key = key
        self.value = value
    }
}

/// One page of a query's records.
package struct RecordPage: Sendable {
    /// The records, in the query's order.
    package var rows: [RecordRow]
    /// Where the next page starts; nil when no record follows.
    package var next: PageCursor?
    /// How the records were found and ordered, as `--explain` prints it.
    package var plan: String
    /// How many records were read to make the page.
    package var examined: Int
    /// True when the page stopped at its reading budget before it was full: more records may match
    /// after ``next``.
    package var stoppedEarly: Bool
}

/// A query over the records of one stored type, without the app's types: a `--where` filter and an
/// order, read a page at a time. Pages are found the way `lode-dump dump` finds its records (the
/// planner over the primary key and the indexes) and continue from a cursor, so a page costs what it
/// reads, not what came before it: in primary-key order, or in the order of a single-field index that
/// holds every object, a page reads about as many records as it shows (a filter reads at most
/// `budget` records before it returns what it found); any other order reads every candidate once
/// and keeps only the page.
package struct RecordQuery: Sendable {
    /// The stored type's name.
    package var type: String
    /// The filter, or nil for every record.
    package var filter: WhereExpression?
    /// The order; empty for primary-key order.
    package var sort: [SortKey]

    /// A query of `type`'s records matching the `--where` expression `filter` (nil or empty: all),
    /// ordered by `sort` (`SortKey.parse`'s form; nil or empty: by primary key).
    ///
    /// - Throws: ``ExpressionError`` for a malformed filter.
    package init(type: String, filter: String?, sort: String?) throws(ExpressionError) {
        self.type = type
        let text = filter?.trimmingCharacters(in: .whitespaces) ?? ""
        self.filter = text.isEmpty ? nil : try WhereExpression.parse(text)
        self.sort = SortKey.parse(sort ?? "")
    }

    /// The most primary keys an index range is gathered for, to be read in key order: a range that
    /// holds more matches at least this share of the records, and walking them in key order finds a
    /// page's matches sooner.
    package static let gatheredKeys = 2_000

    /// The page of at most `limit` records after `cursor` (nil: from the first), read in `tx`.
    ///
    /// The order decides how much a page reads, as the library's planner decides its orderings: the
    /// primary key's order or an index's (a single-field index that holds every object), ascending or
    /// descending, is walked from the cursor — over the filter's ranges when the filter is planned on
    /// the same index — so a page reads about as many records as it shows; any other order reads
    /// every candidate once and keeps the page. Ties in a descending order come in descending
    /// primary-key order.
    ///
    /// - Throws: ``LodeError/typeNotFound(_:)`` for a type the store does not hold,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that is not CBOR, and
    ///   what reading the store throws.
    package func page(
        after cursor: PageCursor?, limit: Int, budget: Int = 100_000, gathering: Int = gatheredKeys,
        in tx: Transaction
    ) throws -> RecordPage {
        let limit = max(1, limit)
        let storedType = try tx.storedType(named: type)
        let (chosen, found) = try plan(filter, type: storedType, in: tx)
        if sort.isEmpty || (sort.count == 1 && sort[0].field == storedType.primaryKey) {
            return try keyOrderPage(
                chosen, found: found, after: cursor?.key,
                descending: sort.first.map { !$0.ascending } ?? false,
                limit: limit, budget: budget, gathering: gathering, tx)
        }
        // An encrypted store's indexes keep hashed keys: they give no order.
        if sort.count == 1, !tx.store.isEncrypted,
            let index = storedType.indexes.first(where: {
                $0.fields == [sort[0].field] && $0.entryCount == storedType.objectCount
            })
        {
            switch chosen {
            case .scan:
                return try indexOrderPage(
                    index: index.name, ranges: nil, found: found, after: cursor, limit: limit, budget: budget,
                    tx)
            case .ranges(index.name?, let ranges):
                // The filter is planned on the index that gives the order: one walk of its ranges.
                return try indexOrderPage(
                    index: index.name, ranges: ranges, found: found, after: cursor, limit: limit,
                    budget: budget, tx)
            default: break
            }
        }
        return try sortedPage(chosen, found: found, after: cursor, limit: limit, gathering: gathering, tx)
    }

    /// Primary-key order, ascending or descending: the plan's records from the cursor on, filtered,
    /// until the page is full or the budget is spent.
    private func keyOrderPage(
        _ chosen: Plan, found: String, after cursor: [UInt8]?, descending: Bool, limit: Int, budget: Int,
        gathering: Int, _ tx: Transaction
    ) throws -> RecordPage {
        var page = RecordPage(
            rows: [], next: nil, plan: "\(found); in primary-key order" + (descending ? ", descending" : ""),
            examined: 0, stoppedEarly: false)
        var lastExamined: [UInt8]?
        /// Takes one record; false once the page is full or the budget spent.
        func take(_ record: StoredRecord) throws -> Bool {
            if page.rows.count == limit {
                // One more match exists: the page ends at its last row.
                page.next = PageCursor(key: page.rows[limit - 1].key)
                return false
            }
            if page.examined == budget {
                page.next = lastExamined.map { PageCursor(key: $0) }
                page.stoppedEarly = true
                return false
            }
            page.examined += 1
            lastExamined = record.key
            let value = try record.value(type: type)
            if filter?.matches(value) ?? true { page.rows.append(RecordRow(key: record.key, value: value)) }
            return true
        }
        if try !walkCandidates(chosen, after: cursor, descending: descending, gathering: gathering, tx, take)
        {
            page.plan =
                "\(found), matching more than \(gathering) objects after the cursor: "
                + "walked in primary-key order instead, the filter checked on each record"
        }
        return page
    }

    /// Walks the records in primary-key order (descending when `descending`) from `start` on — the
    /// keys strictly after `exclusive`, when given — inside `range` when given, calling `take` until
    /// it returns false. Returns false when `take` stopped the walk.
    private func walkRecords(
        from start: [UInt8]?, after exclusive: [UInt8]?, range: KeyRange?, descending: Bool,
        _ tx: Transaction,
        _ take: (StoredRecord) throws -> Bool
    ) throws -> Bool {
        var from = start
        var bound = exclusive
        while true {
            let batch = try tx.storedRecords(of: type, from: from, reverse: descending, limit: 256)
            for record in batch {
                if let bound {
                    // Keys at or beyond the bound were seen (or lie before the cursor).
                    let beyond =
                        descending
                        ? !record.key.lexicographicallyPrecedes(bound)
                        : !bound.lexicographicallyPrecedes(record.key)
                    if beyond { continue }
                }
                switch range?.position(of: record.key) {
                case .before?: if descending { return true } else { continue }
                case .after?: if descending { continue } else { return true }
                default: break
                }
                guard try take(record) else { return false }
            }
            guard batch.count == 256, let last = batch.last else { return true }
            // Forward, no key lies between `last` and `last + [0]`; backward, the next batch starts at
            // `last` again and skips it.
            from = descending ? last.key : last.key + [0]
            bound = descending ? last.key : bound
        }
    }

    /// Calls `take` with the plan's candidates after `cursor` in primary-key order (descending when
    /// `descending`) until it returns false. An index range is gathered, sorted and read by key,
    /// unless it holds more than `gathering` keys after the cursor: then every record from the cursor
    /// on is walked instead (the caller checks the filter on each), and the result is false.
    private func walkCandidates(
        _ chosen: Plan, after cursor: [UInt8]?, descending: Bool, gathering: Int, _ tx: Transaction,
        _ take: (StoredRecord) throws -> Bool
    ) throws -> Bool {
        // Ascending, the first key after the cursor: keys are self-delimiting, so no key lies between
        // `cursor` and `cursor + [0]`. Descending, the cursor itself, skipped.
        let start = cursor.map { descending ? $0 : $0 + [0] }
        switch chosen {
        case .scan:
            _ = try walkRecords(from: start, after: cursor, range: nil, descending: descending, tx, take)
        case .ranges(nil, let ranges):
            for range in descending ? ranges.reversed() : ranges {
                var from: [UInt8]? = descending ? range.reverseStart : range.forwardStart
                if let start {
                    let beforeStart =
                        descending
                        ? from.map { start.lexicographicallyPrecedes($0) } ?? true
                        : from.map { $0.lexicographicallyPrecedes(start) } ?? true
                    if beforeStart { from = start }
                }
                guard
                    try walkRecords(from: from, after: cursor, range: range, descending: descending, tx, take)
                else { break }
            }
        case .ranges(let index?, let ranges):
            var keys: Set<[UInt8]> = []
            var tooMany = false
            for range in ranges {
                /// Takes one primary key the range yields; false once there are too many.
                func gather(_ primaryKey: [UInt8]) -> Bool {
                    if let cursor {
                        let seen =
                            descending
                            ? !primaryKey.lexicographicallyPrecedes(cursor)
                            : !cursor.lexicographicallyPrecedes(primaryKey)
                        if seen { return true }
                    }
                    keys.insert(primaryKey)
                    tooMany = keys.count > gathering
                    return !tooMany
                }
                try forEachPrimaryKey(in: range, of: type, index: index, tx, gather)
                if tooMany {
                    _ = try walkRecords(
                        from: start, after: cursor, range: nil, descending: descending, tx, take)
                    return false
                }
            }
            let ordered = keys.sorted {
                descending ? $1.lexicographicallyPrecedes($0) : $0.lexicographicallyPrecedes($1)
            }
            for key in ordered {
                guard let record = try tx.storedRecord(of: type, key: key) else { continue }
                guard try take(record) else { break }
            }
        }
        return true
    }

    /// The order of one field that a single-field index holds for every object, ascending or
    /// descending: the index walked from the cursor's value — over `ranges` only, when the filter is
    /// planned on the same index — entries of one value in primary-key order (descending when the
    /// order is).
    private func indexOrderPage(
        index: String, ranges: [KeyRange]?, found: String, after cursor: PageCursor?, limit: Int, budget: Int,
        _ tx: Transaction
    ) throws -> RecordPage {
        let field = sort[0].field
        let descending = !sort[0].ascending
        var page = RecordPage(
            rows: [], next: nil,
            plan: "\(found); in the order of index \(type).\(index) (\(field))"
                + (descending ? ", descending" : ""),
            examined: 0, stoppedEarly: false)
        var cursorValue: [UInt8]?
        if let cursor, let value = cursor.sortValues.first {
            var bytes: [UInt8] = []
            try KeyEncoder().append(value, to: &bytes)
            cursorValue = bytes
        }
        var last: RecordRow?
        func cursorAt(_ row: RecordRow) -> PageCursor {
            PageCursor(key: row.key, sortValues: [row.value.value(atPath: field) ?? .null])
        }
        /// Takes one index entry; false once the page is full or the budget spent.
        func take(_ entry: (key: [UInt8], primaryKey: [UInt8])) throws -> Bool {
            if let cursor, let cursorValue, entry.key == cursorValue {
                // Entries of the cursor's value up to the cursor's record were on earlier pages.
                let seen =
                    descending
                    ? !entry.primaryKey.lexicographicallyPrecedes(cursor.key)
                    : !cursor.key.lexicographicallyPrecedes(entry.primaryKey)
                if seen { return true }
            }
            if page.rows.count == limit {
                page.next = page.rows.last.map(cursorAt)
                return false
            }
            if page.examined == budget {
                page.next = last.map(cursorAt)
                page.stoppedEarly = true
                return false
            }
            guard let record = try tx.storedRecord(of: type, key: entry.primaryKey) else { return true }
            page.examined += 1
            let row = RecordRow(key: record.key, value: try record.value(type: type))
            last = row
            if filter?.matches(row.value) ?? true { page.rows.append(row) }
            return true
        }
        let walked = ranges ?? [KeyRange()]
        walk: for range in descending ? walked.reversed() : walked {
            var from: [UInt8]? = descending ? range.reverseStart : range.forwardStart
            if let cursorValue {
                let beforeCursor =
                    descending
                    ? from.map { cursorValue.lexicographicallyPrecedes($0) } ?? true
                    : from.map { $0.lexicographicallyPrecedes(cursorValue) } ?? true
                if beforeCursor { from = cursorValue }
            }
            var full = false
            try tx.forEachStoredIndexEntry(of: type, index: index, from: from, reverse: descending) {
                key, primaryKey in
                if let cursorValue {
                    // Values the cursor has passed.
                    let passed =
                        descending
                        ? cursorValue.lexicographicallyPrecedes(key)
                        : key.lexicographicallyPrecedes(cursorValue)
                    if passed { return true }
                }
                switch range.position(of: key) {
                case .before: return !descending
                case .after: return descending
                case .inside: break
                }
                full = try !take((key: key, primaryKey: primaryKey))
                return !full
            }
            if full { break walk }
        }
        return page
    }

    /// Any other order: every candidate read once, streamed, the first `limit` after the cursor kept
    /// (the page holds at most `limit + 1` records while it reads).
    private func sortedPage(
        _ chosen: Plan, found: String, after cursor: PageCursor?, limit: Int, gathering: Int,
        _ tx: Transaction
    ) throws -> RecordPage {
        let order = sort.map { ($0.ascending ? "" : "-") + $0.field }.joined(separator: ",")
        var page = RecordPage(
            rows: [], next: nil,
            plan: "\(found); sorted by \(order): no single-field index over every object gives this order, "
                + "so every candidate is read and the page's records kept",
            examined: 0, stoppedEarly: false)
        /// True when `lhs` comes before `rhs` (sort values, then primary key).
        func precedes(_ lhs: (values: [CBORValue], key: [UInt8]), _ rhs: (values: [CBORValue], key: [UInt8]))
            -> Bool
        {
            for (position, key) in sort.enumerated() {
                let order = compare(lhs.values[position], rhs.values[position])
                if order != 0 { return key.ascending ? order < 0 : order > 0 }
            }
            // Ties in the first key's direction, as a walk of an index in that direction gives them.
            return sort[0].ascending
                ? lhs.key.lexicographicallyPrecedes(rhs.key) : rhs.key.lexicographicallyPrecedes(lhs.key)
        }
        let after = cursor.map { (values: $0.sortValues, key: $0.key) }
        if let after, after.values.count != sort.count {
            throw QueryError(description: "the page cursor belongs to another order than \(order)")
        }
        var kept: [(values: [CBORValue], key: [UInt8], value: CBORValue)] = []
        func consider(_ record: StoredRecord) throws {
            page.examined += 1
            let value = try record.value(type: type)
            guard filter?.matches(value) ?? true else { return }
            let candidate = (values: sort.map { value.value(atPath: $0.field) ?? .null }, key: record.key)
            if let after, !precedes(after, candidate) { return }
            if kept.count == limit + 1, let last = kept.last, !precedes(candidate, (last.values, last.key)) {
                return
            }
            let position =
                kept.firstIndex { !precedes(($0.values, $0.key), candidate) } ?? kept.endIndex
            kept.insert((candidate.values, candidate.key, value), at: position)
            if kept.count > limit + 1 { kept.removeLast() }
        }
        _ = try walkCandidates(chosen, after: nil, descending: false, gathering: gathering, tx) { record in
            try consider(record)
            return true
        }
        page.rows = kept.prefix(limit).map { RecordRow(key: $0.key, value: $0.value) }
        if kept.count > limit {
            page.next = PageCursor(key: kept[limit - 1].key, sortValues: kept[limit - 1].values)
        }
        return page
    }
}

extension CBORValue {
    /// The kind of value as stored: `integer`, `float`, `text`, `bool`, `null`, `bytes`, `array`, `map`,
    /// and for tagged values the kind they stand for (`date`, `uuid`, `url`, `decimal`) or `tag N`.
    package var storedKind: String {
        switch self {
        case .unsigned, .negative: "integer"
        case .float: "float"
        case .text: "text"
        case .bool: "bool"
        case .null, .simple: "null"
        case .bytes: "bytes"
        case .array: "array"
        case .map: "map"
        case .tagged(let tag, _):
            switch tag {
            case 1, 40001: "date"
            case 37: "uuid"
            case 32: "url"
            case 4: "decimal"
            default: "tag \(tag)"
            }
        }
    }
}
