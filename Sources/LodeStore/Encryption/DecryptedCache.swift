import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Opened values of an encrypted store kept in memory, so that reading a value again copies its
/// plaintext instead of decrypting it (what SQLCipher's page cache and Realm's decrypted pages do):
/// a warm scan skips the decryption of each value (docs/BENCHMARKS.md has what it saves). Bounded
/// by a byte budget (the configuration's `decryptedCacheSize`); the plaintext is zeroed when an
/// entry is replaced or evicted and when the store's last handle goes.
///
/// An entry is found by the sealed value's tag (random for every seal) and used only when the sealed
/// bytes and the associated data (database and stored key) are the same, byte for byte: a value
/// damaged, replaced or moved since it was opened misses, and is opened (and checked) again.
///
/// Sixteen shards, each a table of four-way buckets under a lock of its own: readers on several
/// threads rarely meet. A new entry takes a free way of its bucket, or one not read since the clock
/// hand last passed; over budget, the hand frees entries not read since it last passed.
final class DecryptedCache: Sendable {
    /// An entry's header; the sealed bytes, the associated data and the plaintext follow it.
    private struct Header {
        var sealedCount: Int32
        var contextCount: Int32
        var plainCount: Int32
        var referenced: Bool
    }

    private struct Shard: ~Copyable {
        /// Four slots (a bucket) fill one 64-byte cache line: a lookup compares the tags there and
        /// touches only the entry that matches.
        let slots: UnsafeMutablePointer<CacheSlot>
        let slotCount: Int
        var bytes = 0
        var hand = 0

        init(slotCount: Int) {
            self.slotCount = slotCount
            slots = UnsafeMutableRawPointer.allocate(
                byteCount: slotCount * MemoryLayout<CacheSlot>.stride, alignment: 64
            ).bindMemory(to: CacheSlot.self, capacity: slotCount)
            slots.initialize(repeating: CacheSlot(tag: 0, entry: nil), count: slotCount)
        }

        deinit {
            for index in 0..<slotCount { if let entry = slots[index].entry { DecryptedCache.discard(entry) } }
            slots.deallocate()
        }
    }

    /// An entry and its tag word (the last eight bytes of the sealed value, compared first).
    private struct CacheSlot {
        var tag: UInt64
        var entry: UnsafeMutableRawPointer?
    }

    /// A shard under its own lock: a pthread mutex (`NSLock`), which ThreadSanitizer understands
    /// (`Synchronization.Mutex` waits on a raw futex on Linux: every access would be reported).
    // Unchecked Sendable: `shard` is only touched inside `withLock`, under `lock` (which also makes
    // the dynamic exclusivity check, a fifth of a cache hit's instructions, redundant).
    private final class LockedShard: @unchecked Sendable {
        private let lock = NSLock()
        @exclusivity(unchecked) private var shard: Shard

        init(slotCount: Int) { shard = Shard(slotCount: slotCount) }

