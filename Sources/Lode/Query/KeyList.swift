/// A list of byte strings (primary keys) in one buffer: one allocation for a million keys instead
/// of a million.
struct KeyList: Sendable {
    private(set) var storage: [UInt8] = []
    private(set) var ends: [Int] = []

    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }

    subscript(index: Int) -> ArraySlice<UInt8> {
        storage[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    mutating func append(_ key: some Collection<UInt8>) {
        storage.append(contentsOf: key)
        ends.append(storage.count)
    }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        storage.append(contentsOf: key)
        ends.append(storage.count)
    }

    /// The keys in the order `permutation` gives.
    func reordered(_ permutation: [Int]) -> KeyList {
        var result = KeyList()
        result.storage.reserveCapacity(storage.count)
        result.ends.reserveCapacity(ends.count)
        for index in permutation { result.append(self[index]) }
        return result
    }

    /// The keys from `range`.
    func slice(_ range: Range<Int>) -> KeyList {
        reordered(Array(range))
    }
}
