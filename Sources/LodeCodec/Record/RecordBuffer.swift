import Foundation

/// Memory a ``RecordWriter`` writes records into, kept for record after record: a writer
/// borrows it, grows it when a record needs more room, and leaves it for the next one.
///
/// A buffer is used by one writer at a time (a write transaction keeps one).
public final class RecordBuffer {
    // Unchecked: one writer at a time (a dynamic exclusivity check per record otherwise).
    @usableFromInline @exclusivity(unchecked) var base: UnsafeMutableRawPointer
    @usableFromInline @exclusivity(unchecked) var capacity: Int

    /// A buffer of `capacity` bytes to begin with.
    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// The first `count` bytes written into the buffer (valid until its next use).
    package func bytes(count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }

    /// Makes room for at least `needed` bytes, keeping the first `count`.
    @usableFromInline
    func grow(keeping count: Int, toAtLeast needed: Int) {
        var capacity = self.capacity
        while capacity < needed { capacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        self.capacity = capacity
    }
}
