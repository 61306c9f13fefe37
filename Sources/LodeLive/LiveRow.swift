import LodeQuery

/// The layout of one row of a live query, as ``RankedKeys`` keeps it:
/// `[section key] + sort key + primary key + primary key length (2) + section key length (2)`.
/// The parts are self-delimiting, so rows sort by section, then by sort values, then by primary key,
/// and the primary key and section key are found from the row's end.
enum LiveRow {
    /// The row of an object in `section` with encoded sort values `sort` and primary key `key`.
    static func make(section: [UInt8], sort: [UInt8], key: [UInt8]) -> [UInt8] {
        section + sort + key + [UInt8(key.count >> 8), UInt8(key.count & 0xff)]
            + [UInt8(section.count >> 8), UInt8(section.count & 0xff)]
    }

    /// The primary key inside `row`.
    static func primaryKey(in row: [UInt8]) -> ArraySlice<UInt8> { primaryKey(in: row[...]) }

    /// The primary key inside `row`, given as a slice (of a ``RankedKeys`` chunk).
    static func primaryKey(in row: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let end = row.endIndex
        let length = Int(row[end - 4]) << 8 | Int(row[end - 3])
        return row[(end - 4 - length)..<(end - 4)]
    }

    /// The row `row` with its section key replaced by `section` (its sort values and key kept).
    static func replacingSection(of row: [UInt8], with section: [UInt8]) -> [UInt8] {
        let length = Int(row[row.count - 2]) << 8 | Int(row[row.count - 1])
        var made = section
        made.reserveCapacity(row.count - length + section.count)
        made += row[length..<(row.count - 2)]
        made.append(UInt8(section.count >> 8))
        made.append(UInt8(section.count & 0xff))
        return made
    }

    /// The encoded section key at the start of `row` (empty for rows of unsectioned results).
    static func sectionKey(in row: [UInt8]) -> [UInt8] { Array(sectionSlice(in: row)) }

    /// The encoded section key at the start of `row`, in place (no copy: for comparing sections).
    static func sectionSlice(in row: [UInt8]) -> ArraySlice<UInt8> {
        let length = Int(row[row.count - 2]) << 8 | Int(row[row.count - 1])
        return row[0..<length]
    }

    /// Whether rows `a` and `b` (either may be nil) are both there and in the same section.
    static func sameSection(_ a: [UInt8]?, _ b: [UInt8]?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return sectionSlice(in: a).elementsEqual(sectionSlice(in: b))
        default: return false
        }
    }
}

extension RankedKeys: OrderedPrimaryKeys {
    /// The primary key of the row at `position`.
    func primaryKey(at position: Int) -> ArraySlice<UInt8> {
        LiveRow.primaryKey(in: slice(at: position))
    }
}