        func withLock<R>(_ body: (inout Shard) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&shard)
        }
    }

    private static let shardCount = 16
    private static let headerSize = (MemoryLayout<Header>.size + 15) & ~15
    /// The bytes an entry costs beyond its own (the allocator's).
    private static let entryOverhead = 16

    private let shards: [LockedShard]
    /// The budget of each shard.
    private let shardBudget: Int

    /// A cache holding up to about `budget` bytes (headers and the allocator's share counted), or
    /// nil for a budget too small to be worth it.
    init?(budget: Int) {
        guard budget >= 64 << 10 else { return nil }
        shardBudget = budget / Self.shardCount
        // A slot per 128 bytes of budget: room for small records without many collisions.
        var slots = 64
        while slots * 128 < shardBudget { slots <<= 1 }
        shards = (0..<Self.shardCount).map { _ in LockedShard(slotCount: slots) }
    }

    /// The bytes the entries take now (each shard stays within its share of the budget).
    var byteCount: Int { shards.reduce(0) { total, locked in total + locked.withLock { $0.bytes } } }

    private static let ways = 4

    /// The shard and bucket of a sealed value (bits of its tag, its last 16 bytes), and its tag word.
    private func place(_ sealed: UnsafeRawBufferPointer) -> (shard: Int, bucket: Int, tag: UInt64) {
        let word = sealed.loadUnaligned(fromByteOffset: sealed.count - 8, as: UInt64.self)
        return (Int(word & 15), Int(truncatingIfNeeded: word >> 4) & ~(Self.ways - 1), word)
    }

    /// Copies the plaintext of `sealed`, opened before with `context`, to `out` and returns its
    /// length; nil when it is not here (or does not fit `out`).
    func copy(
        _ sealed: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int? {
        guard sealed.count >= 16 else { return nil }
        let (shard, bucket, tag) = place(sealed)
        return shards[shard].withLock { shard -> Int? in
            let first = bucket & (shard.slotCount - 1)
            for slot in first..<first + Self.ways {
                guard shard.slots[slot].tag == tag, let entry = shard.slots[slot].entry else { continue }
                let header = entry.assumingMemoryBound(to: Header.self)
                guard Int(header.pointee.sealedCount) == sealed.count,
                    Int(header.pointee.contextCount) == context.count,
                    Int(header.pointee.plainCount) <= out.count
                else { continue }
                let body = entry + Self.headerSize
                guard memcmp(body, sealed.baseAddress!, sealed.count) == 0,
                    context.count == 0
                        || memcmp(body + sealed.count, context.baseAddress!, context.count) == 0
                else { continue }
                let plainCount = Int(header.pointee.plainCount)
                if plainCount > 0 {
                    out.baseAddress!.copyMemory(
                        from: body + sealed.count + context.count, byteCount: plainCount)
                }
                header.pointee.referenced = true
                return plainCount
            }
            return nil
        }
    }

    /// Keeps `plain`, the opened form of `sealed` under `context`.
    func keep(
        _ sealed: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer, plain: UnsafeRawBufferPointer
    ) {
        guard sealed.count >= 16 else { return }
        let size = Self.headerSize + sealed.count + context.count + plain.count
        // A value that would take a large share of a shard is read too rarely to be worth it.
        guard size + Self.entryOverhead <= shardBudget / 16 else { return }
        guard let entry = malloc(size) else { return }
        let (shard, bucket, tag) = place(sealed)
        entry.initializeMemory(
            as: Header.self,
            repeating: Header(
                sealedCount: Int32(sealed.count), contextCount: Int32(context.count),
                plainCount: Int32(plain.count), referenced: false), count: 1)
        let body = entry + Self.headerSize
        body.copyMemory(from: sealed.baseAddress!, byteCount: sealed.count)
        if context.count > 0 {
            (body + sealed.count).copyMemory(from: context.baseAddress!, byteCount: context.count)
        }
        if plain.count > 0 {
            (body + sealed.count + context.count).copyMemory(from: plain.baseAddress!, byteCount: plain.count)
        }
        // Entries taken out are freed after the lock is let go.
        var freed: [UnsafeMutableRawPointer] = []
        shards[shard].withLock { shard in
            // A free way, else one not read since the hand passed, else the bucket's first.
            let first = bucket & (shard.slotCount - 1)
            var index = first
            for slot in first..<first + Self.ways {
                guard let candidate = shard.slots[slot].entry else {
                    index = slot
                    break
                }
                if !candidate.assumingMemoryBound(to: Header.self).pointee.referenced { index = slot }
            }
            if let old = shard.slots[index].entry {
                shard.bytes -= Self.cost(old)
                freed.append(old)
            }
            shard.slots[index] = CacheSlot(tag: tag, entry: entry)
            shard.bytes += size + Self.entryOverhead
            // The clock: an entry read since the hand last passed gets another round.
            var steps = 0
            while shard.bytes > shardBudget && steps < 2 * shard.slotCount {
                let position = shard.hand
                shard.hand = (shard.hand + 1) & (shard.slotCount - 1)
                steps += 1
                guard position != index, let candidate = shard.slots[position].entry else { continue }
                let header = candidate.assumingMemoryBound(to: Header.self)
                if header.pointee.referenced {
                    header.pointee.referenced = false
                    continue
                }
                shard.bytes -= Self.cost(candidate)
                shard.slots[position] = CacheSlot(tag: 0, entry: nil)
                freed.append(candidate)
            }
        }
        for entry in freed { Self.discard(entry) }
    }

    /// The bytes `entry` counts for.
    private static func cost(_ entry: UnsafeMutableRawPointer) -> Int {
        let header = entry.assumingMemoryBound(to: Header.self).pointee
        return headerSize + Int(header.sealedCount) + Int(header.contextCount) + Int(header.plainCount)
            + entryOverhead
    }

    /// Zeroes `entry` (it holds plaintext) and frees it.
    private static func discard(_ entry: UnsafeMutableRawPointer) {
        let header = entry.assumingMemoryBound(to: Header.self).pointee
        let plainStart = headerSize + Int(header.sealedCount) + Int(header.contextCount)
        memset(entry + plainStart, 0, Int(header.plainCount))
        free(entry)
    }
}
