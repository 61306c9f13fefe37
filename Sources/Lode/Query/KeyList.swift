/// A list of byte strings (primary keys): either in one buffer (one allocation for a million keys
/// instead of a million), or a range of a live query's ordered rows, shared copy-on-write so that
/// handing out the current results after a commit copies nothing.
struct KeyList: Sendable {
    private var storage: [UInt8] = []
    private var ends: [Int] = []
    private var rows: (keys: RankedKeys, lower: Int, count: Int)?

    init() {}

    /// The primary keys of `keys`' entries in `range` (entries end with their primary key and its length).
    static func rows(_ keys: RankedKeys, _ range: Range<Int>) -> KeyList {
        var list = KeyList()
        list.rows = (keys, range.lowerBound, range.count)
        return list
    }

    var count: Int { rows?.count ?? ends.count }
    var isEmpty: Bool { count == 0 }

    subscript(index: Int) -> ArraySlice<UInt8> {
        if let rows { return entryPrimaryKey(rows.keys.slice(at: rows.lower + index)) }
        return storage[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    mutating func append(_ key: some Collection<UInt8>) {
        precondition(rows == nil, "a list of live rows is read-only")
        storage.append(contentsOf: key)
        ends.append(storage.count)
    }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        precondition(rows == nil, "a list of live rows is read-only")
        storage.append(contentsOf: key)
        ends.append(storage.count)
    }

    /// The keys in the order `permutation` gives.
    func reordered(_ permutation: [Int]) -> KeyList {
        var result = KeyList()
        result.storage.reserveCapacity(rows == nil ? storage.count : permutation.count * 17)
        result.ends.reserveCapacity(permutation.count)
        for index in permutation { result.append(self[index]) }
        return result
    }

    /// The keys from `range`.
    func slice(_ range: Range<Int>) -> KeyList {
        if let rows {
            return .rows(rows.keys, (rows.lower + range.lowerBound)..<(rows.lower + range.upperBound))
        }
        return reordered(Array(range))
    }
}

/// The primary key inside a live-query entry: `... + primary key + length (2) + section length (2)`.
func entryPrimaryKey(_ entry: [UInt8]) -> ArraySlice<UInt8> { entryPrimaryKey(entry[...]) }

/// The primary key inside a live-query entry given as a slice (of a ``RankedKeys`` chunk).
func entryPrimaryKey(_ entry: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let end = entry.endIndex
    let length = Int(entry[end - 4]) << 8 | Int(entry[end - 3])
    return entry[(end - 4 - length)..<(end - 4)]
}
