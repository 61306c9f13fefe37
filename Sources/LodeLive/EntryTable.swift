/// A live query's entry for each primary key, kept compactly: the entries back to back in one byte
/// arena (each behind a 4-byte length) and an open-addressing hash table of arena offsets, hashed
/// by the primary key that ends every entry (see `LiveRow`).
///
/// A dictionary from key arrays to entry arrays costs two heap arrays per object (a 32-byte header
/// each and an allocation rounded up) plus its table: about 110 bytes for a 22-byte entry, where this
/// costs the entry, its length and 4 to 8 bytes of table.
struct EntryTable: Sequence {
    /// Each entry: its length (4 bytes, little-endian) and its bytes. Replaced and removed entries
    /// stay until the next compaction.
    private var arena: [UInt8] = []
    /// 0: empty; 1: removed; otherwise 2 + the offset of the entry's length in `arena`.
    private var slots: [UInt32] = Array(repeating: 0, count: 16)
    /// Live entries.
    private(set) var count = 0
    /// Slots not empty (live or removed).
    private var occupied = 0
    /// Arena bytes of replaced and removed entries.
    private var garbage = 0

    init() {}

    /// The primary key's bytes hashed as one run (arrays and their slices hash alike).
    private static func hash(_ key: some Collection<UInt8>) -> Int {
        var hasher = Hasher()
        let hashed: Void? = key.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            for byte in key { hasher.combine(byte) }
        }
        return hasher.finalize()
    }

    private func entry(at slot: UInt32) -> ArraySlice<UInt8> {
        let start = Int(slot) - 2
        let length =
            Int(arena[start]) | Int(arena[start + 1]) << 8 | Int(arena[start + 2]) << 16 | Int(
                arena[start + 3]) << 24
        return arena[(start + 4)..<(start + 4 + length)]
    }

    /// The slot index holding `key`, or nil.
    private func find(_ key: some Collection<UInt8>) -> Int? {
        let mask = slots.count - 1
        var index = Self.hash(key) & mask
        while true {
            let slot = slots[index]
            if slot == 0 { return nil }
            if slot != 1 && LiveRow.primaryKey(in: entry(at: slot)).elementsEqual(key) { return index }
            index = (index + 1) & mask
        }
    }

    /// The entry of the object with primary key `key`, or nil.
    subscript(key: some Collection<UInt8>) -> ArraySlice<UInt8>? {
        find(key).map { entry(at: slots[$0]) }
    }

    /// Whether the object with primary key `key` has an entry.
    func contains(_ key: some Collection<UInt8>) -> Bool { find(key) != nil }

    /// Sets the entry of the object whose primary key ends `entry`.
    mutating func set(_ entry: [UInt8]) {
        let key = LiveRow.primaryKey(in: entry)
        if let index = find(key) {
            garbage += self.entry(at: slots[index]).count + 4
            slots[index] = append(entry)
        } else {
            if (occupied + 1) * 4 > slots.count * 3 { rehash(capacity: Swift.max(16, (count + 1) * 2)) }
            let mask = slots.count - 1
            var index = Self.hash(key) & mask
            while slots[index] > 1 { index = (index + 1) & mask }
            if slots[index] == 0 { occupied += 1 }
            slots[index] = append(entry)
            count += 1
        }
        compactIfWasteful()
        if internalChecksEnabled { checkInvariants(after: key, present: true) }
    }

    /// Removes the entry of the object with primary key `key`, if any.
    mutating func remove(_ key: some Collection<UInt8>) {
        guard let index = find(key) else { return }
        garbage += entry(at: slots[index]).count + 4
        slots[index] = 1
        count -= 1
        compactIfWasteful()
        if internalChecksEnabled { checkInvariants(after: key, present: false) }
    }

    /// The checks after a mutation of `key`'s entry: all of them up to `internalChecksFullLimit`
    /// entries, then what the mutation touched — the key found (or not) and the table's counts.
    private func checkInvariants(after key: some Collection<UInt8>, present: Bool) {
        if count <= internalChecksFullLimit { return checkInvariants() }
        precondition(
            (find(key) != nil) == present,
            "EntryTable: the entry just \(present ? "set" : "removed") is \(present ? "not " : "")found")
        precondition(
            count <= occupied && occupied * 4 <= slots.count * 3,
            "EntryTable: \(count) live and \(occupied) occupied of \(slots.count) slots")
    }

    /// Checks every invariant of the table (with `LODE_INTERNAL_CHECKS`, after every mutation): a
    /// power-of-two table at most three quarters occupied, `count` and `occupied` as the slots say,
    /// every live entry found from its own key at its own slot (so no key twice and no probe chain
    /// broken), and `garbage` the arena bytes no live slot points at. Stops the program naming the
    /// first one broken.
    func checkInvariants() {
        precondition(
            slots.count >= 16 && slots.count & (slots.count - 1) == 0, "EntryTable: \(slots.count) slots")
        let live = slots.indices.filter { slots[$0] > 1 }
        precondition(live.count == count, "EntryTable: \(live.count) live slots, counted \(count)")
        precondition(slots.filter { $0 != 0 }.count == occupied, "EntryTable: occupied slots miscounted")
        precondition(
            occupied * 4 <= slots.count * 3, "EntryTable: \(occupied) of \(slots.count) slots occupied")
        var liveBytes = 0
        for index in live {
            let entry = self.entry(at: slots[index])
            precondition(
                find(LiveRow.primaryKey(in: entry)) == index,
                "EntryTable: the entry at slot \(index) is not found by its key")
            liveBytes += entry.count + 4
        }
        precondition(
            liveBytes + garbage == arena.count,
            "EntryTable: \(liveBytes) live and \(garbage) garbage bytes in an arena of \(arena.count)")
    }

    private mutating func append(_ entry: some Collection<UInt8>) -> UInt32 {
        let offset = arena.count
        precondition(offset + entry.count + 4 < Int(UInt32.max) - 2, "live query entries exceed 4 GB")
        let length = entry.count
        // The length's four bytes one by one: an array literal here would allocate per entry.
        arena.append(UInt8(length & 0xff))
        arena.append(UInt8(length >> 8 & 0xff))
        arena.append(UInt8(length >> 16 & 0xff))
        arena.append(UInt8(length >> 24 & 0xff))
        arena.append(contentsOf: entry)
        return UInt32(offset + 2)
    }

    /// Iterates over every entry, in no particular order.
    struct Iterator: IteratorProtocol {
        fileprivate let table: EntryTable
        fileprivate var slot = 0

        mutating func next() -> ArraySlice<UInt8>? {
            while slot < table.slots.count {
                let value = table.slots[slot]
                slot += 1
                if value > 1 { return table.entry(at: value) }
            }
            return nil
        }
    }

    /// Every entry, in no particular order.
    func makeIterator() -> Iterator { Iterator(table: self) }

    /// Every entry, copied, in no particular order.
    var entries: [[UInt8]] {
        var all: [[UInt8]] = []
        all.reserveCapacity(count)
        for entry in self { all.append(Array(entry)) }
        return all
    }

    /// Drops the arena's garbage and spare capacity (an arena grown entry by entry may have reserved
    /// up to twice what it holds).
    mutating func shrinkToFit() { rehash(capacity: count) }

    private mutating func compactIfWasteful() {
        if garbage > 4096 && garbage * 2 > arena.count { rehash(capacity: Swift.max(16, count * 2)) }
    }

    /// Rebuilds the table with room for `capacity` live entries at most three quarters full, and
    /// the arena without garbage.
    private mutating func rehash(capacity: Int) {
        var size = 16
        while size * 3 < capacity * 4 { size *= 2 }
        let old = self
        arena = []
        arena.reserveCapacity(old.arena.count - old.garbage)
        slots = Array(repeating: 0, count: size)
        count = 0
        occupied = 0
        garbage = 0
        let mask = size - 1
        for entry in old {
            var index = Self.hash(LiveRow.primaryKey(in: entry)) & mask
            while slots[index] != 0 { index = (index + 1) & mask }
            slots[index] = append(entry)
            count += 1
            occupied += 1
        }
    }
}
