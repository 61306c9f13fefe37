import Foundation
import Lode
import LodeCodec
import LodeInspection
import StoredQuery

/// A JSON object made of `pairs`, in order (as a CBOR map, written with `json`).
func jsonObject(_ pairs: KeyValuePairs<String, CBORValue>) -> CBORValue {
    .map(pairs.map { CBORValue.MapEntry(key: .text($0.key), value: $0.value) })
}

extension CBORValue {
    /// A count or version as a JSON number.
    static func count(_ value: Int) -> CBORValue {
        value < 0 ? .negative(UInt64(-1 - value)) : .unsigned(UInt64(value))
    }

    /// A JSON array of text.
    static func texts(_ values: [String]) -> CBORValue { .array(values.map(CBORValue.text)) }

    /// `value`, or null.
    static func optional(_ value: CBORValue?) -> CBORValue { value ?? .null }
}

/// A primary key in URLs: its key-encoded bytes as lowercase hexadecimal (and `lode-dump`'s key
/// files in hexadecimal).
package enum KeyText {
    /// `bytes` as lowercase hexadecimal digits.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil when it is not an even number of hexadecimal digits (at most
    /// 2,048 of them: longer is no key a store holds).
    package static func bytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 2048 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A request the studio refuses with a status of its own (400 for a malformed argument, 404 for
/// something the store does not hold).
struct StudioRefusal: Error, CustomStringConvertible {
    var status: Int
    var description: String
}

/// The JSON behind the studio's pages, read from one snapshot of the store each.
enum StudioAPI {
    /// The most records a table page shows.
    static let largestPage = 500

    /// The `limit` argument: from 1 to ``largestPage``, 50 when absent.
    private static func pageSize(_ query: [String: String]) throws -> Int {
        guard let text = query["limit"] else { return 50 }
        guard let value = Int(text), (1...largestPage).contains(value) else {
            throw StudioRefusal(
                status: 400,
                description: "limit takes a count from 1 to \(largestPage), got \(text.prefix(40))")
        }
        return value
    }

    /// `/api/records?type=T&where=…&sort=…&after=CURSOR&limit=N`: one page of a type's records, with
    /// the plan that found them; with `match=QUERY` (and `index=NAME`), the matches of a full-text
    /// search instead, best first (see ``search(_:type:query:)``).
    static func records(_ store: Store, query: [String: String]) throws -> CBORValue {
        guard let type = query["type"], !type.isEmpty else {
            throw StudioRefusal(status: 400, description: "records: name the type (?type=NAME)")
        }
        if let match = query["match"], !match.trimmingCharacters(in: .whitespaces).isEmpty {
            return try search(store, type: type, query: query)
        }
        let request: RecordQuery
        do {
            request = try RecordQuery(type: type, filter: query["where"], sort: query["sort"])
        } catch {
            throw StudioRefusal(status: 400, description: error.description)
        }
        let limit = try pageSize(query)
        let cursor: PageCursor?
        do {
            cursor = try query["after"].flatMap { $0.isEmpty ? nil : try PageCursor(token: $0) }
        } catch {
            throw StudioRefusal(status: 400, description: "\(error)")
        }
        return try store.read { tx in
            let storedType = try storedType(type, in: tx)
            let page: RecordPage
            do {
                page = try request.page(after: cursor, limit: limit, in: tx)
            } catch let error as QueryError {
                throw StudioRefusal(status: 400, description: error.description)
            }
            // The primary key, the catalog's other fields, then any other field the page's records
            // hold (written by another version of the app).
            var fields = [storedType.primaryKey] + storedType.fields.filter { $0 != storedType.primaryKey }
            var known = Set(fields)
            for row in page.rows {
                guard case .map(let entries) = row.value else { continue }
                for case .text(let name) in entries.map(\.key) where known.insert(name).inserted {
                    fields.append(name)
                }
            }
            return jsonObject([
                "type": .text(type), "primaryKey": .text(storedType.primaryKey), "fields": .texts(fields),
                "objectCount": .count(storedType.objectCount), "version": .count(tx.version),
                "plan": .text(page.plan), "examined": .count(page.examined),
                "stoppedEarly": .bool(page.stoppedEarly),
                "next": .optional(page.next.map { .text($0.token) }),
                "rows": .array(page.rows.map { row($0, links: storedType.links) }),
            ])
        }
    }

    /// A page of the matches of a full-text search (`match`, in ``TextQuery``'s syntax) of `type`'s
    /// index (`index`, or its only one), best first — or in `sort`'s order — kept by `where`; `after`
    /// is the position of the page's first match.
    static func search(_ store: Store, type: String, query: [String: String]) throws -> CBORValue {
        let text = query["match"] ?? ""
        let search: TextQuery
        do {
            search = try TextQuery(text)
        } catch {
            throw StudioRefusal(status: 400, description: "match: \(error)")
        }
        let request: RecordQuery
        do {
            request = try RecordQuery(type: type, filter: query["where"], sort: query["sort"])
        } catch {
            throw StudioRefusal(status: 400, description: error.description)
        }
        let limit = try pageSize(query)
        let start: Int
        if let after = query["after"], !after.isEmpty {
            guard let offset = Int(after), offset >= 0 else {
                throw StudioRefusal(
                    status: 400,
                    description: "after: a search's page starts at a position, not \(after.prefix(40))")
            }
            start = offset
        } else {
            start = 0
        }
        return try store.read { tx in
            let storedType = try storedType(type, in: tx)
            let matches: [TextMatch]
            do {
                matches = try tx.search(
                    search, in: type, index: query["index"].flatMap { $0.isEmpty ? nil : $0 })
            } catch let error as LodeError {
                switch error {
                case .textIndexUnavailable, .invalidTextQuery:
                    throw StudioRefusal(status: 400, description: "\(error)")
                default: throw error
                }
            }
            var rows: [RecordRow] = []
            for match in matches {
                let value = try match.record.value(type: type)
                if let filter = request.filter, !filter.matches(value) { continue }
                rows.append(RecordRow(key: match.record.key, value: value))
            }
            if !request.sort.isEmpty {
                rows = rows.enumerated().sorted { lhs, rhs in
                    for key in request.sort {
                        let order = compare(
                            lhs.element.value.value(atPath: key.field),
                            rhs.element.value.value(atPath: key.field))
                        if order != 0 { return key.ascending ? order < 0 : order > 0 }
                    }
                    return lhs.offset < rhs.offset
                }.map(\.element)
            }
            let page = Array(rows.dropFirst(start).prefix(limit))
            var fields = [storedType.primaryKey] + storedType.fields.filter { $0 != storedType.primaryKey }
            var known = Set(fields)
            for row in page {
                guard case .map(let entries) = row.value else { continue }
                for case .text(let name) in entries.map(\.key) where known.insert(name).inserted {
                    fields.append(name)
                }
            }
            let order = request.sort.isEmpty ? "ranked by relevance (BM25)" : "sorted by the fields"
            return jsonObject([
                "type": .text(type), "primaryKey": .text(storedType.primaryKey), "fields": .texts(fields),
                "objectCount": .count(storedType.objectCount), "version": .count(tx.version),
                "plan": .text("full-text search: \(matches.count) matches, \(rows.count) kept; \(order)"),
                "examined": .count(matches.count), "stoppedEarly": .bool(false),
                "next": .optional(start + limit < rows.count ? .text(String(start + limit)) : nil),
                "rows": .array(page.map { row($0, links: storedType.links) }),
            ])
        }
    }

    /// One record as the pages show it: its key (hex and readable), each field's stored kind, its value,
    /// and the objects its `links` point at (by link field: the target type and each target's key).
    static func row(_ row: RecordRow, links: [StoredLink]) -> CBORValue {
        var kinds: [CBORValue.MapEntry] = []
        if case .map(let entries) = row.value {
            kinds = entries.map { .init(key: $0.key, value: .text($0.value.storedKind)) }
        }
        var linked: [CBORValue.MapEntry] = []
        for link in links {
            guard let found = row.value.value(atPath: link.field), found != .null else { continue }
            var items = [found]
            if link.isToMany, case .array(let all) = found { items = all }
            var targets: [CBORValue] = []
            for item in items where item != .null {
                // A value that is no key points nowhere: `check` names it; the page shows it unlinked.
                guard let key = try? KeyEncoder().encode(item) else { continue }
                targets.append(
                    jsonObject(["key": .text(KeyText.hex(key)), "label": .text(KeyDescription.describe(key))])
                )
            }
            linked.append(
                .init(
                    key: .text(link.field),
                    value: jsonObject(["type": .text(link.targetTypeName), "targets": .array(targets)])))
        }
        return jsonObject([
            "key": .text(KeyText.hex(row.key)), "label": .text(KeyDescription.describe(row.key)),
            "kinds": .map(kinds), "links": .map(linked), "value": row.value,
        ])
    }

    /// `/api/object?type=T&key=HEX`: one object, whole.
    static func object(_ store: Store, query: [String: String]) throws -> CBORValue {
        guard let type = query["type"], !type.isEmpty, let text = query["key"] else {
            throw StudioRefusal(
                status: 400, description: "object: name the type and the key (?type=NAME&key=HEX)")
        }
        guard let key = KeyText.bytes(text) else {
            throw StudioRefusal(
                status: 400, description: "object: the key \"\(text.prefix(40))\" is not hexadecimal")
        }
        return try store.read { tx in
            let storedType = try storedType(type, in: tx)
            guard let record = try tx.storedRecord(of: type, key: key) else {
                throw StudioRefusal(
                    status: 404, description: "\(type) has no object with key \(KeyDescription.describe(key))"
                )
            }
            let value = try record.value(type: type)
            return jsonObject([
                "type": .text(type), "primaryKey": .text(storedType.primaryKey),
                "version": .count(tx.version),
                "object": row(RecordRow(key: key, value: value), links: storedType.links),
                "history": try objectHistory(type: type, key: key, in: tx),
            ])
        }
    }

    /// The object's changes the store's history holds, newest first (at most the last
    /// `historyLimit`): each commit's version, time, author and kind, and each field it set with
    /// its value before and after. Null when the store keeps no history.
    static func objectHistory(type: String, key: [UInt8], in tx: Transaction) throws -> CBORValue {
        guard try tx.keepsHistory else { return .null }
        let commits = try tx.history(of: type, key: key).suffix(historyLimit).reversed()
        return .array(
            commits.compactMap { commit in
                guard let change = commit.changes.first else { return nil }
                return jsonObject([
                    "version": .count(commit.version),
                    "time": .float((commit.time.timeIntervalSince1970 * 1000).rounded()),
                    "author": .optional(commit.author.map(CBORValue.text)), "op": .text(change.kind.rawValue),
                    "fields": .array(
                        change.fields.sorted().map { field in
                            jsonObject([
                                "name": .text(field), "before": .optional(change.before[field]),
                                "after": .optional(change.after[field]),
                                "hasBefore": .bool(change.before[field] != nil),
                                "hasAfter": .bool(change.after[field] != nil),
                            ])
                        }),
                ])
            })
    }

    /// The most changes of one object its page shows.
    static let historyLimit = 50

    /// The catalog's entry for `type`, or a 404 naming it.
    private static func storedType(_ type: String, in tx: Transaction) throws -> StoredType {
        do {
            return try tx.storedType(named: type)
        } catch LodeError.typeNotFound {
            throw StudioRefusal(status: 404, description: "the store holds no type named \(type)")
        }
    }

    /// `/api/changes?before=V&limit=N`: the last commits of the change log before version `V` (default:
    /// the newest), newest first.
    static func changes(_ store: Store, query: [String: String]) throws -> CBORValue {
        guard store.hasChangeLog else {
            return jsonObject(["version": .null, "hasChangeLog": .bool(false), "commits": .array([])])
        }
        let limit = try pageSize(query)
        var before: Int?
        if let text = query["before"], !text.isEmpty {
            guard let value = Int(text), value >= 0 else {
                throw StudioRefusal(
                    status: 400, description: "before takes a version, got \(text.prefix(40))")
            }
            before = value
        }
        return try store.read { tx in
            let upper = min(before ?? Int.max, tx.version + 1)
            // A version is a write transaction: the last `limit` commits lie after `upper - limit - 1`.
            let history = try tx.commits(after: max(0, upper - limit - 1))
            let shown = history.commits.filter { $0.version < upper }.suffix(limit).reversed()
            return jsonObject([
                "version": .count(tx.version), "hasChangeLog": .bool(true),
                "firstAvailable": .optional(history.firstAvailable.map(CBORValue.count)),
                "commits": .array(shown.map(commit)),
                "older": .optional(shown.last.map { .count($0.version) }),
            ])
        }
    }

    /// One commit: its version, time (milliseconds since 1970) and changes.
    static func commit(_ commit: Commit) -> CBORValue {
        jsonObject([
            "version": .count(commit.version),
            "time": .float((commit.time.timeIntervalSince1970 * 1000).rounded()),
            "changes": .array(commit.changes.map(change)),
        ])
    }

    /// One change of a commit.
    static func change(_ change: ObjectChange) -> CBORValue {
        var fields: CBORValue = .null
        var count: CBORValue = .null
        switch change.kind {
        case .update(let changed): fields = changed.map(CBORValue.texts) ?? .null
        case .bulk(let objects): count = .count(objects)
        case .insert, .delete, .clear: break
        }
        return jsonObject([
            "op": .text(change.operation), "type": .text(change.type), "key": .text(KeyText.hex(change.key)),
            "label": .text(change.keyDescription), "fields": fields, "count": count,
        ])
    }

    /// `/api/check`: the pages of the file checked first (read by the check itself), then, when they
    /// are sound, every record and index entry; each problem names the page, or the type and object.
    static func check(_ store: Store, path: String) throws -> CBORValue {
        let pages = try Store.checkPages(atPath: path)
        return check(
            pages: pages, records: pages.isClean ? try store.read { tx in try tx.checkIntegrity() } : nil)
    }

    /// The check's JSON: the page report and, when the records were read, their report.
    static func check(pages: PageReport, records report: IntegrityReport?) -> CBORValue {
        var records: CBORValue = .null
        if let report {
            records = jsonObject([
                "problems": .texts(report.problems), "types": .count(report.types),
                "records": .count(report.records), "indexEntries": .count(report.indexEntries),
            ])
        }
        return jsonObject([
            "pages": jsonObject([
                "problems": .texts(pages.problems), "truncated": .bool(pages.truncated),
                "version": .count(pages.version), "pagesInUse": .count(pages.pagesInUse),
                "freePages": .count(pages.freePages), "databases": .count(pages.databases),
                "entries": .count(pages.entries),
            ]),
            "records": records,
        ])
    }
}
