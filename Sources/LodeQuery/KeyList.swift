/// Primary keys kept in order by a layer above this one — live results' rows — that a ``KeyList``
/// reads in place instead of copying them.
package protocol OrderedPrimaryKeys: Sendable {
    /// The primary key of the entry at `position`.
    func primaryKey(at position: Int) -> ArraySlice<UInt8>
}

/// A list of byte strings (primary keys): either in one buffer (one allocation for a million keys
/// instead of a million), or a range of ordered entries kept by a layer above (live results' rows,
/// shared copy-on-write so that handing out the current results after a commit copies nothing).
package struct KeyList: Sendable {
    private var storage: [UInt8] = []
    private var ends: [Int] = []
    private var rows: (keys: any OrderedPrimaryKeys, lower: Int, count: Int)?

    package init() {}

    /// The primary keys of `keys`' entries in `range`.
    package static func rows(_ keys: any OrderedPrimaryKeys, _ range: Range<Int>) -> KeyList {
        var list = KeyList()
        list.rows = (keys, range.lowerBound, range.count)
        return list
    }

    package var count: Int { rows?.count ?? ends.count }
    var isEmpty: Bool { count == 0 }

    package subscript(index: Int) -> ArraySlice<UInt8> {
        if let rows { return rows.keys.primaryKey(at: rows.lower + index) }
        return storage[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    package mutating func append(_ key: some Collection<UInt8>) {
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
